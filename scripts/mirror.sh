#!/usr/bin/env bash
# How far the tests mirror the source tree: for each src/**/X.cpp, is there a tests/**/X_test.cpp
# at the same path? The storage engines' files (src/store/sqlite/, src/store/postgres/) count as
# covered by the contract suites every engine runs (tests/store/*_contract_test.cpp), except
# the PostgreSQL connection code (pq.cpp, pipelined_connection.cpp), which has tests of its own.
# Prints the share and the files without a test; exits 1 below the floor (80%, or $1).
# Usage: scripts/mirror.sh [floor percent]
set -euo pipefail
cd "$(dirname "$0")/.."
floor="${1:-80}"
total=0
covered=0
missing=()
while IFS= read -r source; do
    relative="${source#src/}"
    relative="${relative%.in}"
    total=$((total + 1))
    if [[ -f "tests/${relative%.cpp}_test.cpp" ]]; then
        covered=$((covered + 1))
    elif [[ $relative =~ ^store/(sqlite|postgres)/ && ! $relative =~ /(pq|pipelined_connection)\.cpp$ ]] &&
        [[ -f tests/store/plant_store_contract_test.cpp ]]; then
        covered=$((covered + 1))
    else
        missing+=("$relative")
    fi
done < <(find src -name '*.cpp' -o -name '*.cpp.in' | sort)
percent=$((covered * 100 / total))
echo "tests mirror ${covered} of ${total} source files (${percent}%; floor ${floor}%)"
for file in "${missing[@]}"; do echo "  no tests/${file%.cpp}_test.cpp"; done
((percent >= floor))
