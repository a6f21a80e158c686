#!/usr/bin/env bash
# Lints docs/openapi.json with Redocly CLI (a pinned version, from the npm registry through npx),
# installing Debian's nodejs and npm first when npx is missing (scripts/install-deps.sh --node).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh --node
exec npx --yes @redocly/cli@1.25.11 lint --config docs/redocly.yaml docs/openapi.json
