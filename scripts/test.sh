#!/usr/bin/env bash
# The whole test suite: installs what is missing, then builds and runs the unit, storage and
# integration tests three times: the dev build (the release preset's flags, Debian's hardening
# and -O2, plus the tests; -Werror), an ASan+UBSan build (clang) and a TSan build (the
# integration tests fail on any sanitizer report from the server they start). In the dev build
# it also runs the failover tests against a throwaway Patroni cluster (scripts/ha-cluster.sh) and
# the soak for 2 minutes at 3,000 requests a second (PLANTSTORE_SOAK_SECONDS, _RATE): both wait on
# timers and a cluster, so they run in the background while the ASan build compiles, its
# tests and the fuzzers run (their log is printed when they end). The PostgreSQL suites run
# against throwaway clusters (scripts/pg-cluster.sh). It runs each libFuzzer target for 20 s on
# its checked-in corpus, two at a time, from the ASan build (scripts/fuzz.sh). It lints the
# served OpenAPI document with a real linter (Redocly CLI, via npm), runs clang-tidy on the
# sources changed in the last 20 commits beside the dev tests (scripts/tidy.sh; --all for every
# source), and packages
# the dev build's binary, the one the tests ran, as the Debian package and tests it end to end
# (tests/package/package_test.sh: lintian, file list, install, service user, unit analysis, a
# create, remove and purge). At the end it prints how long each step took.
#
# Compilation goes through ccache, into ~/.cache/plantstore/ccache (CCACHE_DIR to move it): a
# later run, from this clone or another, compiles only what changed. The builds' hits and misses
# are printed after they end. A cache never hides a failure: the compiler's flags are part of each
# object's key, and a unit that failed to compile is not cached.
#
# Usage: scripts/test.sh [--quick]
#   --quick  the loop of one change: the dev build and its tests (the consistency scenarios for
#            5 s each), without Patroni, the soak, the sanitizers, the fuzzers, tidy, the
#            OpenAPI lint or the package. The whole command is what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
case "${1:-}" in
    --quick) quick=true ;;
    "") ;;
    *) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
esac

export CCACHE_DIR="${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/plantstore/ccache}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-8G}"
# Paths under the clone are keyed relative to it, so another clone of the same tree hits.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1

