#!/usr/bin/env bash
# A TypeScript client generated from the OpenAPI document the real binary serves, compiled with
# tsc --strict and run against that binary: create, list, read, conflict, delete, health. Pinned
# tools (package.json, package-lock.json) from the npm registry: openapi-typescript makes the
# types, openapi-fetch sends the requests. Usage: generated_client_test.sh PLANTSTORE WORK_DIR
set -euo pipefail
binary=$(realpath "$1")
work=$2
here=$(cd "$(dirname "$0")" && pwd)

"$here/../../scripts/install-deps.sh" --node
rm -rf "$work/data" "$work/out" "$work/schema.d.ts"
mkdir -p "$work"
cp "$here/package.json" "$here/package-lock.json" "$here/tsconfig.json" "$here/client.ts" "$work/"
cd "$work"
npm ci --no-audit --no-fund --loglevel=error

token=$("$binary" token --data-dir data create --name client-test)
"$binary" serve --data-dir data --listen 127.0.0.1:0 --access-log off >server.log 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
base=""
for _ in $(seq 1 300); do  # at most 30 s
    base=$(grep -o -m1 'listening on http://127\.0\.0\.1:[0-9]*' server.log | sed 's/listening on //' || true)
    [[ -n "$base" ]] && break
    kill -0 "$server" 2>/dev/null || { cat server.log >&2; exit 1; }
    sleep 0.1
done
[[ -n "$base" ]] || { echo "the server did not start" >&2; cat server.log >&2; exit 1; }

curl -sf --max-time 10 "$base/openapi.json" -o openapi.json
npx --no-install openapi-typescript openapi.json --output schema.d.ts
npx --no-install tsc -p tsconfig.json
node out/client.js "$base" "$token"
