"""The command line without MLIR (`python -m mlir_cache_key`, and a source install's
`mlir-cache-key`): the cache's commands, `why` of stored keys, help, completions, the man page
and direct-mode hits, with the full binary's output; a command that reads a module names the
full build and exits 64. The wheel installs the same as a native `mlir-cache-key`."""

import sys


def main(argv=None):
    from . import _native

    args = sys.argv[1:] if argv is None else list(argv)
    sys.stdout.flush()
    sys.exit(_native.cli(args))
