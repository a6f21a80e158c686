#!/usr/bin/env bash
# The Debian package, end to end: it builds from this tree (scripts/package.sh: debhelper, then
# lintian with no errors), holds exactly the files docs/how-to/debian-service.md lists, installs with dpkg -i
# (as root or through sudo; otherwise it is unpacked with dpkg-deb -x and the install steps are
# skipped, saying so), creates its user and private data directory, has a unit systemd-analyze
# accepts with an exposure of 2.0 or lower, serves a create from the installed binary as the
# service user, and removes and purges cleanly. Usage:
# tests/package/package_test.sh [--prebuilt [BINARY]] (--prebuilt: package a binary already
# built from this tree with the release flags, see scripts/package.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."

fail() { echo "package test: FAILED: $*" >&2; exit 1; }

deb=$(scripts/package.sh "$@" | tail -1)
[[ -f "$deb" ]] || fail "no package built"

page=docs/how-to/debian-service.md
echo "== package test: file list against $page" >&2
expected=$(sed -n '/<!-- package-files -->/,/<!-- \/package-files -->/p' $page |
    grep '^/' | sort)
actual=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $6 }' | sort)
[[ -n "$expected" ]] || fail "$page has no package-files list"
diff <(echo "$expected") <(echo "$actual") >&2 || fail "the package's files differ from the list in $page (< docs, > package)"

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
    if sudo -n true 2>/dev/null; then
        sudo_cmd=(sudo -n)
    else
        echo "package test: not root and no passwordless sudo: unpacking with dpkg-deb -x" \
            "instead of installing (user, directories, removal not tested)" >&2
        scratch=$(mktemp -d)
        trap 'rm -rf "$scratch"' EXIT
        dpkg-deb -x "$deb" "$scratch"
        "$scratch/usr/bin/plantstore" version
        score=$(systemd-analyze security --offline=yes "$scratch/lib/systemd/system/plantstore.service" |
            sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')
        echo "package test: unit exposure $score" >&2
        awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' || fail "exposure $score is above 2.0"
        exit 0
    fi
fi
as_root() { "${sudo_cmd[@]}" "$@"; }

if dpkg-query -W -f='${Status}' plantstore 2>/dev/null | grep -q "installed"; then
    fail "plantstore is installed on this machine already; this test installs and purges it"
fi
server_pid=""
cleanup() {
    [[ -n "$server_pid" ]] && as_root kill "$server_pid" 2>/dev/null
    as_root dpkg --purge plantstore >/dev/null 2>&1 || true  # leave the machine as it was
}
trap cleanup EXIT

echo "== package test: dpkg -i" >&2
as_root dpkg -i "$deb" >&2
getent passwd plantstore >/dev/null || fail "no plantstore user after install"
[[ $(stat -c '%a %U' /var/lib/plantstore) == "700 plantstore" ]] ||
    fail "/var/lib/plantstore is $(stat -c '%a %U' /var/lib/plantstore), not 700 plantstore"
[[ $(stat -c '%a %U %G' /etc/plantstore/plantstore.toml) == "640 root plantstore" ]] ||
    fail "/etc/plantstore/plantstore.toml is $(stat -c '%a %U %G' /etc/plantstore/plantstore.toml)"
dpkg-query -W -f='${Conffiles}\n' plantstore | grep -q "/etc/plantstore/plantstore.toml" ||
    fail "/etc/plantstore/plantstore.toml is not a conffile"

echo "== package test: systemd-analyze" >&2
[[ -f /lib/systemd/system/plantstore.socket ]] || fail "plantstore.socket is not installed"
verify=$(systemd-analyze verify /lib/systemd/system/plantstore.service \
    /lib/systemd/system/plantstore.socket 2>&1) || fail "systemd-analyze verify: $verify"
[[ -z "$verify" ]] || fail "systemd-analyze verify: $verify"
score=$(systemd-analyze security --offline=yes /lib/systemd/system/plantstore.service |
    sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')
echo "package test: systemd-analyze security --offline=yes: overall exposure $score" >&2
awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' || fail "exposure $score is above 2.0"

echo "== package test: the installed binary serves as the service user" >&2
token=$(as_root runuser -u plantstore -- plantstore token create --name package-test \
    --data-dir /var/lib/plantstore)
out=$(mktemp)
# Reads /etc/plantstore/plantstore.toml by default: the data directory is /var/lib/plantstore.
# setpriv executes the server itself (runuser would stay in between and keep it from SIGTERM).
# (Not through as_root: a function in the background would put a subshell in between too.)
"${sudo_cmd[@]}" setpriv --reuid plantstore --regid plantstore --init-groups \
    plantstore serve --listen 127.0.0.1:0 >"$out" 2>/dev/null &
server_pid=$!
address=""
for _ in $(seq 1 100); do  # at most 10 s
    address=$(sed -n 's|^plantstore listening on http://||p' "$out")
    [[ -n "$address" ]] && break
    sleep 0.1
done
[[ -n "$address" ]] || fail "the installed service did not start"
status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' -d '{"id":1,"name":"Packaged fern"}' \
    "http://$address/plants")
[[ "$status" == 200 ]] || fail "POST /plants answered $status"
as_root kill -TERM "$server_pid"
wait "$server_pid" || fail "the service did not stop cleanly on SIGTERM"
server_pid=""
rm -f "$out"
[[ -f /var/lib/plantstore/plantstore.db ]] || fail "the store is not in /var/lib/plantstore"

echo "== package test: remove keeps the data and the user, purge removes both" >&2
as_root dpkg --remove plantstore >&2
[[ ! -e /usr/bin/plantstore ]] || fail "/usr/bin/plantstore left after remove"
[[ -f /var/lib/plantstore/plantstore.db ]] || fail "remove deleted the data"
getent passwd plantstore >/dev/null || fail "remove deleted the user"
as_root dpkg --purge plantstore >&2
[[ ! -e /var/lib/plantstore ]] || fail "purge left /var/lib/plantstore"
[[ ! -e /etc/plantstore ]] || fail "purge left /etc/plantstore"
! getent passwd plantstore >/dev/null || fail "purge left the plantstore user"
echo "package test: passed (lintian clean of errors, exposure $score)" >&2
