#!/usr/bin/env bash
# Installs a pinned goreleaser and a pinned cyclonedx-gomod (the SBOM
# generator .goreleaser.yaml calls; both cached outside the repository, keyed
# by version) and checks the release configuration.
#
#   scripts/release.sh check      goreleaser check
#   scripts/release.sh single     check + a snapshot release of this machine's target only (CI):
#                                 binaries, image, archive, SBOMs and checksums.txt, then checks them
#   scripts/release.sh snapshot   check + a full local snapshot release of every target into dist/
#   scripts/release.sh path       print the goreleaser binary path (installing it)
#   scripts/release.sh release    publish the release of the current tag, signed
#                                 (.github/workflows/release.yml runs it; needs
#                                 GITHUB_TOKEN and cosign on the PATH)
#   scripts/release.sh push-image REGISTRY/REPO:TAG
#                                 push the multi-platform image of the last build
#                                 (dist/qo_image_oci) with crane, logged in with
#                                 `crane auth login` or a Docker config; with
#                                 QO_SIGN_IMAGE=1 cosign then signs the pushed
#                                 index and attests each platform's SBOM to it
#                                 (keyless, or with the key COSIGN_KEY names)
#
# Snapshots are never signed (--skip=sign): a release (`goreleaser release`
# on a tag) signs checksums.txt with cosign, see .goreleaser.yaml.
#
# Every build also makes the container image: .goreleaser.yaml builds a
# second linux binary without the embedded S3 server (-tags nogateway; the
# archives keep the full one), and a post-build hook runs deploy/image, which
# writes it into the OCI layout dist/qo_image_oci. No container engine is
# involved.
set -euo pipefail

GORELEASER_VERSION=v2.16.0
# crane pushes the image; the same release of go-containerregistry that
# deploy/image builds it with (deploy/go.mod).
CRANE_VERSION=v0.22.1
# The SBOMs of .goreleaser.yaml, made from each binary's build information.
CYCLONEDX_GOMOD_VERSION=v1.10.0
cache_root=${QO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/qo}
bin_dir=$cache_root/goreleaser/$GORELEASER_VERSION/bin
goreleaser=$bin_dir/goreleaser

cd "$(dirname "$0")/.."
# The release builds each module as its own go.mod says, whatever local
# go.work a developer keeps (CONTRIBUTING.md, "Three modules").
export GOWORK=off

install() {
	if [[ -x $goreleaser ]]; then
		return
	fi
	echo "release.sh: installing goreleaser $GORELEASER_VERSION into $bin_dir (one-time, a few minutes)" >&2
	mkdir -p "$bin_dir"
	GOBIN=$bin_dir go install "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"
}

# install_sbom puts a pinned cyclonedx-gomod on the PATH of goreleaser's
# sboms step (about a minute on a cold module cache, once per version).
install_sbom() {
	local dir=$cache_root/cyclonedx-gomod/$CYCLONEDX_GOMOD_VERSION/bin
	if [[ ! -x $dir/cyclonedx-gomod ]]; then
		echo "release.sh: installing cyclonedx-gomod $CYCLONEDX_GOMOD_VERSION into $dir (one-time)" >&2
		mkdir -p "$dir"
		GOBIN=$dir go install "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$CYCLONEDX_GOMOD_VERSION"
	fi
	PATH=$dir:$PATH
	export PATH
}

# single_config writes a copy of .goreleaser.yaml whose builds target this
# machine only (goreleaser release has no --single-target), and fails if the
# build matrix lines it rewrites are gone.
single_config() {
	local out=$1 goos goarch
	goos=$(go env GOOS)
	goarch=$(go env GOARCH)
	sed -e "s/^    goos: \[linux, darwin, windows\]\$/    goos: [$goos]/" \
		-e "s/^    goarch: \[amd64, arm64\]\$/    goarch: [$goarch]/" .goreleaser.yaml >"$out"
	if [[ $(grep -c "^    goarch: \[$goarch\]\$" "$out") != 2 || $(grep -c "^    goos: \[$goos\]\$" "$out") -lt 1 ]]; then
		echo "release.sh: .goreleaser.yaml's build matrix (goos/goarch lines) changed: update single_config" >&2
		exit 1
	fi
}

