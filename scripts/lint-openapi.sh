#!/usr/bin/env bash
# Lints docs/openapi.json with Redocly CLI (a pinned version, from the npm registry through npx),
# installing Debian's nodejs and npm first when npx is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v npx >/dev/null; then
    echo "plantstore: installing nodejs npm" >&2
    sudo_cmd=()
    [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
    export DEBIAN_FRONTEND=noninteractive
    "${sudo_cmd[@]}" apt-get update -q
    "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends nodejs npm
fi
exec npx --yes @redocly/cli@1.25.11 lint --config docs/redocly.yaml docs/openapi.json
