"""`mlir-cache-key` from the wheel: the cache's command line (`cache`, `runs`, `config`,
`--version`) on the same store, settings and output as the full binary's; a command that
reads MLIR says it needs the full build and exits 64."""

import sys


def main(argv=None):
    from . import _native

    args = sys.argv[1:] if argv is None else list(argv)
    sys.stdout.flush()
    sys.exit(_native.cli(args))
