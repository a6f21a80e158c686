#!/usr/bin/env bash
# Installs, with apt-get, the Debian 12 packages plantstore needs that are not installed yet.
# Usage: scripts/install-deps.sh [--tests | --bench | --package | --node]   (what the test suite,
# the benchmark or the Debian package needs besides the build; --node: only Node.js and npm, for
# the OpenAPI lint and the generated-client test, when npx is not already on the PATH)
set -euo pipefail

packages=(g++ cmake ninja-build libboost1.81-dev libboost-json1.81-dev
          libboost-url1.81-dev libsqlite3-dev libssl-dev
          libcli11-dev libtomlplusplus-dev libsystemd-dev libpq-dev pkg-config libjs-marked)
case "${1:-}" in
    --tests) packages+=(libgtest-dev libbenchmark-dev sqlite3 clang-14 libclang-rt-14-dev
                        clang-tidy debhelper help2man lintian dpkg-dev systemd curl
                        postgresql-15 patroni python3-etcd etcd-server chromium
                        chromium-driver python3-selenium haproxy librapidcheck-dev mkdocs
                        python3 openssl) ;;
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
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "plantstore: installing ${missing[*]}" >&2
sudo_cmd=()
[[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
