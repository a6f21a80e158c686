#!/usr/bin/env bash
# Installs, with apt-get, the Debian 12 packages plantstore needs that are not installed yet.
# Usage: scripts/install-deps.sh [--tests | --bench | --package | --node]   (what the test suite,
# the benchmark or the Debian package needs besides the build; --node: only Node.js and npm, for
# the OpenAPI lint and the generated-client test, when npx is not already on the PATH)
set -euo pipefail

packages=(g++ cmake ninja-build libboost1.81-dev libboost-json1.81-dev
          libboost-url1.81-dev libsqlite3-dev libssl-dev
          libcli11-dev libtomlplusplus-dev libsystemd-dev libpq-dev libc-ares-dev pkg-config
          libjs-marked)
case "${1:-}" in
    --tests) packages+=(ccache libgtest-dev libbenchmark-dev sqlite3 clang-14 libclang-rt-14-dev
                        clang-tidy debhelper help2man lintian dpkg-dev systemd curl
                        postgresql-15 patroni python3-etcd etcd-server chromium
                        chromium-driver python3-selenium haproxy librapidcheck-dev mkdocs
                        python3 python3-cryptography openssl) ;;
    --package) packages+=(debhelper help2man lintian dpkg-dev) ;;
    --bench) packages+=(wrk nginx-light python3 sqlite3 libbenchmark-dev postgresql-15) ;;
    --node)
        packages=()
        command -v npx >/dev/null || packages=(nodejs npm)
        ;;
esac

missing=()
for package in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done
sudo_cmd=()
[[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
if [[ ${#missing[@]} -gt 0 ]]; then
    echo "plantstore: installing ${missing[*]}" >&2
    "${sudo_cmd[@]}" apt-get update -q
    "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The alert rules' tests need Debian's promtool, from the prometheus package; installing that
# package would also start a system-wide Prometheus, so it is downloaded with apt-get and
# unpacked once into the user's cache (outside any clone, so that the next clone of the tree
# takes it from there), then copied under build/tools.
if [[ ${1:-} == --tests ]]; then
    tools="$(cd "$(dirname "$0")/.." && pwd)/build/tools"
    cached="${XDG_CACHE_HOME:-$HOME/.cache}/plantstore/tools"
    if [[ ! -x $cached/promtool ]]; then
        echo "plantstore: unpacking promtool from Debian's prometheus package into $cached" >&2
        scratch=$(mktemp -d)
        chmod 0755 "$scratch"   # apt-get download runs as _apt when it can
        if ! (cd "$scratch" && apt-get download -q prometheus); then
            "${sudo_cmd[@]}" apt-get update -q
            (cd "$scratch" && apt-get download -q prometheus)
        fi
        dpkg-deb -x "$scratch"/prometheus_*.deb "$scratch/root"
        mkdir -p "$cached"
        cp "$scratch/root/usr/bin/promtool" "$cached/promtool.partial"
        mv "$cached/promtool.partial" "$cached/promtool"
        rm -rf "$scratch"
    fi
    if [[ ! -x $tools/promtool ]]; then
        mkdir -p "$tools"
        cp "$cached/promtool" "$tools/promtool"
    fi
fi
