#!/usr/bin/env bash
# Runs clang-tidy (the repository's .clang-tidy) on the C++ sources under src/ that changed in the
# last 20 commits, or on all of them with --all; any finding fails the script. Needs the dev
# preset configured (its compile_commands.json). Usage: scripts/tidy.sh [--all]
# A source that passed is remembered under ~/.cache/plantstore/tidy by a hash of what its result
# depends on (clang-tidy's version, .clang-tidy, its compile command, its text and that of every
# header under src/), and is not checked again until one of them changes; findings are never
# remembered. PLANTSTORE_TIDY_CACHE=off checks every source.
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
# What every source's result depends on besides its own text and command (clang-tidy reads the
# project's headers through HeaderFilterRegex, and the headers the build generates).
cache="${XDG_CACHE_HOME:-$HOME/.cache}/plantstore/tidy"
mkdir -p "$cache"
common=$( { clang-tidy --version; cat .clang-tidy; git ls-files -z 'src/*.hpp' 'src/*.h' |
    xargs -0 cat; find build/dev/generated -type f -print0 | sort -z | xargs -0 cat; } |
    sha256sum | cut -c1-64)
declare -A keys
while read -r key file; do
    keys[$file]=$key
done < <(python3 - "$common" "$PWD" "${files[@]}" <<'PY'
import hashlib, json, os, sys
common, root, files = sys.argv[1], sys.argv[2], sys.argv[3:]
commands = {os.path.realpath(e["file"]): str(e.get("command") or e.get("arguments"))
            for e in json.load(open("build/dev/compile_commands.json"))}
for name in files:
    digest = hashlib.sha256(common.encode())
    digest.update(open(name, "rb").read())
    digest.update(commands.get(os.path.realpath(name), "").replace(root, ".").encode())
    print(digest.hexdigest(), name)
PY
)
unchecked=()
for file in "${files[@]}"; do
    if [[ ${PLANTSTORE_TIDY_CACHE:-on} == off || ! -e $cache/${keys[$file]} ]]; then
        unchecked+=("$file")
    fi
done
echo "tidy: ${#files[@]} sources, $((${#files[@]} - ${#unchecked[@]})) unchanged since they passed" >&2
files=("${unchecked[@]}")
if ((${#files[@]} == 0)); then
    exit 0
fi
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
    exit "$status"
fi
for file in "${files[@]}"; do
    touch "$cache/${keys[$file]}"
done
