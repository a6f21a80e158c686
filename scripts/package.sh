#!/usr/bin/env bash
# Builds the Debian package plantstore_<version>_<arch>.deb into build/package/ with debhelper
# (debian/), from the tracked files of this tree (uncommitted changes to them included), then
# runs lintian on it. Usage: scripts/package.sh [--prebuilt [BINARY]]
# --prebuilt packages BINARY (default build/release/plantstore) instead of building it again: a
# build of this tree with the release preset's flags, which debian/rules would use. The test
# command passes build/dev/plantstore, the dev preset's binary (the release flags plus the
# tests), so the package ships the binary its tests ran.
# Installs the build dependencies it lacks (scripts/install-deps.sh --package).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --package

version=$(sed -n 's/^project(plantstore VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
changelog_version=$(dpkg-parsechangelog -S Version)
if [[ "$version" != "$changelog_version" ]]; then
    echo "package: CMakeLists.txt says $version, debian/changelog $changelog_version" >&2
    exit 1
fi

out="$PWD/build/package"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$work/plantstore-$version"
# The tracked files as they are now: a stash commit when there are changes, HEAD otherwise.
snapshot=$(git stash create)
git archive "${snapshot:-HEAD}" | tar -x -C "$work/plantstore-$version"
if [[ ${1:-} == --prebuilt ]]; then
    binary=${2:-build/release/plantstore}
    [[ -x $binary ]] || { echo "package: no $binary" >&2; exit 1; }
    install -D -m 0755 "$binary" "$work/plantstore-$version/prebuilt/plantstore"
fi

echo "== package: dpkg-buildpackage (release build, man page, configuration)" >&2
(cd "$work/plantstore-$version" && dpkg-buildpackage -us -uc -b -j2 >"$work/build.log" 2>&1) || {
    tail -40 "$work/build.log" >&2
    exit 1
}
arch=$(dpkg --print-architecture)
deb="plantstore_${version}_${arch}.deb"
cp "$work/$deb" "$out/$deb"

echo "== package: lintian" >&2
# Errors fail the build; every warning left is explained in docs/how-to/debian-service.md.
lintian --fail-on error --tag-display-limit 0 "$out/$deb" | tee "$out/lintian.txt" >&2 || {
    echo "package: lintian reports errors (above)" >&2
    exit 1
}
echo "package: $out/$deb ($(wc -l <"$out/lintian.txt") lintian lines)" >&2
echo "$out/$deb"
