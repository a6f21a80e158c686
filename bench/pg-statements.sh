#!/bin/bash
# Where PostgreSQL's time goes per create: on a throwaway cluster (scripts/pg-cluster.sh, which
# loads pg_stat_statements), one instance of BINARY takes unique creates from wrk for 10 s at 16,
# 64 and 256 connections; after each, wrk's latency, the cluster's CPU per create (user and
# system, per process kind) and pg_stat_statements' table of the batch's statements (calls, rows,
# execution time per create). Usage: bench/pg-statements.sh [BINARY] (default build/release/plantstore). 127.0.0.1
# only; bounded (three runs of 10 s).
set -euo pipefail
cd "$(dirname "$0")/.."
binary=$(realpath "${1:-build/release/plantstore}")
work=$(mktemp -d /tmp/pg-statements.XXXXXX)
cluster="$work/pg"
url=$(scripts/pg-cluster.sh start "$cluster")
server=""
cleanup() {
    [[ -n "$server" ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    scripts/pg-cluster.sh remove "$cluster" fast >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
psql "$url" -qc "CREATE DATABASE bench"
db="$url dbname=bench"
psql "$db" -qc "CREATE EXTENSION pg_stat_statements"
token=$("$binary" token create --name bench --tenant acme --database-url "$db")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$binary" serve --listen "127.0.0.1:$port" --database-url "$db" --access-log off \
    --shutdown-delay-ms 0 >/dev/null 2>"$work/server.log" &
server=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
postmaster=$(head -1 "$cluster/data/postmaster.pid")
snapshot() {  # pid user system kind, for the postmaster and its children
    for pid in $postmaster $(pgrep -P "$postmaster"); do
        read -r -a stat 2>/dev/null <"/proc/$pid/stat" || continue
        kind=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)
        [[ $kind == *"[local]"* ]] && kind="backends"
        echo "$pid ${stat[13]} ${stat[14]} ${kind:-postgres}"
    done
}
first=1
for connections in 16 64 256; do
    psql "$db" -qAtc "SELECT pg_stat_statements_reset()" >/dev/null
    snapshot >"$work/before"
    out=$(PLANTSTORE_TOKEN=$token wrk -t1 "-c$connections" -d10s --timeout 10s \
        -s bench/plants.lua "http://127.0.0.1:$port" -- post "$first" 1)
    snapshot >"$work/after"
    first=$((first + 1000000000))
    creates=$(awk '/requests in/ {print $1}' <<<"$out")
    echo "== $connections connections: $creates creates in 10 s"
    p50=$(sed -n 's/^RESULT .*"p50_us":\([0-9]*\).*/\1/p' <<<"$out")
    p99=$(sed -n 's/^RESULT .*"p99_us":\([0-9]*\).*/\1/p' <<<"$out")
    echo "latency p50 $((p50 / 1000)).$((p50 % 1000 / 100)) ms, p99 $((p99 / 1000)).$((p99 % 1000 / 100)) ms"
    python3 - "$creates" "$work/before" "$work/after" <<'PY'
import collections, sys
creates, before, after = int(sys.argv[1]), sys.argv[2], sys.argv[3]
start = {line.split()[0]: line.split() for line in open(before)}
kinds = collections.defaultdict(lambda: [0, 0])
for line in open(after):
    pid, user, system, *kind = line.split()
    u0, s0 = (int(start[pid][1]), int(start[pid][2])) if pid in start else (0, 0)
    kinds[" ".join(kind)][0] += int(user) - u0
    kinds[" ".join(kind)][1] += int(system) - s0
tick_us = 1e6 / 100
total = sum(u + s for u, s in kinds.values())
print(f"PostgreSQL CPU per create: {total * tick_us / creates:.1f} us")
for kind, (user, system) in sorted(kinds.items(), key=lambda k: -sum(k[1])):
    if user + system:
        print(f"  {kind[:40]:40} user {user * tick_us / creates:6.1f} us  system "
              f"{system * tick_us / creates:6.1f} us")
PY
    psql "$db" -qc "SELECT calls, rows, round((rows::numeric / greatest(calls, 1)), 1) AS rows_per_call,
        round((total_exec_time * 1000 / $creates)::numeric, 2) AS exec_us_per_create,
        left(regexp_replace(query, '\s+', ' ', 'g'), 50) AS statement
        FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'bench')
        AND query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC LIMIT 8"
done
