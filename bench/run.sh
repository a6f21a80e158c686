#!/usr/bin/env bash
# Benchmark: plantstore against the nginx ceiling, on 127.0.0.1, bounded in time.
# Usage: bench/run.sh [--duration S] [--connections 1,16,64,256] [--scaling] [--logging]
#                     [--postgres]
#                     [--out FILE]
#        bench/run.sh --micro    (only the Google Benchmark micro-benchmarks of the hot paths)
# Installs what is missing (wrk, nginx-light, python3), builds the Release binary, then runs
# bench/bench.py, which prints a Markdown table and writes the same figures as JSON.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh --bench
if [[ "${1:-}" == "--micro" ]]; then
    cmake --preset bench >/dev/null
    exec cmake --build --preset bench --target run_micro_benchmarks
fi
cmake --preset release >/dev/null
cmake --build --preset release
exec python3 bench/bench.py --binary build/release/plantstore "$@"
