#!/usr/bin/env bash
# Runs each libFuzzer target for a bounded time on its checked-in corpus, two at a time. The
# targets are built by the asan preset (clang 14, ASan and UBSan: the build the tests ran), which
# this builds first (nothing to do when the test command built it already). Usage:
# scripts/fuzz.sh [seconds per target, default 20]
# New interesting inputs go to a temporary directory, not into fuzz/corpus; a crash stops the
# script and leaves its input in build/fuzz/ (add it to fuzz/corpus and to a regression test).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"

cmake --preset asan >/dev/null
cmake --build --preset asan --target new_plant_decoder_fuzzer bearer_credentials_fuzzer \
    request_path_fuzzer jwt_fuzzer feed_fuzzer
# build/fuzz holds the fuzzers (links to the asan build's), their logs and what they found.
mkdir -p build/fuzz
for name in new_plant_decoder bearer_credentials request_path jwt feed; do
    ln -sf "../asan/${name}_fuzzer" "build/fuzz/${name}_fuzzer"
done
rm -f build/fuzz/*crash-* build/fuzz/*leak-* build/fuzz/*timeout-* build/fuzz/*oom-*
# One target for `seconds`, in the background; its summary goes to build/fuzz/NAME.log.
run() {
    IFS=: read -r name corpus dict <<<"$1"
    scratch=$(mktemp -d)
    (cd build/fuzz && "./${name}_fuzzer" -max_total_time="$seconds" -max_len=4096 \
        -artifact_prefix="./${name}-" ${dict:+-dict="../../fuzz/${dict}.dict"} \
        -print_final_stats=1 "$scratch" "../../fuzz/corpus/${corpus}" >"${name}.log" 2>&1 || true
     rm -rf "$scratch") &
}
targets=(new_plant_decoder:new_plant:json bearer_credentials:bearer:bearer
    request_path:request_path:request_path jwt:jwt:jwt feed:feed:)
# Two at a time, one per core. With an odd number of targets the first runs alone, while the
# caller has the other core (scripts/test.sh runs the package test beside this).
i=0
while ((i < ${#targets[@]})); do
    size=$((i == 0 && ${#targets[@]} % 2 == 1 ? 1 : 2))
    for target in "${targets[@]:i:size}"; do
        echo "== fuzz: ${target%%:*} for ${seconds} s" >&2
        run "$target"
    done
    wait
    i=$((i + size))
done
for target in "${targets[@]}"; do
    name=${target%%:*}
    grep -E '^Done|ERROR|SUMMARY' "build/fuzz/${name}.log" | sed "s/^/${name}: /" >&2 || true
done
shopt -s nullglob
failing=(build/fuzz/*crash-* build/fuzz/*leak-* build/fuzz/*timeout-* build/fuzz/*oom-*)
shopt -u nullglob
if ((${#failing[@]} > 0)); then
    echo "fuzz: found a failing input: ${failing[*]} (logs in build/fuzz/*.log)" >&2
    exit 1
fi
