#!/usr/bin/env bash
# A throwaway highly available PostgreSQL, for the failover tests and for trying
# docs/how-to/high-availability.md on one machine, never a system one: three etcd members (127.0.0.11-13)
# and two PostgreSQL 15 nodes managed by Patroni (127.0.0.21-22, synchronous_mode on), each on
# free ports, everything in DIR. Run as root, every process runs as the unprivileged user nobody.
#   ha-cluster.sh start DIR          start it; waits (at most 90 s) for a primary and a
#                                    synchronous standby, creates the role and database
#                                    plantstore, prints and writes DIR/url (a multi-host URL)
#   ha-cluster.sh primary DIR        prints the node Patroni says is primary (node1 or node2;
#                                    nothing while there is none)
#   ha-cluster.sh sync-standby DIR   prints the node that is the synchronous standby, if any
#   ha-cluster.sh node-url DIR NODE  prints a superuser connection string to NODE alone
#   ha-cluster.sh kill DIR NODE      SIGKILL NODE's Patroni and postmaster (a crash)
#   ha-cluster.sh freeze DIR NODE    SIGSTOP NODE's Patroni, postmaster and every postgres process
#                                    (a partition: TCP stays open, nothing answers)
#   ha-cluster.sh thaw DIR NODE postgres|patroni   SIGCONT one half of a frozen node
#   ha-cluster.sh restart DIR NODE   start NODE's Patroni again (it rejoins as a standby)
#   ha-cluster.sh stop DIR           stop everything (frozen processes are resumed first)
# Binaries from Debian's packages: patroni 3.0.2, etcd-server 3.4, postgresql-15.
set -euo pipefail
action="${1:?usage: ha-cluster.sh start|primary|sync-standby|node-url|kill|freeze|thaw|restart|stop DIR [NODE]}"
dir="${2:?usage: ha-cluster.sh ACTION DIR [NODE]}"
pgbin=/usr/lib/postgresql/15/bin
etcd_ips=(127.0.0.11 127.0.0.12 127.0.0.13)
node_ips=(127.0.0.21 127.0.0.22)

# The command prefix that runs a program as nobody when this runs as root. Background processes
# are started as (exec "${owner[@]}" program ...) & so that $! is the program's own pid.
owner=()
[[ $(id -u) == 0 ]] && owner=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)

# A port on address $1 (one of this cluster's own loopback addresses, which no other test
# binds) that is free now and below the kernel's ephemeral range (32768 and up), so that no
# outgoing connection takes it as its own before its server binds it.
free_port() {
    python3 -c 'import random, socket, sys
for _ in range(200):
    port = random.randint(20000, 32000)
    try:
        with socket.socket() as s:
            s.bind((sys.argv[1], port))
    except OSError:
        continue
    print(port)
    break' "$1"
}

http_status() {
    curl -s -o /dev/null -m 2 -w '%{http_code}' "$1" || true
}

# Prints the node whose Patroni REST API answers 200 on $1 (/primary or /sync).
node_answering() {
    for n in 1 2; do
        if [[ $(http_status "http://${node_ips[n - 1]}:$(rest_port $n)$1") == 200 ]]; then
            echo "node$n"
            return
        fi
    done
}

rest_port() { cat "$dir/node$1/rest-port"; }
pg_port() { cat "$dir/node$1/pg-port"; }
node_number() {
    case "${1:-}" in
        node1) echo 1 ;;
        node2) echo 2 ;;
        *) echo "ha-cluster.sh: NODE must be node1 or node2" >&2; exit 2 ;;
    esac
}
postmaster_pid() { head -1 "$dir/node$1/data/postmaster.pid" 2>/dev/null || true; }
postgres_pids() {
    local main
    main="$(postmaster_pid "$1")"
    [[ -n $main ]] || return 0
    echo "$main"
    pgrep -P "$main" || true
}

