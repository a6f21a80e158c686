#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster for the tests, the benchmark or a try of
# docs/how-to/scale-out-postgresql.md, never a system one:
#   pg-cluster.sh start DIR            initdb (once) and start a cluster listening only on a
#                                      Unix socket; prints its URL and writes it to DIR/url
#   pg-cluster.sh stop DIR [MODE]      pg_ctl stop (MODE: smart, fast (default) or immediate)
#   pg-cluster.sh start-again DIR      start a stopped cluster again
#   pg-cluster.sh remove DIR [MODE]    stop it (immediate by default) and delete its files
# The cluster itself lives in a short directory of its own under TMPDIR or /tmp (ps-pg.XXXXXX, named
# in DIR/cluster, with DIR/data and DIR/server.log pointing into it): a Unix socket's path is at
# most 107 bytes, and DIR may be deep in a clone. Run as root, the server runs as the
# unprivileged user nobody (PostgreSQL refuses root), who owns that directory: DIR may then be
# where nobody cannot reach (root's home is private). A start that fails prints the cluster's
# log. Binaries from Debian's postgresql-15 (/usr/lib/postgresql/15/bin).
set -euo pipefail
action="${1:?usage: pg-cluster.sh start|stop|start-again|remove DIR [MODE]}"
dir="${2:?usage: pg-cluster.sh start|stop|start-again|remove DIR [MODE]}"
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

# The cluster's own directory, or "" when DIR has none (DIR itself for a cluster made by an
# earlier version of this script, whose data lives in DIR/data).
home() {
    if [[ -f $dir/cluster ]]; then
        cat "$dir/cluster"
    elif [[ -d $dir/data && ! -L $dir/data ]]; then
        echo "$dir"
    fi
}

start_server() {
    local home
    home=$(home)
    # -w waits until it accepts connections; the log stays beside the data for a failed test.
    if ! (cd / && as_owner "$bin/pg_ctl" -D "$home/data" -l "$home/server.log" -w -t 60 \
        start) >/dev/null; then
        echo "pg-cluster.sh: the cluster in $home did not start; its log:" >&2
        tail -n 30 "$home/server.log" >&2 || true
        exit 1
    fi
}

running() {
    local home
    home=$(home)
    [[ -n $home && -d $home/data ]] && (cd / && as_owner "$bin/pg_ctl" -D "$home/data" status) \
        >/dev/null
}

case "$action" in
    start)
        mkdir -p "$dir"
        dir="$(cd "$dir" && pwd)"
        home=$(home)
        if [[ -z $home || ! -d $home/data ]]; then
            # Under TMPDIR when its path is short enough for the socket's (scripts/test.sh
            # gives each run its own, and ends what is left there).
            base=${TMPDIR:-/tmp}
            ((${#base} <= 40)) || base=/tmp
            home=$(mktemp -d "$base/ps-pg.XXXXXX")
            [[ $(id -u) == 0 ]] && chown nobody:nogroup "$home"
            chmod 0700 "$home"
            echo "$home" >"$dir/cluster"
            ln -sfn "$home/data" "$dir/data"
            ln -sfn "$home/server.log" "$dir/server.log"
            if ! (cd / && as_owner "$bin/initdb" -D "$home/data" -U postgres --auth=trust \
                -E UTF8 --locale=C) >"$dir/initdb.log" 2>&1; then
                echo "pg-cluster.sh: initdb failed in $home:" >&2
                cat "$dir/initdb.log" >&2
                exit 1
            fi
            # Only a Unix socket, in the cluster's own directory: nothing listens on the network.
            # fsync and synchronous_commit stay on (the tests check durability).
            as_owner tee -a "$home/data/postgresql.conf" >/dev/null <<CONF
listen_addresses = ''
unix_socket_directories = '$home'
max_connections = 200
shared_buffers = 64MB
log_min_messages = warning
# Statements counted per query (the store's statements-per-batch test; a benchmark's table).
shared_preload_libraries = 'pg_stat_statements'
CONF
        fi
        start_server
        url="host=$home port=5432 user=postgres dbname=postgres"
        echo "$url" >"$dir/url"
        echo "$url"
        ;;
    start-again)
        start_server
        ;;
    stop)
        mode="${3:-fast}"
        # Stopping a cluster that is not running (or does not exist) is done already.
        running || exit 0
        (cd / && as_owner "$bin/pg_ctl" -D "$(home)/data" -m "$mode" -w -t 60 stop) >/dev/null
        ;;
    remove)
        mode="${3:-immediate}"
        home=$(home)
        if running; then
            (cd / && as_owner "$bin/pg_ctl" -D "$home/data" -m "$mode" -w -t 60 stop) \
                >/dev/null || true
        fi
        [[ -n $home && $home == */ps-pg.* ]] && rm -rf "$home"
        rm -rf "$dir/cluster" "$dir/data" "$dir/server.log" "$dir/url"
        ;;
    *)
        echo "pg-cluster.sh: unknown action $action" >&2
        exit 2
        ;;
esac
