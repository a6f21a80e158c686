#!/usr/bin/env bash
# Builds the libFuzzer targets (clang 14 with ASan and UBSan) and runs each for a bounded time
# on its checked-in corpus. Usage: scripts/fuzz.sh [seconds per target, default 20]
# New interesting inputs go to a temporary directory, not into fuzz/corpus; a crash stops the
# script and leaves its input in build/fuzz/ (add it to fuzz/corpus and to a regression test).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target new_plant_decoder_fuzzer bearer_credentials_fuzzer \
    request_path_fuzzer jwt_fuzzer feed_fuzzer
rm -f build/fuzz/crash-* build/fuzz/leak-* build/fuzz/timeout-* build/fuzz/oom-*
for target in new_plant_decoder:new_plant:json bearer_credentials:bearer:bearer \
    request_path:request_path:request_path jwt:jwt:jwt feed:feed:; do
    IFS=: read -r name corpus dict <<<"$target"
    scratch=$(mktemp -d)
    echo "== fuzz: ${name} for ${seconds} s" >&2
    (cd build/fuzz && "./${name}_fuzzer" -max_total_time="$seconds" -max_len=4096 \
        -artifact_prefix=./ ${dict:+-dict="../../fuzz/${dict}.dict"} -print_final_stats=1 \
        "$scratch" "../../fuzz/corpus/${corpus}" 2>&1 |
        grep -E '^Done|ERROR|SUMMARY' || true)
    rm -rf "$scratch"
    shopt -s nullglob
    failing=(build/fuzz/crash-* build/fuzz/leak-* build/fuzz/timeout-* build/fuzz/oom-*)
    shopt -u nullglob
    if ((${#failing[@]} > 0)); then
        echo "fuzz: ${name} found a failing input: ${failing[*]}" >&2
        exit 1
    fi
done
