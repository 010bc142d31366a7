# lit configuration for mlir-cache-key: FileCheck tests over the mlir-opt pass
# plugin and the CLI, on the JAX corpus in tests/data.
import os

import lit.formats

config.name = "mlir-cache-key"
config.test_format = lit.formats.ShTest()
config.suffixes = [".mlir"]
config.excludes = ["Inputs"]

repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = os.path.join(repo, "target", "lit")

# The build under test: target/debug unless MCK_BUILD_DIR says otherwise.
build = os.environ.get("MCK_BUILD_DIR", os.path.join(repo, "target", "debug"))
llvm_bin = os.environ.get("LLVM_BIN", "/usr/lib/llvm-22/bin")

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
