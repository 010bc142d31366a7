"""Times direct-mode hits against a canonical hit and `cp` (see direct_compare.sh)."""

import gzip
import os
import statistics
import subprocess
import sys
import tempfile
import time

runs, mib, tool = int(sys.argv[1]), int(sys.argv[2]), os.path.abspath(sys.argv[3])
corpus = os.path.abspath("tests/data/corpus")
large = f"{corpus}/large/large_deep_ops_2000.generic.mlir.gz"
small = f"{corpus}/tpu/tpu_pallas_add.a.kernel0.debug_locations.mlirbc"

work = tempfile.mkdtemp(prefix="direct-bench-")
compiler = f"{work}/cc.sh"
with open(compiler, "w") as f:
    # The same artefact for every module: only the lookup differs.
    f.write(f"#!/bin/sh\nhead -c {mib << 20} /dev/urandom > \"$2\"\n")
os.chmod(compiler, 0o755)
cache, out = f"{work}/cache", f"{work}/out.bin"
# The same module uncompressed (34 MB of text): direct mode hashes every raw byte.
plain = f"{work}/large_deep_ops_2000.generic.mlir"
with open(plain, "wb") as f:
    f.write(gzip.decompress(open(large, "rb").read()))


def exec_cmd(module, *extra):
    return [tool, "exec", "--cache-dir", cache, "--module-name", "m", *extra,
            "--input", module, "--output", out, "--", compiler, module, out]


def timed(cmd):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return min(times) * 1e3, statistics.median(times) * 1e3


subprocess.run(exec_cmd(large), check=True)  # miss: compiles, stores, writes the manifest
subprocess.run(exec_cmd(small), check=True)
subprocess.run(exec_cmd(plain), check=True)
artefact = f"{work}/artefact.bin"
subprocess.run(["cp", out, artefact], check=True)
rows = [
    ("direct hit, 2000-block module", timed(exec_cmd(large))),
    ("direct hit, smallest corpus module", timed(exec_cmd(small))),
    ("direct hit, 2000-block module uncompressed (34 MB)", timed(exec_cmd(plain))),
    ("canonical hit (--no-direct), 2000-block", timed(exec_cmd(large, "--no-direct"))),
    ("cp of the artefact", timed(["cp", artefact, out])),
    ("cp + sync of the copy", timed(["sh", "-c", f"cp {artefact} {out} && sync {out}"])),
    ("a process start (`true`)", timed(["true"])),
    ("the MLIR binary's start (`mlir-cache-key --version`)", timed([tool, "--version"])),
]
base = rows[0][1][0]
print(f"| {mib} MiB artefact, best / median of {runs} | best | median | direct 2000-block hit ÷ this (best) |")
print("|---|---|---|---|")
for name, (best, median) in rows:
    print(f"| {name} | {best:.1f} ms | {median:.1f} ms | {base / best:.2f}x |")
best = {name: b for name, (b, _) in rows}
start = best["a process start (`true`)"]
print()
for name, (hit, _) in rows[:3]:
    floor, synced = best["cp of the artefact"] + start, best["cp + sync of the copy"] + start
    print(f"- {name}, best {hit:.1f} ms: ÷ (cp + a process start) {hit / floor:.2f}x, "
          f"÷ (cp + sync + a process start) {hit / synced:.2f}x, "
          f"÷ the smallest module's direct hit {hit / rows[1][1][0]:.2f}x")
subprocess.run(["rm", "-rf", work], check=True)
