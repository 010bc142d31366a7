"""Direct hits at two sizes, before and after, interleaved, beside a SHA-256 pass over each
input in the same run (see direct_sizes.sh)."""

import gzip
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time

runs = int(sys.argv[1])
tools = {"before": sys.argv[2], "after": sys.argv[3]}
corpus = os.path.abspath("tests/data/corpus")
work = tempfile.mkdtemp(prefix="direct-sizes-")
# A tiny artefact for every module, so only the lookup differs.
compiler = f"{work}/cc.sh"
with open(compiler, "w") as f:
    f.write("#!/bin/sh\nhead -c 1024 /dev/zero > \"$2\"\n")
os.chmod(compiler, 0o755)
modules = {
    "smallest corpus module": f"{corpus}/tpu/tpu_pallas_add.a.kernel0.debug_locations.mlirbc",
    "2000-block module as 34 MB text": f"{work}/large_deep_ops_2000.generic.mlir",
}
with open(modules["2000-block module as 34 MB text"], "wb") as f:
    f.write(gzip.decompress(open(f"{corpus}/large/large_deep_ops_2000.generic.mlir.gz", "rb").read()))
# (label, tool, settings): the new build with and without its inode cache.
# BEFORE given as "-": the new build only.
variants = [("before (SHA-256 blocks)", tools["before"], "")] if sys.argv[2] != "-/mlir-cache-key" else []
variants += [
    ("after, BLAKE3 only (no_inode_cache)", tools["after"], "--no_inode_cache"),
    ("after, BLAKE3 + inode cache", tools["after"], ""),
]


def command(tool, module):
    cache = f"{work}/cache-{os.path.basename(os.path.dirname(tool))}"
    return [tool, "exec", "--cache-dir", cache, "--module-name", "m", "--input", module,
            "--output", f"{work}/out.bin", "--", compiler, module, f"{work}/out.bin"]


def sha256_pass(module):
    """The baseline: one SHA-256 pass over the input (what the old manifest key paid)."""
    start = time.perf_counter()
    with open(module, "rb") as f:
        digest = hashlib.sha256()
        while block := f.read(4 << 20):
            digest.update(block)
    return time.perf_counter() - start


def run(variant, module):
    label, tool, flags = variant
    env = dict(os.environ, MLIR_CACHE_KEY_FLAGS=flags)
    start = time.perf_counter()
    subprocess.run(command(tool, module), check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


for variant in variants:  # misses: compile, store, write the manifests
    for module in modules.values():
        run(variant, module)
time.sleep(2.5)  # the inputs are older than the inode cache's racy window now
for variant in variants:  # fill the inode cache
    for module in modules.values():
        run(variant, module)
times = {(v[0], m): [] for v in variants for m in modules}
sha256_label = "SHA-256 of the input alone (hashlib, 4 MiB blocks; same run)"
times.update({(sha256_label, m): [] for m in modules})
for _ in range(runs):  # interleaved: every variant and size once per round
    for variant in variants:
        for name, module in modules.items():
            times[(variant[0], name)].append(run(variant, module))
    for name, module in modules.items():
        times[(sha256_label, name)].append(sha256_pass(module))
small, large = list(modules)
print(f"| direct hit, 1 KiB artefact, best / median of {runs} interleaved | {small} | {large} | large ÷ small (best) | large ÷ the first row's large |")
print("|---|---|---|---|---|")
before_large = min(times[(variants[0][0], large)])
for label in [v[0] for v in variants] + [sha256_label]:
    s, l = times[(label, small)], times[(label, large)]
    print(f"| {label} | {min(s) * 1e3:.1f} / {statistics.median(s) * 1e3:.1f} ms "
          f"| {min(l) * 1e3:.1f} / {statistics.median(l) * 1e3:.1f} ms "
          f"| {min(l) / min(s):.2f}x | {min(l) / before_large:.2f}x |")
subprocess.run(["rm", "-rf", work], check=True)
