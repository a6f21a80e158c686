#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster for the tests, the benchmark or a try of
# docs/how-to/scale-out-postgresql.md, never a system one:
#   pg-cluster.sh start DIR            initdb in DIR/data (once), start it listening only on a
#                                      Unix socket in DIR; prints and writes DIR/url
#   pg-cluster.sh stop DIR [MODE]      pg_ctl stop (MODE: smart, fast (default) or immediate)
#   pg-cluster.sh start-again DIR      start a stopped cluster again
# Run as root, the server runs as the unprivileged user nobody (PostgreSQL refuses root).
# Binaries from Debian's postgresql-15 (/usr/lib/postgresql/15/bin).
set -euo pipefail
action="${1:?usage: pg-cluster.sh start|stop|start-again DIR [MODE]}"
dir="${2:?usage: pg-cluster.sh start|stop|start-again DIR [MODE]}"
bin=/usr/lib/postgresql/15/bin
if [[ ! -x $bin/initdb ]]; then
    echo "pg-cluster.sh: $bin/initdb not found (install postgresql-15: scripts/install-deps.sh --tests, or apt-get install postgresql-15)" >&2
    exit 1
fi

as_owner() {
    if [[ $(id -u) == 0 ]]; then
        setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"
    else
        "$@"
    fi
}

start_server() {
    # -w waits until it accepts connections; the log stays in DIR for a failed test to show.
    (cd / && as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start) >/dev/null
}

case "$action" in
    start)
        mkdir -p "$dir"
        dir="$(cd "$dir" && pwd)"
        [[ $(id -u) == 0 ]] && chown nobody:nogroup "$dir"
        chmod 0700 "$dir"
        if [[ ! -d $dir/data ]]; then
            (cd / && as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 \
                --locale=C) >"$dir/initdb.log"
            # Only a Unix socket in DIR: nothing listens on the network. fsync and
            # synchronous_commit stay on (the tests check durability).
            cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$dir'
max_connections = 200
shared_buffers = 64MB
log_min_messages = warning
CONF
        fi
        start_server
        url="host=$dir port=5432 user=postgres dbname=postgres"
        echo "$url" >"$dir/url"
        echo "$url"
        ;;
    start-again)
        start_server
        ;;
    stop)
        mode="${3:-fast}"
        # Stopping a cluster that is not running (or does not exist) is done already.
        [[ -d $dir/data ]] && (cd / && as_owner "$bin/pg_ctl" -D "$dir/data" status) >/dev/null ||
            exit 0
        (cd / && as_owner "$bin/pg_ctl" -D "$dir/data" -m "$mode" -w -t 60 stop) >/dev/null
        ;;
    *)
        echo "pg-cluster.sh: unknown action $action" >&2
        exit 2
        ;;
esac
