# lit configuration for mlir-cache-key: FileCheck tests over the mlir-opt pass
# plugin and the CLI, on the JAX corpus in tests/data.
import os

import lit.formats

config.name = "mlir-cache-key"
config.test_format = lit.formats.ShTest()
config.suffixes = [".mlir"]
# mutants/: the wrong-output harness of scripts/lit-mutants.sh, not tests.
config.excludes = ["Inputs", "mutants"]

repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
# Parameters (`lit -D name=value`) come first: scripts/lit-mutants.sh points
# the tests at mutant tools with them, whatever the environment says. The
# environment variables are for local runs; scripts/test.sh clears them.
params = lit_config.params
config.test_exec_root = params.get("mck_exec_root", os.path.join(repo, "target", "lit"))

# The build under test: target/debug unless told otherwise.
build = params.get(
    "mck_build_dir", os.environ.get("MCK_BUILD_DIR", os.path.join(repo, "target", "debug"))
)
llvm_bin = params.get("llvm_bin", os.environ.get("LLVM_BIN", "/usr/lib/llvm-22/bin"))

config.environment["PATH"] = os.pathsep.join([llvm_bin, config.environment.get("PATH", "")])
config.environment.pop("MLIR_CACHE_KEY_FLAGS", None)

plugin = os.path.join(build, "libmlir_cache_key.so")
config.substitutions.append(("%plugin", plugin))
config.substitutions.append(("%mck", os.path.join(build, "mlir-cache-key")))
config.substitutions.append(("%data", os.path.join(repo, "tests", "data")))
# mlir-opt with the plugin loaded and unregistered dialects allowed.
config.substitutions.append(
    ("%opt", "mlir-opt --allow-unregistered-dialect --load-pass-plugin=" + plugin)
)
# The value of the cache_key.digest attribute(s) in mlir-opt output, one per
# line (stdin to stdout): digests that must differ are compared with
# `not diff`, never with a CHECK-NOT window.
config.substitutions.append(
    ("%extract-digest", "sed -n 's/.*cache_key[.]digest = \"\\([0-9a-f]*\\)\".*/\\1/p'")
)
# The base64 `body` of a Mosaic custom_call_config in MLIR text (the input's
# JSON has spaces, canonical JSON none), one per line.
config.substitutions.append(
    (
        "%extract-mosaic-body",
        "sed -n 's|.*\\\\22body\\\\22: *\\\\22\\([A-Za-z0-9+/=]*\\)\\\\22.*|\\1|p'",
    )
)
