#!/usr/bin/env python3
"""Proof that every lit test rejects wrong output (driven by scripts/lit-mutants.sh).

Each test under lit-tests/ names, in `// MUTANT: TOOL STEP [ARGS] [&& STEP…]`
lines, wrong outputs it must reject: TOOL (`mlir-opt` or `mlir-cache-key`)
is replaced by lit-tests/mutants/mutate.py, which runs the real tool and then
makes its result wrong in the stated way (see the steps in mutate.py). For
each mutant this runs lit on that one test, with the mutant tool in place of
the real one, and requires that

  * the test FAILS,
  * the mutant really changed something in at least one invocation
    (otherwise the failure would not be about the mutation), and
  * the mutant tool hit no internal error.

Before that, a control run puts identity wrappers around both tools and
requires every test to PASS through them (so the harness itself cannot make
a test fail). A test without any MUTANT line is an error.

Usage: run.py --build DIR --llvm-bin DIR [--jobs N] [--keep] [TEST…]
"""

import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
LIT_ROOT = os.path.dirname(HERE)
TOOLS = ("mlir-opt", "mlir-cache-key")
MUTANT_LINE = re.compile(r"^\s*//\s*MUTANT:\s*(\S+)\s+(.*?)\s*$")


def find_tests(root):
    tests = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in ("Inputs", "mutants"))
        for f in sorted(filenames):
            if f.endswith(".mlir"):
                tests.append(os.path.relpath(os.path.join(dirpath, f), root))
    return sorted(tests)


def parse_mutants(path):
    mutants = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = MUTANT_LINE.match(line)
            if not m:
                continue
            tool, rest = m.group(1), m.group(2)
            if tool not in TOOLS:
                raise SystemExit(f"{path}:{n}: MUTANT tool must be one of {TOOLS}, not {tool!r}")
            steps = []
            for part in rest.split(" && "):
                words = shlex.split(part)
                if not words:
                    raise SystemExit(f"{path}:{n}: empty mutation step")
                steps.append(words)
            mutants.append({"line": n, "tool": tool, "steps": steps, "text": f"{tool} {rest}"})
    return mutants


def make_tools(workdir, build, llvm_bin, tool, steps):
    """A build dir and an LLVM bin dir in which `tool` is the mutant (the other
    tool is an identity wrapper, so every invocation is logged)."""
    bindir = os.path.join(workdir, "llvm-bin")
    builddir = os.path.join(workdir, "build")
    os.makedirs(bindir)
    os.makedirs(builddir)
    for name in os.listdir(llvm_bin):
        if name != "mlir-opt":
            os.symlink(os.path.join(llvm_bin, name), os.path.join(bindir, name))
    for name in os.listdir(build):
        if name.endswith(".so"):
            os.symlink(os.path.join(build, name), os.path.join(builddir, name))
    log = os.path.join(workdir, "log.jsonl")
    open(log, "w").close()
    reals = {
        "mlir-opt": (os.path.join(llvm_bin, "mlir-opt"), bindir),
        "mlir-cache-key": (os.path.join(build, "mlir-cache-key"), builddir),
    }
    for name, (real, where) in reals.items():
        spec = {
            "tool": name,
            "real": real,
            "steps": steps if name == tool else [["identity"]],
            "log": log,
        }
        spec_path = os.path.join(workdir, name + ".spec.json")
        with open(spec_path, "w", encoding="utf-8") as f:
            json.dump(spec, f)
        shim = os.path.join(where, name)
        with open(shim, "w", encoding="utf-8") as f:
            f.write(
                "#!/bin/sh\nexec python3 %s %s \"$@\"\n"
                % (shlex.quote(os.path.join(HERE, "mutate.py")), shlex.quote(spec_path))
            )
        os.chmod(shim, 0o755)
    return builddir, bindir, log


def run_lit(lit, workdir, builddir, bindir, tests):
    cmd = [
        lit,
        "-v",
        "--show-pass",
        "-j1" if len(tests) == 1 else "-j2",
        "-D", "mck_build_dir=" + builddir,
        "-D", "llvm_bin=" + bindir,
        "-D", "mck_exec_root=" + os.path.join(workdir, "exec"),
    ] + [os.path.join(LIT_ROOT, t) for t in tests]
    env = dict(os.environ)
    for knob in ("MCK_BUILD_DIR", "LLVM_BIN", "LIT_OPTS", "LIT_FILTER", "LIT_FILTER_OUT",
                 "LIT_XFAIL", "LIT_XFAIL_NOT"):
        env.pop(knob, None)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    results = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"^(PASS|FAIL|XFAIL|XPASS|UNRESOLVED|UNSUPPORTED): mlir-cache-key :: (\S+)", line)
        if m:
            results[m.group(2)] = m.group(1)
    return proc, results


