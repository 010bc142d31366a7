"""`python -m mlir_cache_key …`: the command line without MLIR (see `_cli`)."""

from ._cli import main

main()
