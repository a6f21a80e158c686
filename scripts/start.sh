#!/usr/bin/env bash
# Quick start: installs what is missing, builds a Release binary, creates the data directory
# with a fresh "quickstart" token, prints a ready-to-paste curl command and runs the service
# in the foreground (Ctrl-C drains and stops it at once: no load balancer waits for a local
# start, so the shutdown delay is 0 unless PLANTSTORE_SHUTDOWN_DELAY_MS says otherwise). Extra
# arguments go to `plantstore serve` and win over these defaults (`--listen 127.0.0.1:18080`).
# Honours PLANTSTORE_LISTEN (default 127.0.0.1:8080) and PLANTSTORE_DATA_DIR (default ./data).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release

binary=build/release/plantstore
listen="${PLANTSTORE_LISTEN:-127.0.0.1:8080}"
data_dir="${PLANTSTORE_DATA_DIR:-data}"
# The address and directory the arguments name, if they do: the banner and the token use them.
args=("$@")
for ((i = 0; i < ${#args[@]}; ++i)); do
    case "${args[i]}" in
        --listen) listen="${args[i + 1]:-$listen}" ;;
        --listen=*) listen="${args[i]#--listen=}" ;;
        --data-dir) data_dir="${args[i + 1]:-$data_dir}" ;;
        --data-dir=*) data_dir="${args[i]#--data-dir=}" ;;
    esac
done

# Only a token's hash is stored, so a token can be shown only when it is minted: replace the
# previous quick-start token with a new one on every start.
"$binary" token revoke quickstart --data-dir "$data_dir" >/dev/null 2>&1 || true
token=$("$binary" token create --name quickstart --data-dir "$data_dir")

cat <<MSG

plantstore is starting on http://$listen with data in $data_dir/
Your token (shown once; only its SHA-256 is stored): $token

Create a plant:
  curl -sS -X POST http://$listen/plants \\
    -H 'Authorization: Bearer $token' \\
    -H 'Content-Type: application/json' \\
    -d '{"id": 1, "name": "Monstera", "tag": "aroid"}'

Or read the API and try it in a browser: http://$listen/docs (paste the token there).

MSG
# Through the environment, so that an argument naming the same option wins instead of clashing.
PLANTSTORE_LISTEN="$listen" PLANTSTORE_DATA_DIR="$data_dir" \
    PLANTSTORE_SHUTDOWN_DELAY_MS="${PLANTSTORE_SHUTDOWN_DELAY_MS:-0}" \
    exec "$binary" serve "$@"