def read_log(log):
    with open(log, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def reason(output):
    """Why the test failed: the first FileCheck error, or else the command
    that failed (`not diff` on equal files, `not` on a zero exit, …)."""
    lines = [l.strip().lstrip("#| ").strip() for l in output.splitlines()]
    for line in lines:
        if re.search(r":\d+:\d+: error: ", line):
            return re.sub(r"^.*?/lit-tests/", "", line)[:200]
    command = None
    for line in lines:
        if line.startswith("executed command: "):
            command = line[len("executed command: "):]
        elif line.startswith("error: command failed") and command:
            command = re.sub(r"/\S*/", "", command)
            return f"{command[:140]} -> {line[len('error: '):]}"
    return "(no reason found in the lit output)"


def snapshot(build, work):
    """Hard links (or copies) of the build's artefacts, so that a rebuild
    during the run cannot change the tools under test half-way."""
    snap = os.path.join(work, "snapshot")
    os.makedirs(snap)
    for name in ("mlir-cache-key", "mlir-cache-key-mlir", "libmlir_cache_key.so"):
        src, dst = os.path.join(build, name), os.path.join(snap, name)
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)
    return snap


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--llvm-bin", required=True)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("tests", nargs="*")
    args = ap.parse_args()

    build = os.path.abspath(args.build)
    llvm_bin = os.path.abspath(args.llvm_bin)
    lit = os.path.join(llvm_bin, "lit")
    for need in (os.path.join(build, "mlir-cache-key"), os.path.join(build, "libmlir_cache_key.so"),
                 os.path.join(llvm_bin, "mlir-opt"), lit):
        if not os.path.exists(need):
            raise SystemExit(f"lit-mutants: {need} is missing (build first)")

    tests = args.tests or find_tests(LIT_ROOT)
    mutants = {t: parse_mutants(os.path.join(LIT_ROOT, t)) for t in tests}
    problems = [f"{t}: no MUTANT line (no proof it rejects wrong output)"
                for t, ms in mutants.items() if not ms]

    work = tempfile.mkdtemp(prefix="lit-mutants.")
    try:
        build = snapshot(build, work)
        # Control: identity wrappers around both tools; every test passes.
        cdir = os.path.join(work, "control")
        os.makedirs(cdir)
        builddir, bindir, log = make_tools(cdir, build, llvm_bin, "mlir-opt", [["identity"]])
        proc, results = run_lit(lit, cdir, builddir, bindir, tests)
        calls = read_log(log)
        errors = [c for c in calls if "error" in c]
        print(f"control: {len(tests)} tests through identity wrappers, {len(calls)} tool calls")
        for t in tests:
            if results.get(t) != "PASS":
                problems.append(f"control: {t} is {results.get(t, 'not run')} through identity wrappers")
        if errors or any(c["changed"] for c in calls):
            problems.append(f"control: the identity wrapper changed or broke something: {errors[:1]}")
        if proc.returncode != 0 and not problems:
            problems.append("control: lit failed:\n" + proc.stdout[-2000:] + proc.stderr[-2000:])

        jobs = []
        for t in tests:
            for i, m in enumerate(mutants[t]):
                jobs.append((t, i, m))

        def run_one(job):
            t, i, m = job
            d = os.path.join(work, re.sub(r"[^\w.-]", "_", t) + f".{i}")
            os.makedirs(d)
            builddir, bindir, log = make_tools(d, build, llvm_bin, m["tool"], m["steps"])
            proc, results = run_lit(lit, d, builddir, bindir, [t])
            calls = read_log(log)
            mine = [c for c in calls if c["tool"] == m["tool"]]
            status = results.get(t, "not run")
            if any("error" in c for c in calls):
                verdict = "BROKEN"
                why = next(c["error"] for c in calls if "error" in c)
            elif not any(c["changed"] for c in mine):
                verdict = "VACUOUS"
                why = f"the mutant changed nothing in {len(mine)} call(s) of {m['tool']}"
            elif status == "FAIL":
                verdict = "REJECTED"
                why = reason(proc.stdout)
            else:
                verdict = "SURVIVED"
                why = f"test {status} on wrong output"
            return t, m, verdict, why

        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            outcomes = list(pool.map(run_one, jobs))

        width = max(len(t) for t in tests)
        for t, m, verdict, why in outcomes:
            print(f"{verdict:8} {t:{width}}  {m['text']}")
            print(f"{'':8} {'':{width}}    -> {why}")
            if verdict != "REJECTED":
                problems.append(f"{t}:{m['line']}: mutant {verdict}: {m['text']} ({why})")
        rejected = sum(1 for o in outcomes if o[2] == "REJECTED")
        print(f"\n{rejected} of {len(outcomes)} mutants rejected, over {len(tests)} tests")
    finally:
        if args.keep:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    if problems:
        print("\nlit-mutants: FAILED", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        sys.exit(1)
    print("lit-mutants: every test rejects every wrong output listed for it")


if __name__ == "__main__":
    main()
