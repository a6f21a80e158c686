#!/usr/bin/env bash
# Writes what a user sees of a build into a directory, so that two builds can be compared with
# `diff -r` after a change meant to keep behaviour (a refactoring): every command's --help, the
# served OpenAPI document, `plantstore config`, and /metrics after the same calls with every
# number replaced by N (timings and counts vary from run to run; names and labels must not).
# Usage: scripts/surface.sh BINARY OUT_DIR      e.g.
#   scripts/surface.sh /tmp/old/plantstore /tmp/s-old; scripts/surface.sh build/dev/plantstore /tmp/s-new
#   diff -r /tmp/s-old /tmp/s-new
set -euo pipefail
(($# == 2)) || { echo "usage: scripts/surface.sh BINARY OUT_DIR" >&2; exit 2; }
binary=$(realpath "$1")
out="$2"
mkdir -p "$out"
work=$(mktemp -d)
server=
cleanup() {
    [[ -n "$server" ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

"$binary" --help >"$out/help.txt"
for command in serve config token tenant backup check export import version; do
    "$binary" "$command" --help >"$out/help-$command.txt"
done
for command in create list revoke; do
    "$binary" token "$command" --help >"$out/help-token-$command.txt"
done
(cd "$work" && PLANTSTORE_CONFIG= "$binary" config --data-dir data --listen 127.0.0.1:0) >"$out/config.toml"

token=$("$binary" token create --name surface --data-dir "$work/data")
port=$((20000 + RANDOM % 20000))
PLANTSTORE_CONFIG= "$binary" serve --data-dir "$work/data" --listen "127.0.0.1:$port" \
    --log-level error >"$work/log" 2>&1 &
server=$!
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break
    sleep 0.1
done
call() { curl -s -o /dev/null -H "Authorization: Bearer $token" "$@"; }
base="http://127.0.0.1:$port"
curl -s "$base/openapi.json" >"$out/openapi.json"
call -X POST "$base/plants" -H 'Content-Type: application/json' -d '{"id":1,"name":"a","tag":"t"}'
call -X POST "$base/plants" -H 'Content-Type: application/json' -d '{"id":1,"name":"b"}'
call "$base/plants/1"
call "$base/plants?limit=5"
call -X PATCH "$base/plants/1" -H 'Content-Type: application/merge-patch+json' -d '{"name":"c"}'
call "$base/events?after=0"
call -X DELETE "$base/plants/1"
call "$base/plants/nope"
curl -s -o /dev/null "$base/plants"
# Status codes stay: they are labels.
curl -s "$base/metrics" | perl -pe 's/(?<!status=")(?<![0-9.])[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?/N/g' \
    >"$out/metrics.txt"