write_patroni_config() {
    local n=$1 ip=${node_ips[$1 - 1]} hosts=""
    for m in 1 2 3; do
        hosts+="${hosts:+,}${etcd_ips[m - 1]}:$(cat "$dir/etcd$m/client-port")"
    done
    # The configuration docs/how-to/high-availability.md shows (with its addresses).
    cat >"$dir/node$n/patroni.yml" <<YAML
scope: plantstore
name: node$n
restapi:
  listen: $ip:$(rest_port "$n")
  connect_address: $ip:$(rest_port "$n")
etcd:  # Patroni's etcd v2 client: see docs/how-to/high-availability.md on etcd3 and Patroni 3.0.2
  hosts: $hosts
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 3
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    synchronous_mode_strict: false
    postgresql:
      use_pg_rewind: true
      parameters:
        wal_log_hints: 'on'
        max_connections: 100
  initdb:
    - encoding: UTF8
    - locale: C
    - data-checksums
postgresql:
  listen: $ip:$(pg_port "$n")
  connect_address: $ip:$(pg_port "$n")
  data_dir: $dir/node$n/data
  bin_dir: $pgbin
  pgpass: $dir/node$n/pgpass
  use_unix_socket: true
  authentication:
    superuser: {username: postgres, password: '$(cat "$dir/superuser-password")'}
    replication: {username: replicator, password: '$(cat "$dir/replication-password")'}
    rewind: {username: rewinder, password: '$(cat "$dir/rewind-password")'}
  parameters:
    unix_socket_directories: '$dir/node$n'
    shared_buffers: 32MB
  pg_hba:
    - local all all scram-sha-256
    - host replication replicator 127.0.0.0/8 scram-sha-256
    - host all all 127.0.0.0/8 scram-sha-256
YAML
    chmod 0600 "$dir/node$n/patroni.yml"
}

start_patroni() {
    local n=$1
    (cd / && exec "${owner[@]}" patroni "$dir/node$n/patroni.yml" \
        >>"$dir/node$n/patroni.log" 2>&1) &
    echo $! >"$dir/node$n/patroni.pid"
}

