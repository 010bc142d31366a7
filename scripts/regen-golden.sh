#!/usr/bin/env bash
# Regenerates tests/data/golden/canonical-digests.txt, the regression pin of
# canonical digests checked by tests/canonical_golden.rs: for every file under
# tests/data/corpus and every pinned option set, `mlir-cache-key canon
# --digest` (or `unreadable` when the CLI cannot parse the file), plus the
# producer string the CLI writes into canonical bytecode.
#
# The producer-string rule: canonical bytes may change only together with the
# producer string (PRODUCER in src/mlir/emit.rs, `mlir-cache-key/N`). This
# script therefore refuses to write a golden file in which a digest already
# pinned changes while the producer stays the same: bump the producer first.
# New corpus files and new option sets need no bump.
#
# Usage: scripts/regen-golden.sh [CLI]
#   Builds the CLI with cargo first, or uses the mlir-cache-key binary CLI.
# This is a developer command; nothing in CI runs it or reads an environment
# variable to rewrite the golden file.
set -euo pipefail
cd "$(dirname "$0")/.."

golden=tests/data/golden/canonical-digests.txt
if [ $# -ge 1 ]; then
  cli=$1
else
  cargo build --locked --bins >&2
  cli=target/debug/mlir-cache-key
fi

# The option sets pinned, as in tests/canonical_golden.rs: name, then flags.
option_sets=(
  "default"
  "keep-locations --keep-locations"
  "kernels-keep --kernels keep"
  "ignore-custom-partitioning --ignore-custom-partitioning"
)

# The producer string: the NUL-terminated string after the magic and the
# one-byte version varint of canonical bytecode.
producer=$("$cli" canon tests/data/corpus/cpu/mlp.a.generic.mlir | head -c 200 | tail -c +6 | tr '\0' '\n' | head -n 1)
[ -n "$producer" ] || { echo "regen-golden: cannot read the producer string" >&2; exit 1; }

new=$(mktemp)
trap 'rm -f "$new" "$new.err"' EXIT
{
  echo "# Canonical digests of every corpus module (tests/data/corpus), per option set."
  echo "#"
  echo "# A REGRESSION PIN, NOT A CORRECTNESS ORACLE: these are the digests this code"
  echo "# produced when the file was written, not digests known to be right. What is right"
  echo "# is checked elsewhere (a/b pairs share a key, JAX's recorded keys, lit tests)."
  echo "# What this file catches: canonical bytes that change (an MLIR or melior upgrade, a"
  echo "# canonicalisation change) while the producer string, which promises stable bytes,"
  echo "# stays the same. tests/canonical_golden.rs fails then; bump PRODUCER in src/mlir/emit.rs"
  echo "# (mlir-cache-key/N -> N+1) and regenerate with scripts/regen-golden.sh."
  echo "#"
  echo "# Lines: producer STRING | OPTION-SET FILE DIGEST-or-unreadable"
  echo "# (unreadable: the CLI cannot parse the file, e.g. pretty StableHLO or MLIR 24 bytecode.)"
  echo "producer $producer"
  for set in "${option_sets[@]}"; do
    read -r name flags <<<"$set"
    while IFS= read -r file; do
      rel=${file#tests/data/corpus/}
      # shellcheck disable=SC2086 # flags are words
      if digest=$("$cli" canon --digest $flags "$file" 2>"$new.err"); then
        echo "$name $rel $digest"
      elif grep -q "cannot parse" "$new.err"; then
        echo "$name $rel unreadable"
      else
        echo "regen-golden: $cli canon --digest $flags $file failed:" >&2
        cat "$new.err" >&2
        exit 1
      fi
    done < <(find tests/data/corpus -type f ! -name '*.md' | LC_ALL=C sort)
  done
} >"$new"

# The producer-string rule, enforced here too.
if [ -f "$golden" ]; then
  old_producer=$(sed -n 's/^producer //p' "$golden")
  changed=$(join <(grep -v '^#' "$golden" | grep -v '^producer ' | awk '{print $1"|"$2, $3}' | LC_ALL=C sort) \
                 <(grep -v '^#' "$new" | grep -v '^producer ' | awk '{print $1"|"$2, $3}' | LC_ALL=C sort) |
            awk '$2 != $3')
  if [ -n "$changed" ] && [ "$old_producer" = "$producer" ]; then
    echo "regen-golden: pinned digests changed but the producer string is still \"$producer\":" >&2
    echo "$changed" | sed 's/^/  /' >&2
    echo "Bump PRODUCER in src/mlir/emit.rs (mlir-cache-key/N -> N+1) before regenerating; nothing written." >&2
    exit 1
  fi
fi
mkdir -p "$(dirname "$golden")"
mv "$new" "$golden"
echo "regen-golden: wrote $golden ($(grep -vc '^#' "$golden") lines, producer $producer)" >&2
