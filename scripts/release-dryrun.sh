#!/usr/bin/env bash
# A release dry run: tags this repository's HEAD as VERSION in a temporary clone,
# installs the CLI from that tag exactly as a user would
# (`go install github.com/skiplake/skiplake/cmd/skiplake@VERSION`), and checks that
# `skiplake version` reports VERSION. Nothing is tagged or pushed here, and neither
# the repository nor the user's module cache is touched.
#
# How the tag is found without publishing it: the go command fetches
# github.com/skiplake/skiplake from https://github.com/skiplake/skiplake with git,
# and git's url.<base>.insteadOf (given in GIT_CONFIG_* variables, for this run
# only) points that URL at the temporary clone, so the go command resolves the tag,
# builds the module zip and verifies it as it would from GitHub. GOPRIVATE keeps
# that one module off the public proxy and checksum database; every dependency comes
# from the user's module cache (used as a file:// proxy, then GOPROXY), into a
# temporary module cache, checked against the module's go.sum. -trimpath keeps the
# compiled packages independent of that temporary directory, so a second dry run
# reuses the build cache (the first compiles every dependency once: minutes).
#
# Usage: scripts/release-dryrun.sh [VERSION] [REPO]
#   VERSION  the tag to try (default v0.1.0; a semantic version with a leading v)
#   REPO     the repository (default: the one holding this script); its HEAD is
#            tagged, so uncommitted changes are not in the release
set -euo pipefail
version=${1:-v0.1.0}
repo=$(cd "${2:-$(dirname "$0")/..}" && pwd)
module=github.com/skiplake/skiplake
if ! [[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
	echo "release-dryrun: $version is not a semantic version tag (vMAJOR.MINOR.PATCH)" >&2
	exit 2
fi

work=$(mktemp -d)
cleanup() {
	chmod -R u+w "$work" 2>/dev/null || true # module caches are read-only
	rm -rf "$work"
}
trap cleanup EXIT

echo "== tag $version on a clone of $repo at $(git -C "$repo" rev-parse --short HEAD)"
git clone --quiet --bare --no-hardlinks "$repo" "$work/skiplake.git"
git -C "$work/skiplake.git" tag -a "$version" -m "skiplake $version (release dry run)" HEAD
git -C "$work/skiplake.git" tag --list 'v*'

echo "== go install $module/cmd/skiplake@$version"
userproxy=$(go env GOPROXY)
usercache=$(go env GOMODCACHE)
mkdir -p "$work/gobin" "$work/modcache"
start=$(date +%s)
env GIT_CONFIG_COUNT=1 \
	GIT_CONFIG_KEY_0="url.file://$work/skiplake.git.insteadOf" \
	GIT_CONFIG_VALUE_0="https://$module" \
	GOPRIVATE="$module" \
	GOPROXY="file://$usercache/cache/download,$userproxy" \
	GOMODCACHE="$work/modcache" \
	GOFLAGS="-modcacherw -trimpath" \
	GOBIN="$work/gobin" \
	go install "$module/cmd/skiplake@$version"
echo "installed in $(($(date +%s) - start))s"

echo "== skiplake version"
"$work/gobin/skiplake" version | tee "$work/version.txt"
first=$(head -n 1 "$work/version.txt")
if [[ $first != "skiplake $version ($module)" ]]; then
	echo "release-dryrun: skiplake version printed \"$first\", want \"skiplake $version ($module)\"" >&2
	exit 1
fi
"$work/gobin/skiplake" version --format json
echo "== ok: a user who runs go install $module/cmd/skiplake@$version gets a binary that reports $version"