steps=()
started=$SECONDS
# Every temporary file of the run, and every cluster, server, Patroni and etcd it starts, lives
# under a directory of its own (TMPDIR: the tests' directories, scripts/pg-cluster.sh's clusters,
# and so ha-cluster.sh's): at the end whatever still runs from there is ended, even what a test
# killed by a failure or a time-out detached and left behind, and nothing of another run is
# touched. Searchable by the unprivileged user the clusters run as when this runs as root.
run_tmp=$(mktemp -d /tmp/ps-run.XXXXXX)
chmod 0711 "$run_tmp"
export TMPDIR="$run_tmp"
logs=$(mktemp -d)
background=()   # "pid:name" of the steps running in the background
# The machine's CPU time so far, busy and in all (jiffies; /proc/stat's first line).
cpu_now() {
    local _cpu user nice system idle iowait irq softirq steal _rest
    read -r _cpu user nice system idle iowait irq softirq steal _rest </proc/stat
    echo "$((user + nice + system + irq + softirq + steal)) $((user + nice + system + idle + iowait + irq + softirq + steal))"
}
# A step's line in the report: its name, how long it took, and how busy the machine's CPUs were
# meanwhile (whatever ran: with steps beside it, the share idle is what another step could use).
# Arguments: name, start in seconds, the cpu_now of its start.
step_line() {
    local busy total busy0 total0
    read -r busy total < <(cpu_now)
    read -r busy0 total0 <<<"$3"
    printf '%-40s %5d s  (CPU %3d%% busy)' "$1" $((SECONDS - $2)) \
        $((100 * (busy - busy0) / (total - total0 > 0 ? total - total0 : 1)))
}
# Runs a step and remembers how long it took.
step() {
    local name=$1 began=$SECONDS cpu
    cpu=$(cpu_now)
    shift
    echo "== $name" >&2
    "$@"
    steps+=("$(step_line "$name" "$began" "$cpu")")
}
# Starts a step in the background; its output goes to a log that `joined` prints.
beside() {
    local name=$1
    shift
    echo "== $name (in the background)" >&2
    (
        began=$SECONDS
        cpu=$(cpu_now)
        status=0
        "$@" >"$logs/$name.log" 2>&1 || status=$?
        step_line "$name (beside)" "$began" "$cpu" >"$logs/$name.time"
        exit "$status"
    ) &
    background+=("$!:$name")
}
# Waits for the background step named $1 (every one without an argument), prints its log and
# fails when it failed.
joined() {
    local entry pid name status failed=0 left=()
    for entry in "${background[@]}"; do
        pid=${entry%%:*}
        name=${entry#*:}
        if [[ $# -gt 0 && $name != "$1" ]]; then
            left+=("$entry")
            continue
        fi
        status=0
        wait "$pid" || status=$?
        echo "== $name (ended)" >&2
        cat "$logs/$name.log" >&2
        steps+=("$(cat "$logs/$name.time")")
        if ((status != 0)); then
            echo "== $name FAILED (exit $status)" >&2
            failed=1
        fi
    done
    background=("${left[@]}")
    return "$failed"
}
end_tree() {
    local child
    for child in $(pgrep -P "$1" || true); do
        end_tree "$child"
    done
    kill "$1" 2>/dev/null || true
}
report() {
    local status=$?
    # A failure while steps run in the background ends them too, with what they started.
    for entry in "${background[@]}"; do
        end_tree "${entry%%:*}"
    done
    echo "== step times" >&2
    printf '%s\n' "${steps[@]}" >&2
    printf '%-40s %5d s%s\n' "total" $((SECONDS - started)) \
        "$( ((status == 0)) || echo " (failed)")" >&2
    # What still runs from the run's directory was left behind: named, then ended.
    local left
    left=$(pgrep -af -- "$run_tmp/" || true)
    if [[ -n $left ]]; then
        echo "== ended what the run left running:" >&2
        echo "$left" >&2
        pkill -KILL -f -- "$run_tmp/" || true
        sleep 1
    fi
    rm -rf "$run_tmp"
}
trap report EXIT

build() {
    cmake --preset "$1" >/dev/null
    cmake --build --preset "$1"
}
build_at_lower_priority() {
    renice -n 5 -p "$BASHPID" >/dev/null
    build "$1"
}
# The cache's hits and misses of the run's builds (zeroed at its start; the builds run at once).
cache_report() {
    if command -v ccache >/dev/null; then
        ccache -s 2>/dev/null | grep -E '^ *(Hits|Misses):' | sed "s/^ */ccache (the builds): /" >&2 ||
            true
    fi
}

# ctest starts the longest tests first when it knows how long each took (the file its last run in
# that build directory wrote); otherwise in the order they are declared, and the long ones left
# for last run alone at the end (a TSan run ended on Docs.ExamplesRun alone for 20 s; with the
# times, on tests of 0.3 s). A clean clone has no such file: each run's is kept beside the
# compiler cache and given to the next one.
costs="${XDG_CACHE_HOME:-$HOME/.cache}/plantstore/ctest"
ctest_longest_first() {
    local preset=$1 file="build/$1/Testing/Temporary/CTestCostData.txt" status=0
    shift
    if [[ ! -f $file && -f $costs/$preset.txt ]]; then
        mkdir -p "${file%/*}"
        cp "$costs/$preset.txt" "$file"
    fi
    ctest --preset "$preset" "$@" || status=$?
    if [[ -f $file ]]; then
        mkdir -p "$costs"
        cp "$file" "$costs/$preset.txt.$$" && mv "$costs/$preset.txt.$$" "$costs/$preset.txt"
    fi
    return "$status"
}
dev_tests() {
    # The consistency scenarios for 20 s each here (10 s in the sanitizer builds).
    PLANTSTORE_CONSISTENCY_SECONDS="${PLANTSTORE_CONSISTENCY_SECONDS:-20}" \
        ctest_longest_first dev --exclude-regex '^(Soak\.|PatroniFailover)'
}
patroni_tests() {
    # Failover on Patroni (three etcd members, two PostgreSQL nodes), one test at a time; its
    # "ha:" lines report the seed, recovery times and 503 counts, and the history scenario's
    # "consistency:" lines its steps and figures.
    ctest --preset dev --tests-regex '^PatroniFailover' --output-on-failure --verbose |
        grep -E '^[0-9]+: (ha|consistency):|tests passed|Failed|Failure|Skipped|Error|error'
}
soak() {
    # The binary itself, not through ctest: a second ctest in the build directory, beside the
    # Patroni one, would write the same Testing/ files.
    # Its figures when it passes, its whole output when it fails.
    local out status=0
    out=$(PLANTSTORE_SOAK_SECONDS="${PLANTSTORE_SOAK_SECONDS:-120}" timeout 3700 \
        build/dev/tests/soak_tests 2>&1) || status=$?
    if ((status != 0)); then
        echo "$out"
        return "$status"
    fi
    grep -E '^soak:|PASSED' <<<"$out"
}

step "install what is missing" scripts/install-deps.sh --tests
ccache -z >/dev/null 2>&1 || true
step "dev: build" build dev
if $quick; then
    PLANTSTORE_CONSISTENCY_SECONDS=5 step "dev: test (quick)" ctest_longest_first dev \
        --exclude-regex '^(Soak\.|PatroniFailover)'
    echo "== the dev build's tests passed (the whole command runs the rest)" >&2
    exit 0
fi
# The dev tests leave about half of the CPU idle (they wait on servers and clusters): the
# sanitizer builds compile beside them, the TSan one at a lower priority (the ASan tests wait for
# the ASan build first), and clang-tidy, which needs only the dev build's compile commands, at a
# lower one still. A warm run spent 74 s on the ASan build and 29 s on the TSan one after them.
beside "asan: build" build asan
beside "tsan: build" build_at_lower_priority tsan
beside "tidy: recently changed sources" nice -n 10 scripts/tidy.sh
step "dev: test" dev_tests
# The failover on Patroni and the soak wait on timers and a cluster: they run while the ASan
# build compiles and its tests run (a loaded machine, which they must survive), side by side
# (the soak is paced: about half a core), and the OpenAPI lint beside them.
beside "dev: Patroni failover" patroni_tests
beside "dev: soak ${PLANTSTORE_SOAK_SECONDS:-120} s" soak
beside "openapi: lint" scripts/lint-openapi.sh
step "asan: build (waiting for it)" joined "asan: build"
# The sanitizer builds run the same suites but for the soak at full length (10 s there) and the
# tests registered once, in dev (tests/CMakeLists.txt: the Patroni failover, the docs' links,
# the layout, the alert rules, the API page, the generated client).
step "asan: test" ctest_longest_first asan
# The fuzzers need no timer and make no timing claim: they run while the waiting steps end (a
# warm run waited 90 s for them after the ASan tests). They run two at a time, the odd one first
# alone: the package test (about one core for 20-25 s) takes the other core then.
beside "package: lintian, install, purge" tests/package/package_test.sh --prebuilt build/dev/plantstore
step "fuzz: 20 s per target (asan build)" scripts/fuzz.sh 20
step "waiting for the background steps" joined
cache_report
step "tsan: test" ctest_longest_first tsan
echo "== all tests passed" >&2