start() {
    for tool in patroni etcd curl python3 "$pgbin/initdb"; do
        if ! command -v "$tool" >/dev/null; then
            echo "ha-cluster.sh: $tool not found (scripts/install-deps.sh --tests installs patroni, etcd-server and postgresql-15)" >&2
            exit 1
        fi
    done
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    [[ $(id -u) == 0 ]] && chown nobody:nogroup "$dir"
    chmod 0700 "$dir"
    for secret in superuser replication rewind plantstore; do
        [[ -f $dir/$secret-password ]] || head -c 18 /dev/urandom | base64 | tr '+/' 'xy' \
            >"$dir/$secret-password"
    done
    local cluster=""
    for m in 1 2 3; do
        mkdir -p "$dir/etcd$m"
        free_port "${etcd_ips[m - 1]}" >"$dir/etcd$m/client-port"
        free_port "${etcd_ips[m - 1]}" >"$dir/etcd$m/peer-port"
        cluster+="${cluster:+,}etcd$m=http://${etcd_ips[m - 1]}:$(cat "$dir/etcd$m/peer-port")"
    done
    for n in 1 2; do
        mkdir -p "$dir/node$n"
        free_port "${node_ips[n - 1]}" >"$dir/node$n/pg-port"
        free_port "${node_ips[n - 1]}" >"$dir/node$n/rest-port"
        write_patroni_config "$n"
    done
    [[ $(id -u) == 0 ]] && chown -R nobody:nogroup "$dir"
    for m in 1 2 3; do
        local ip=${etcd_ips[m - 1]} client peer
        client="http://$ip:$(cat "$dir/etcd$m/client-port")"
        peer="http://$ip:$(cat "$dir/etcd$m/peer-port")"
        (cd / && exec "${owner[@]}" etcd --name "etcd$m" --data-dir "$dir/etcd$m/data" \
            --listen-client-urls "$client" --advertise-client-urls "$client" \
            --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
            --initial-cluster "$cluster" --initial-cluster-state new \
            --initial-cluster-token "plantstore-$$" --enable-v2=true --log-level warn \
            >>"$dir/etcd$m/etcd.log" 2>&1) &
        echo $! >"$dir/etcd$m/etcd.pid"
    done
    for n in 1 2; do start_patroni "$n"; done
    local primary="" standby=""
    for _ in $(seq 1 180); do
        primary="$(node_answering /primary)"
        standby="$(node_answering /sync)"
        [[ -n $primary && -n $standby ]] && break
        sleep 0.5
    done
    if [[ -z $primary || -z $standby ]]; then
        echo "ha-cluster.sh: no primary with a synchronous standby within 90 s (logs in $dir/node*/patroni.log)" >&2
        exit 1
    fi
    local n=${primary#node} password
    password="$(cat "$dir/plantstore-password")"
    PGPASSWORD="$(cat "$dir/superuser-password")" psql -X -q -v ON_ERROR_STOP=1 \
        "host=${node_ips[n - 1]} port=$(pg_port "$n") user=postgres dbname=postgres" \
        -c "CREATE ROLE plantstore LOGIN PASSWORD '$password'" \
        -c "CREATE DATABASE plantstore OWNER plantstore" >/dev/null
    # Ready once the standby has replayed it too (a synchronous commit waits for the standby's
    # flush, not its replay).
    local s=${standby#node} replayed=""
    for _ in $(seq 1 60); do
        replayed="$(PGPASSWORD="$(cat "$dir/superuser-password")" psql -X -q -At \
            "host=${node_ips[s - 1]} port=$(pg_port "$s") user=postgres dbname=postgres connect_timeout=2" \
            -c "SELECT 1 FROM pg_database WHERE datname = 'plantstore'" 2>/dev/null || true)"
        [[ $replayed == 1 ]] && break
        sleep 0.5
    done
    local url="host=${node_ips[0]},${node_ips[1]} port=$(pg_port 1),$(pg_port 2)"
    url+=" dbname=plantstore user=plantstore password=$password"
    url+=" target_session_attrs=read-write connect_timeout=2"
    echo "$url" >"$dir/url"
    echo "$url"
}

stop() {
    [[ -d $dir ]] || exit 0
    for n in 1 2; do
        local pids
        pids="$(cat "$dir/node$n/patroni.pid" 2>/dev/null || true) $(postgres_pids "$n")"
        # shellcheck disable=SC2086
        kill -CONT $pids 2>/dev/null || true
        [[ -f $dir/node$n/patroni.pid ]] && kill -TERM "$(cat "$dir/node$n/patroni.pid")" 2>/dev/null || true
    done
    for _ in $(seq 1 100); do
        local alive=0
        for n in 1 2; do
            [[ -f $dir/node$n/patroni.pid ]] && kill -0 "$(cat "$dir/node$n/patroni.pid")" 2>/dev/null && alive=1
        done
        [[ $alive == 0 ]] && break
        sleep 0.1
    done
    for n in 1 2; do
        [[ -f $dir/node$n/patroni.pid ]] && kill -KILL "$(cat "$dir/node$n/patroni.pid")" 2>/dev/null || true
        if [[ -n $(postmaster_pid "$n") ]] && kill -0 "$(postmaster_pid "$n")" 2>/dev/null; then
            (cd / && "${owner[@]}" "$pgbin/pg_ctl" -D "$dir/node$n/data" -m immediate -w -t 30 stop) >/dev/null 2>&1 || true
        fi
    done
    for m in 1 2 3; do
        [[ -f $dir/etcd$m/etcd.pid ]] && kill -TERM "$(cat "$dir/etcd$m/etcd.pid")" 2>/dev/null || true
    done
    for m in 1 2 3; do
        for _ in $(seq 1 50); do
            kill -0 "$(cat "$dir/etcd$m/etcd.pid" 2>/dev/null || echo 0)" 2>/dev/null || break
            sleep 0.1
        done
        [[ -f $dir/etcd$m/etcd.pid ]] && kill -KILL "$(cat "$dir/etcd$m/etcd.pid")" 2>/dev/null || true
    done
}

case "$action" in
    start) start ;;
    primary) node_answering /primary ;;
    sync-standby) node_answering /sync ;;
    node-url)
        n="$(node_number "${3:-}")"
        echo "host=${node_ips[n - 1]} port=$(pg_port "$n") user=postgres password=$(cat "$dir/superuser-password") dbname=plantstore connect_timeout=2"
        ;;
    kill)
        n="$(node_number "${3:-}")"
        main="$(postmaster_pid "$n")"
        kill -KILL "$(cat "$dir/node$n/patroni.pid")" ${main:+"$main"}
        ;;
    freeze)
        n="$(node_number "${3:-}")"
        # shellcheck disable=SC2046
        kill -STOP "$(cat "$dir/node$n/patroni.pid")" $(postgres_pids "$n")
        ;;
    thaw)
        n="$(node_number "${3:-}")"
        case "${4:-}" in
            # shellcheck disable=SC2046
            postgres) kill -CONT $(postgres_pids "$n") ;;
            patroni) kill -CONT "$(cat "$dir/node$n/patroni.pid")" ;;
            *) echo "ha-cluster.sh: thaw DIR NODE postgres|patroni" >&2; exit 2 ;;
        esac
        ;;
    restart)
        n="$(node_number "${3:-}")"
        start_patroni "$n"
        ;;
    stop) stop ;;
    *)
        echo "ha-cluster.sh: unknown action $action" >&2
        exit 2
        ;;
esac
