#!/usr/bin/env bash
# Installs a pinned goreleaser (cached outside the repository, keyed by
# version) and checks the release configuration.
#
#   scripts/release.sh check      goreleaser check
#   scripts/release.sh single     check + a snapshot build of this machine's target only (CI)
#   scripts/release.sh snapshot   check + a full local snapshot build of every target into dist/
#   scripts/release.sh path       print the goreleaser binary path (installing it)
#   scripts/release.sh push-image REGISTRY/REPO:TAG
#                                 push the multi-platform image of the last build
#                                 (dist/qo_image_oci) with crane, logged in with
#                                 `crane auth login` or a Docker config
#
# Every build also makes the container image: .goreleaser.yaml builds a
# second linux binary without the embedded S3 server (-tags nogateway; the
# archives keep the full one), and a post-build hook runs deploy/image, which
# writes it into the OCI layout dist/qo_image_oci. No container engine is
# involved.
set -euo pipefail

GORELEASER_VERSION=v2.16.0
# crane pushes the image; the same release of go-containerregistry that
# deploy/image builds it with (go.mod).
CRANE_VERSION=v0.22.1
cache_root=${QO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/qo}
bin_dir=$cache_root/goreleaser/$GORELEASER_VERSION/bin
goreleaser=$bin_dir/goreleaser

cd "$(dirname "$0")/.."

install() {
	if [[ -x $goreleaser ]]; then
		return
	fi
	echo "release.sh: installing goreleaser $GORELEASER_VERSION into $bin_dir (one-time, a few minutes)" >&2
	mkdir -p "$bin_dir"
	GOBIN=$bin_dir go install "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"
}

case ${1:-check} in
check)
	install
	"$goreleaser" check
	;;
single)
	install
	"$goreleaser" check
	# The full matrix takes a quarter of an hour on two cores; the test
	# command proves the configuration builds with one target.
	"$goreleaser" build --snapshot --clean --single-target
	;;
snapshot)
	install
	"$goreleaser" check
	# Two cores: build the matrix one target at a time to keep memory low.
	"$goreleaser" release --snapshot --clean --parallelism 2
	;;
path)
	install
	echo "$goreleaser"
	;;
push-image)
	tag=${2:?usage: scripts/release.sh push-image REGISTRY/REPO:TAG}
	if [[ ! -f dist/qo_image_oci/index.json ]]; then
		echo "release.sh: no image in dist/qo_image_oci: run scripts/release.sh snapshot (or a release) first" >&2
		exit 1
	fi
	crane_dir=$cache_root/crane/$CRANE_VERSION/bin
	if [[ ! -x $crane_dir/crane ]]; then
		mkdir -p "$crane_dir"
		GOBIN=$crane_dir go install "github.com/google/go-containerregistry/cmd/crane@$CRANE_VERSION"
	fi
	"$crane_dir/crane" push dist/qo_image_oci "$tag"
	;;
*)
	echo "usage: scripts/release.sh check|single|snapshot|path|push-image REGISTRY/REPO:TAG" >&2
	exit 2
	;;
esac
