#!/usr/bin/env bash
# Runs clang-tidy (the repository's .clang-tidy) on the C++ sources under src/ that changed in the
# last 20 commits, or on all of them with --all; any finding fails the script. Needs the dev
# preset configured (its compile_commands.json). Usage: scripts/tidy.sh [--all]
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ! -f build/dev/compile_commands.json ]]; then
    cmake --preset dev >/dev/null
fi
if [[ "${1:-}" == "--all" ]] || ! base=$(git rev-parse --verify -q HEAD~20); then
    mapfile -t files < <(git ls-files 'src/*.cpp')
else
    mapfile -t files < <(git diff --name-only --diff-filter=AM "$base" -- 'src/*.cpp')
fi
if ((${#files[@]} == 0)); then
    echo "tidy: no changed sources" >&2
    exit 0
fi
echo "tidy: ${#files[@]} sources" >&2
# Headers are checked through the sources that include them (HeaderFilterRegex). One clang-tidy
# per core; xargs fails when any run reported a finding.
report=$(mktemp)
status=0
printf '%s\n' "${files[@]}" | xargs -P 2 -n 1 clang-tidy -p build/dev --quiet \
    --warnings-as-errors='*' >"$report" 2>&1 || status=$?
grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated|^Suppressed|header-filter' \
    "$report" || true
rm -f "$report"
if ((status != 0)); then
    echo "tidy: findings above (fix them, or justify a NOLINT next to the line)" >&2
fi
exit "$status"
