#!/usr/bin/env bash
# Runs each consistency scenario (tests/consistency/consistency_test.cpp: the workload against
# the real binary while faults are injected, then the history checker) for as long as asked, one
# after the other, in the optimized build, and prints each one's figures: operations checked,
# those with an unknown outcome, feed reads, events, faults, the checker's time, violations. The
# Patroni scenario (tests/consistency/failover_test.cpp) runs once: its failovers set its length.
# Usage: scripts/consistency.sh [--minutes N (default 1)] [--seed S] [--only REGEX]
# --only runs the scenarios whose name matches REGEX (grep -E), e.g. --only '^Sqlite'.
# A violation keeps the whole history in build/dev/tests/consistency-SCENARIO-SEED.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=1
only=.
while (($# > 0)); do
    case "$1" in
        --minutes) minutes="$2"; shift 2 ;;
        --seed) export PLANTSTORE_CONSISTENCY_SEED="$2"; shift 2 ;;
        --only) only="$2"; shift 2 ;;
        *) echo "usage: scripts/consistency.sh [--minutes N] [--seed S] [--only REGEX]" >&2; exit 2 ;;
    esac
done
[[ "$minutes" =~ ^[0-9]+$ ]] && ((minutes >= 1)) || { echo "--minutes: a whole number from 1" >&2; exit 2; }

scripts/install-deps.sh --tests
cmake --preset dev >/dev/null
cmake --build --preset dev --target consistency_tests ha_tests plantstore
export PLANTSTORE_CONSISTENCY_SECONDS=$((minutes * 60))
status=0
for scenario in SqliteKilledEveryFewSeconds SqliteStoreStallsLongerThanItsTimeout \
    PostgresTwoInstancesOneKilledEveryFewSeconds \
    PostgresTwoInstancesDatabaseFrozenLongerThanTheStoreTimeout \
    PostgresConnectionsToTheDatabaseHeldOrReset PostgresRollingRestartBehindHaproxy \
    PatroniFailoverHistory; do
    grep -qE -- "$only" <<<"$scenario" || continue
    if [[ $scenario == Patroni* ]]; then
        echo "== consistency: ${scenario}" >&2
        name="${scenario}\..*"
    else
        echo "== consistency: ${scenario} for ${minutes} min" >&2
        name="Consistency\.${scenario}"
    fi
    # The PostgreSQL cluster fixture comes with the scenario; the time limit fits the length.
    ctest --preset dev --tests-regex "^(${name}|PostgresCluster\..*)\$" \
        --timeout $((minutes * 60 + 600)) --verbose |
        grep -E '^[0-9]+: consistency:|Failure|^[0-9]+: (plant|client|    )|tests passed|Failed' ||
        status=1
done
exit "$status"
