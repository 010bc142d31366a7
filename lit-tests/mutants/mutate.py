#!/usr/bin/env python3
"""A mutant tool for scripts/lit-mutants.sh: runs the real `mlir-opt` or
`mlir-cache-key`, then makes its result wrong in one stated way.

Invoked by a generated shim as

    mutate.py SPEC.json ARG...

where SPEC.json says which tool this is, where the real one lives, the steps
of the mutation, and a log file. Every invocation appends one JSON line to
the log: whether the mutation changed anything (arguments or results), and
any internal error, so the driver can tell a real rejection from a broken
harness or a mutation that did nothing.

Mutation steps (a `// MUTANT:` line in a lit test lists one or more, joined
by `&&`); `stdout`/`stderr` are the real tool's, decoded as Latin-1 so any
byte survives a regular expression:

  identity                  change nothing (the control run)
  digest-constant           every 64-hex-digit run in stdout becomes 0…0
                            (every digest the same: "same output twice")
  digest-fresh              every 64-hex-digit run becomes a fresh random one
                            (every digest different)
  drop-pass NAME            remove pass NAME (and its {options}) from
                            --pass-pipeline
  replace-pass NAME NEW     replace pass NAME (and its {options}) by NEW
  drop-option NAME          remove NAME=… from the {options} of every pass,
                            and the flag --NAME[=…] (with its value) from a
                            mlir-cache-key command line
  add-option NAME=VALUE     set NAME=VALUE on every cache-key-* pass
                            (replacing a value already given)
  add-flag FLAG             append FLAG to a mlir-cache-key command line
                            (before the input path)
  sub REGEX REPL            re.sub on stdout and stderr (all matches)
  sub1 REGEX REPL           re.sub on stdout and stderr (first match only)
  prepend TEXT / append TEXT
                            add a line of TEXT before / after stdout
  exit CODE                 exit with CODE whatever the real tool did
  no-stderr                 drop stderr
"""

import json
import re
import secrets
import subprocess
import sys


def log(spec, record):
    with open(spec["log"], "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def pipeline_passes(text):
    """Splits the inside of builtin.module(...) into top-level pass strings."""
    passes, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "({":
            depth += 1
        elif c in ")}":
            depth -= 1
        elif c == "," and depth == 0:
            passes.append(text[start:i])
            start = i + 1
    passes.append(text[start:])
    return [p for p in passes if p]


def split_pass(p):
    """`name{a=1 b=2}` -> ("name", ["a=1", "b=2"]); options may be absent."""
    m = re.fullmatch(r"([\w.-]+)(?:\{(.*)\})?", p.strip(), re.S)
    if not m:
        return p, None
    opts = m.group(2)
    return m.group(1), (opts.split() if opts is not None else None)


def join_pass(name, opts):
    return name if not opts else name + "{" + " ".join(opts) + "}"


def edit_pipeline(args, edit):
    """Applies `edit(list of (name, opts)) -> list` to every --pass-pipeline."""
    out = []
    for a in args:
        m = re.fullmatch(r"(--?pass-pipeline=)(builtin\.module)\((.*)\)", a, re.S)
        if not m:
            out.append(a)
            continue
        passes = [split_pass(p) for p in pipeline_passes(m.group(3))]
        passes = edit(passes)
        out.append(
            m.group(1) + m.group(2) + "(" + ",".join(join_pass(n, o) for n, o in passes) + ")"
        )
    return out


def edit_args(tool, args, step, params):
    if step == "drop-pass":
        (name,) = params
        return edit_pipeline(args, lambda ps: [(n, o) for n, o in ps if n != name])
    if step == "replace-pass":
        name, new = params
        return edit_pipeline(
            args, lambda ps: [(new, None) if n == name else (n, o) for n, o in ps]
        )
    if step == "drop-option":
        (name,) = params
        if tool == "mlir-opt":
            return edit_pipeline(
                args,
                lambda ps: [
                    (n, [x for x in o if x.split("=", 1)[0] != name] if o is not None else None)
                    for n, o in ps
                ],
            )
        out, skip = [], False
        for a in args:
            if skip:
                skip = False
                continue
            if a == "--" + name:
                # A flag with a separate value (`--kernels keep`) drops it too;
                # a boolean flag (`--keep-locations`) is followed by another
                # flag or the input.
                skip = name in ("kernels", "emit", "output")
                continue
            if a.startswith("--" + name + "="):
                continue
            out.append(a)
        return out
    if step == "add-option":
        (setting,) = params
        key = setting.split("=", 1)[0]

        def add(ps):
            res = []
            for n, o in ps:
                if n.startswith("cache-key-"):
                    o = [x for x in (o or []) if x.split("=", 1)[0] != key] + [setting]
                res.append((n, o))
            return res

        return edit_pipeline(args, add)
    if step == "add-flag":
        (flag,) = params
        return args[:-1] + [flag] + args[-1:] if args else [flag]
    return None


def edit_output(text, step, params):
    if step == "digest-constant":
        return re.sub(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])", "0" * 64, text)
    if step == "digest-fresh":
        return re.sub(
            r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])", lambda _: secrets.token_hex(32), text
        )
    if step == "sub":
        regex, repl = params
        return re.sub(regex, repl, text)
    if step == "sub1":
        regex, repl = params
        return re.sub(regex, repl, text, count=1)
    return None


OUTPUT_STEPS = {"digest-constant", "digest-fresh", "sub", "sub1"}
ARG_STEPS = {"drop-pass", "replace-pass", "drop-option", "add-option", "add-flag"}


def main():
    spec = json.load(open(sys.argv[1], encoding="utf-8"))
    tool, real, steps = spec["tool"], spec["real"], spec["steps"]
    args = sys.argv[2:]
    record = {"tool": tool, "args": args, "changed": False}
    try:
        new_args = list(args)
        for step, *params in steps:
            if step in ARG_STEPS:
                new_args = edit_args(tool, new_args, step, params)
        record["changed"] |= new_args != args
        record["ran"] = new_args
        stdin = sys.stdin.buffer.read() if not sys.stdin.isatty() else b""
        proc = subprocess.run([real] + new_args, input=stdin, capture_output=True)
        out = proc.stdout.decode("latin-1")
        err = proc.stderr.decode("latin-1")
        code = proc.returncode
        before = (out, err, code)
        for step, *params in steps:
            if step in OUTPUT_STEPS:
                out = edit_output(out, step, params)
                err = edit_output(err, step, params)
            elif step == "prepend":
                out = params[0] + "\n" + out
            elif step == "append":
                out = out + params[0] + "\n"
            elif step == "exit":
                code = int(params[0])
            elif step == "no-stderr":
                err = ""
            elif step != "identity" and step not in ARG_STEPS:
                raise ValueError(f"unknown mutation step {step!r}")
        record["changed"] |= (out, err, code) != before
        log(spec, record)
        sys.stdout.buffer.write(out.encode("latin-1"))
        sys.stderr.buffer.write(err.encode("latin-1"))
        sys.exit(code)
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001 - reported to the driver, never hidden
        record["error"] = repr(e)
        log(spec, record)
        sys.stderr.write(f"mutate.py: internal error: {e!r}\n")
        sys.exit(125)


if __name__ == "__main__":
    main()
