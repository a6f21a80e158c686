#!/usr/bin/env bash
# The whole test suite: installs what is missing, then builds and runs the unit, storage and
# integration tests three times: an optimized build with assertions (-Werror), an ASan+UBSan
# build and a TSan build (the integration tests fail on any sanitizer report from the server
# they start), and the soak for 2 minutes in the optimized build (PLANTSTORE_SOAK_SECONDS=N for
# another length). The PostgreSQL suites run against throwaway clusters (scripts/pg-cluster.sh),
# and the failover tests, in the optimized build, against a throwaway Patroni cluster
# (scripts/ha-cluster.sh). It runs each libFuzzer target for 20 s (clang, ASan+UBSan) on its
# checked-in corpus, two at a time. It lints the served OpenAPI document with a real linter
# (Redocly CLI, via npm), runs clang-tidy on the sources changed in the last 20 commits
# (scripts/tidy.sh; --all for every source), builds the release binary that ./scripts/start.sh
# runs, and packages that same binary as the Debian package and tests it end to end
# (tests/package/package_test.sh: lintian, file list, install, service user, unit analysis, a
# create, remove and purge). At the end it prints how long each step took.
set -euo pipefail
cd "$(dirname "$0")/.."

steps=()
started=$SECONDS
# Runs a step and remembers how long it took.
step() {
    local name=$1 began=$SECONDS
    shift
    echo "== $name" >&2
    "$@"
    steps+=("$(printf '%-34s %5d s' "$name" $((SECONDS - began)))")
}
report() {
    local status=$?
    echo "== step times" >&2
    printf '%s\n' "${steps[@]}" >&2
    printf '%-34s %5d s%s\n' "total" $((SECONDS - started)) \
        "$( ((status == 0)) || echo " (failed)")" >&2
}
trap report EXIT

build() { cmake --preset "$1" >/dev/null && cmake --build --preset "$1"; }

dev_tests() {
    # The consistency scenarios for 20 s each here (10 s in the sanitizer builds).
    PLANTSTORE_CONSISTENCY_SECONDS=20 ctest --preset dev --exclude-regex '^(Soak\.|PatroniFailover)'
}
patroni_tests() {
    # Failover on Patroni (three etcd members, two PostgreSQL nodes), each test with the machine
    # to itself; its "ha:" lines report the seed, recovery times and 503 counts, and the history
    # scenario's "consistency:" lines its steps and figures.
    ctest --preset dev --tests-regex '^PatroniFailover' --verbose |
        grep -E '^[0-9]+: (ha|consistency):|tests passed|Failed|Failure|Skipped'
}
soak() {
    PLANTSTORE_SOAK_SECONDS="${PLANTSTORE_SOAK_SECONDS:-120}" ctest --preset dev \
        --tests-regex '^Soak\.' --verbose | grep -E '^[0-9]+: soak:|tests passed|Failed'
}

step "install what is missing" scripts/install-deps.sh --tests
step "dev: build" build dev
step "dev: test" dev_tests
step "dev: failover on Patroni" patroni_tests
step "dev: soak ${PLANTSTORE_SOAK_SECONDS:-120} s" soak
# The sanitizer builds run the same suites but for the soak at full length (10 s there) and the
# tests registered once, in dev (tests/CMakeLists.txt: the Patroni failover, the docs' links,
# the layout, the alert rules, the API page, the generated client).
step "asan: build" build asan
step "asan: test" ctest --preset asan
step "tsan: build" build tsan
step "tsan: test" ctest --preset tsan
step "tidy: recently changed sources" scripts/tidy.sh
step "fuzz: 20 s per target" scripts/fuzz.sh 20
step "openapi: lint" scripts/lint-openapi.sh
step "release: build" build release
step "package: lintian, install, purge" tests/package/package_test.sh --prebuilt
echo "== all tests passed" >&2
