#!/bin/bash
# The floor under a create's cost on PostgreSQL: what the rows a create writes cost when written
# by the plainest statements, with nothing of the server around them. On a throwaway cluster
# (scripts/pg-cluster.sh) with the server's schema (made by BINARY), pgbench sends from one
# connection, for 8 s per line, transactions of ROWS bare inserts each (`INSERT ... SELECT
# ... generate_series`, synchronous commit as the server runs it):
#   plants       the plants alone (their key and tag indexes),
#   events       and one event row each (plant_events and its key),
#   counter      and the tenant's row updated once per transaction, as the server's batch does,
# for ROWS of 8, 16, 32, 64 and 128 (the batch sizes 16 to 256 connections make). Prints rows/s
# and PostgreSQL's CPU per row (every process of the cluster, user + system, the backends that
# ended included). Usage: bench/pg-floor.sh [BINARY] (default build/release/plantstore).
# Unix socket only; bounded (15 runs of 8 s).
set -euo pipefail
cd "$(dirname "$0")/.."
binary=$(realpath "${1:-build/release/plantstore}")
work=$(mktemp -d /tmp/pg-floor.XXXXXX)
cluster="$work/pg"
url=$(scripts/pg-cluster.sh start "$cluster")
cleanup() {
    scripts/pg-cluster.sh remove "$cluster" fast >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
psql "$url" -qc "CREATE DATABASE bench"
db="$url dbname=bench"
"$binary" token create --name bench --tenant acme --database-url "$db" >/dev/null  # the schema
psql "$db" -qc "CREATE SEQUENCE ids CACHE 1000; CREATE SEQUENCE seqs CACHE 1000;
                INSERT INTO tenants (tenant, last_seq) VALUES ('acme', 0) ON CONFLICT DO NOTHING"
postmaster=$(head -1 "$cluster/data/postmaster.pid")
ticks() {  # CPU ticks of the cluster so far: its processes', and the postmaster's ended children
    local total=0 pid stat
    for pid in $postmaster $(pgrep -P "$postmaster"); do
        read -r -a stat 2>/dev/null <"/proc/$pid/stat" || continue
        total=$((total + stat[13] + stat[14]))
        [[ $pid == "$postmaster" ]] && total=$((total + stat[15] + stat[16]))
    done
    echo "$total"
}
printf '%-8s %5s %10s %18s\n' writes rows rows/s "PostgreSQL us/row"
for writes in plants events counter; do
    for rows in 8 16 32 64 128; do
        {
            echo "BEGIN;"
            echo "INSERT INTO plants (tenant, id, name, tag, created_at) SELECT 'acme',"\
                 "nextval('ids'), 'plant', 't' || (g % 5), 0 FROM generate_series(1, $rows) g;"
            [[ $writes != plants ]] &&
                echo "INSERT INTO plant_events (tenant, seq, type, plant_id, name, tag, at)"\
                     "SELECT 'acme', nextval('seqs'), 'plant.created', g, 'plant', 't', 0"\
                     "FROM generate_series(1, $rows) g;"
            [[ $writes == counter ]] &&
                echo "UPDATE tenants SET last_seq = last_seq + $rows WHERE tenant = 'acme';"
            echo "COMMIT;"
        } >"$work/script.sql"
        before=$(ticks)
        out=$(pgbench -n -c1 -j1 -T8 -f "$work/script.sql" "$db" 2>&1)
        after=$(ticks)
        transactions=$(awk '/number of transactions actually processed/ {print $NF}' <<<"$out")
        python3 -c 'import sys
writes, rows, transactions, ticks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3].split("/")[0]), int(sys.argv[4])
print(f"{writes:8} {rows:5} {transactions * rows / 8:10.0f} {ticks * 1e4 / (transactions * rows):18.1f}")' \
            "$writes" "$rows" "$transactions" "$((after - before))"
    done
done
