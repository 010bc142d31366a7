"""`python -m mlir_cache_key …`: the cache's command line (see `_cli`)."""

from ._cli import main

main()