# check_single checks what the snapshot release of this machine's target
# left in dist/: the archive, both SBOMs and checksums.txt listing them with
# their true digests, the SBOMs naming the modules linked in at their go.mod
# versions, and the binary's own build information (go version -m).
check_single() {
	local goos goarch mod ver fail=0 f
	goos=$(go env GOOS)
	goarch=$(go env GOARCH)
	mod=github.com/aws/aws-sdk-go-v2
	ver=$(go list -m -f '{{.Version}}' "$mod")
	shopt -s nullglob
	local archives=(dist/qo_*_"${goos}_${goarch}".tar.gz dist/qo_*_"${goos}_${goarch}".zip)
	local sboms=(dist/qo_*_"${goos}_${goarch}".sbom.cdx.json)
	local bins=(dist/qo_"${goos}_${goarch}"*/qo dist/qo_"${goos}_${goarch}"*/qo.exe)
	shopt -u nullglob
	if [[ ${#archives[@]} != 1 || ${#bins[@]} != 1 || ! -f dist/checksums.txt ]]; then
		echo "release.sh: want one archive, one binary and dist/checksums.txt; have: ${archives[*]} ${bins[*]}" >&2
		exit 1
	fi
	# The archive's SBOM, and the image's on linux.
	local want=1
	[[ $goos == linux ]] && want=2
	if [[ ${#sboms[@]} != "$want" ]]; then
		echo "release.sh: want $want SBOMs for $goos/$goarch, have: ${sboms[*]:-none}" >&2
		exit 1
	fi
	(cd dist && sha256sum --quiet -c checksums.txt) || fail=1
	for f in "${archives[@]}" "${sboms[@]}"; do
		if ! grep -q "  ${f#dist/}\$" dist/checksums.txt; then
			echo "release.sh: checksums.txt does not list ${f#dist/}" >&2
			fail=1
		fi
	done
	for f in "${sboms[@]}"; do
		if ! grep -q "\"pkg:golang/$mod@$ver" "$f"; then
			echo "release.sh: $f does not name $mod@$ver (go.mod)" >&2
			fail=1
		fi
	done
	if ! go version -m "${bins[0]}" | grep -qP "^\tdep\t\Q$mod\E\t\Q$ver\E\t"; then
		echo "release.sh: go version -m ${bins[0]} does not list $mod $ver: the build lost its module information" >&2
		fail=1
	fi
	if [[ $fail != 0 ]]; then
		exit 1
	fi
	echo "release.sh: dist/checksums.txt verified; SBOMs ${sboms[*]#dist/} and the binary's build information name $mod $ver" >&2
}

case ${1:-check} in
check)
	install
	"$goreleaser" check
	;;
single)
	install
	install_sbom
	"$goreleaser" check
	# The full matrix takes a quarter of an hour on two cores; the test
	# command proves the configuration releases one target: the same
	# pipeline as a release (archive, SBOMs, checksums), unsigned.
	cfg=$(mktemp "${TMPDIR:-/tmp}/qo-goreleaser.XXXXXX")
	trap 'rm -f "$cfg"' EXIT
	single_config "$cfg"
	"$goreleaser" release --snapshot --clean --skip=sign -f "$cfg"
	check_single
	;;
snapshot)
	install
	install_sbom
	"$goreleaser" check
	# Two cores: build the matrix one target at a time to keep memory low.
	"$goreleaser" release --snapshot --clean --skip=sign --parallelism 2
	;;
path)
	install
	echo "$goreleaser"
	;;
release)
	install
	install_sbom
	"$goreleaser" check
	"$goreleaser" release --clean --parallelism 2
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
	ref=$("$crane_dir/crane" push dist/qo_image_oci "$tag")
	echo "$ref"
	if [[ ${QO_SIGN_IMAGE:-} != 1 ]]; then
		exit 0
	fi
	# Sign what was pushed, by digest: the index and each platform's image
	# (--recursive), then attest each platform's SBOM (made by the same
	# build, dist/qo_image_*_linux_ARCH.sbom.cdx.json) to its image. cosign
	# comes from the PATH, as for goreleaser's signs; keyless unless
	# COSIGN_KEY names a key.
	key=()
	if [[ -n ${COSIGN_KEY:-} ]]; then
		key=(--key "$COSIGN_KEY")
	fi
	cosign sign --yes --recursive "${key[@]}" "$ref"
	shopt -s nullglob
	sboms=(dist/qo_image_*_linux_*.sbom.cdx.json)
	shopt -u nullglob
	if [[ ${#sboms[@]} == 0 ]]; then
		echo "release.sh: no image SBOM in dist/ to attest" >&2
		exit 1
	fi
	for sbom in "${sboms[@]}"; do
		arch=${sbom%.sbom.cdx.json}
		arch=${arch##*_}
		digest=$("$crane_dir/crane" digest --platform "linux/$arch" "$ref")
		cosign attest --yes --type cyclonedx --predicate "$sbom" "${key[@]}" "${ref%@*}@$digest"
	done
	;;
*)
	echo "usage: scripts/release.sh check|single|snapshot|path|push-image REGISTRY/REPO:TAG" >&2
	exit 2
	;;
esac
