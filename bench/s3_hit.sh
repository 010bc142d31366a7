#!/usr/bin/env bash
# A remote hit of a 16 MiB artefact from Garage against a plain S3 GET of the same object,
# in the same run, alternating (BENCHMARKS.md, "S3 remote hits"). Two measures:
#
#   bash bench/s3_hit.sh [RUNS]      (default 9; MCK_BENCH_BIN: the CLI, default target/release)
#
# 1. In one process, with the same client (`cargo bench -p mck-remote --bench remote_hit` with
#    MCK_BENCH_S3_URL): opendal's plain GET against `Tiered::get` (read in parts, verified as
#    they arrive) to the artefact in hand, and with its back-fill settled.
# 2. Whole commands: `cache get KEY OUT` from an empty cache directory with --remote=s3://…
#    (fetch, verify, copy into the local cache, write OUT) against curl's own SigV4 GET writing
#    the object to a file, each one process, and `mlir-cache-key --version` (what starting the
#    binary costs: it loads LLVM and MLIR) in the same rounds.
# Uses the cluster of MCK_TEST_S3_* when set, else starts a private one (scripts/garage.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-9}
bin=${MCK_BENCH_BIN:-target/release/mlir-cache-key}
[ -x "$bin" ] || { echo "s3_hit: no $bin (cargo build --release, or set MCK_BENCH_BIN)" >&2; exit 1; }
work=$(mktemp -d)
cluster=
cleanup() {
  if [ -n "$cluster" ]; then bash scripts/garage.sh stop "$cluster" >/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
if [ -z "${MCK_TEST_S3_ENDPOINT:-}" ]; then
  cluster=$work/garage
  bash scripts/garage.sh start "$cluster" >/dev/null
  set -a; . "$cluster/env"; set +a
fi
export AWS_ENDPOINT_URL=$MCK_TEST_S3_ENDPOINT AWS_REGION=$MCK_TEST_S3_REGION
export AWS_ACCESS_KEY_ID=$MCK_TEST_S3_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY=$MCK_TEST_S3_SECRET_ACCESS_KEY
prefix=bench-$$
remote=s3://$MCK_TEST_S3_BUCKET/$prefix
MCK_BENCH_S3_URL=$remote-lib REMOTE_HIT_ROUNDS=$runs cargo bench -q -p mck-remote --bench remote_hit
key=bench-$(printf '%064d' 0 | tr 0 a)
head -c $((16 << 20)) /dev/urandom >"$work/artefact"
"$bin" cache put --cache-dir "$work/writer" --remote "$remote" "$key" "$work/artefact" >/dev/null
object=$(curl -sS --aws-sigv4 "aws:amz:$AWS_REGION:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
  -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
  "$AWS_ENDPOINT_URL/$MCK_TEST_S3_BUCKET?list-type=2&prefix=$prefix%2Fentries-v1%2F" \
  | sed -n 's/.*<Key>\([^<]*\)<\/Key>.*/\1/p')
[ -n "$object" ] || { echo "s3_hit: the put stored no object under $prefix" >&2; exit 1; }

now() { date +%s.%N; }
hit=() get=() start=()
for i in $(seq "$runs"); do
  t=$(now)
  "$bin" --version >/dev/null
  start+=("$(echo "$(now) - $t" | bc)")
  t=$(now)
  "$bin" cache get --cache-dir "$work/reader$i" --remote "$remote" "$key" -o "$work/out$i" >/dev/null
  hit+=("$(echo "$(now) - $t" | bc)")
  cmp -s "$work/out$i" "$work/artefact" || { echo "s3_hit: the hit gave other bytes" >&2; exit 1; }
  rm -rf "$work/reader$i" "$work/out$i"
  t=$(now)
  curl -sS --fail -o "$work/plain" --aws-sigv4 "aws:amz:$AWS_REGION:s3" \
    --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
    "$AWS_ENDPOINT_URL/$MCK_TEST_S3_BUCKET/$object"
  get+=("$(echo "$(now) - $t" | bc)")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
h=$(median "${hit[@]}") g=$(median "${get[@]}") v=$(median "${start[@]}")
ms() { echo "$1 * 1000" | bc; }
printf '\ncommands, %s runs, 16 MiB: cache get --remote median %.1f ms, curl GET median %.1f ms (%.2fx);\n' \
  "$runs" "$(ms "$h")" "$(ms "$g")" "$(echo "$h / $g" | bc -l)"
printf 'mlir-cache-key --version median %.1f ms; cache get less that: %.1f ms (%.2fx the GET)\n' \
  "$(ms "$v")" "$(ms "$(echo "$h - $v" | bc)")" "$(echo "($h - $v) / $g" | bc -l)"
