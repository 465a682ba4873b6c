#!/usr/bin/env bash
# THE test command for qo (README and .ci/run call exactly this).
#
# On a fresh machine with only the Go toolchain it installs what the tests need
# (MinIO, built once into a cache outside the repository), starts a throwaway
# MinIO on 127.0.0.1, runs go vet (also of the container image's build),
# staticcheck, a gofmt check, the web UI's build check and JavaScript tests, the
# release check with a snapshot build (the binary and its container image), the
# whole test suite with the race detector, and scripts/compat.sh against a few
# S3 servers, stops MinIO and exits with the test status.
#
# Environment:
#   QO_CACHE_DIR       where tools are cached (default ${XDG_CACHE_HOME:-$HOME/.cache}/qo)
#   QO_TEST_TIMEOUT    go test -timeout (default 30m)
#   QO_TEST_PKGS       packages to test (default ./...)
set -euo pipefail

cd "$(dirname "$0")/.."

step() { echo "==> $*" >&2; }

command -v go >/dev/null || {
	echo "test.sh: error: the Go toolchain is required (go not found in PATH)" >&2
	exit 1
}

# --- System packages -------------------------------------------------------
# Tools the tests drive that do not come with Go (e.g. tmux for terminal UI
# tests, chromium for the web UI) are installed here with apt-get. Each entry
# is "command:debian-package"; only missing commands are installed.
SYSTEM_PACKAGES=(
	"zsh:zsh"   # shell completion scripts are run in real shells
	"fish:fish"
	"tmux:tmux"         # the console is driven in a real terminal
	"chromium:chromium" # the web UI is driven in a real browser
	"node:nodejs"       # the web UI's build and unit tests
	"npm:npm"
	"curl:curl" # scripts/compat.sh signs its bucket requests with curl
	"jq:jq"     # and reads qo's JSON with jq
)

install_system_packages() {
	local missing=() entry cmd pkg
	for entry in "${SYSTEM_PACKAGES[@]}"; do
		cmd=${entry%%:*}
		pkg=${entry#*:}
		command -v "$cmd" >/dev/null || missing+=("$pkg")
	done
	((${#missing[@]} == 0)) && return
	step "installing system packages: ${missing[*]}"
	local sudo=()
	((EUID == 0)) || sudo=(sudo -n)
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

if ((${#SYSTEM_PACKAGES[@]} > 0)); then
	install_system_packages
fi

# --- MinIO -------------------------------------------------------------------
step "MinIO"
bash scripts/minio.sh install
minio_env=$(bash scripts/minio.sh start)
eval "$minio_env"
trap 'bash scripts/minio.sh stop "$QO_MINIO_STATE_DIR" || true' EXIT
export QO_TEST_REQUIRE_S3=1

# --- Static checks -------------------------------------------------------------
step "go vet ./... (linux, and windows + darwin: the release targets)"
go vet ./...
GOOS=windows go vet ./...
GOOS=darwin go vet ./...

# The container image's qo is built with -tags nogateway (.goreleaser.yaml):
# vet that build too, and test the gateway package's stub in it, so the
# variant cannot rot between releases.
step "go vet -tags nogateway ./... and the tests of the gateway stub and of qo dev without it (the container image's build)"
go vet -tags nogateway ./...
go test -tags nogateway -count=1 ./store/gateway
go test -tags nogateway -count=1 -run TestStartWithoutGateway ./devenv

step "staticcheck"
STATICCHECK_VERSION=v0.8.2
staticcheck_bin=${QO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/qo}/staticcheck/$STATICCHECK_VERSION/bin
if [[ ! -x $staticcheck_bin/staticcheck ]]; then
	mkdir -p "$staticcheck_bin"
	GOBIN=$staticcheck_bin go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi
"$staticcheck_bin/staticcheck" ./...

step "gofmt"
unformatted=$(find . -name '*.go' -not -path './.git/*' -not -path '*/testdata/*' -print0 | xargs -0 -r gofmt -l)
if [[ -n $unformatted ]]; then
	echo "test.sh: these files are not gofmt-formatted (run gofmt -w on them):" >&2
	echo "$unformatted" | sed 's/^/  /' >&2
	exit 1
fi

# --- Release ---------------------------------------------------------------------
# goreleaser (pinned, cached outside the repository) checks .goreleaser.yaml and
# builds this machine's target as a snapshot (the full matrix is for releases:
# scripts/release.sh snapshot).
step "web UI: built assets match their sources; JavaScript unit tests"
bash scripts/build-webui.sh --check
(cd webui && node --test test/)

step "goreleaser check + a release of this machine's target (snapshot, unsigned): archive, SBOMs, checksums, container image"
bash scripts/release.sh single >&2
# deploy/image's test unpacks that image and runs qo in it.
export QO_TEST_REQUIRE_IMAGE=1

# --- Tests ---------------------------------------------------------------------
step "go test -race ${QO_TEST_PKGS:-./...}"
status=0
# shellcheck disable=SC2086 # QO_TEST_PKGS is a space-separated package list
# One package at a time (-p 1): the process and chaos tests load the machine
# on their own, and leases of a second or two must not expire because
# another package's tests starve them of CPU.
go test -race -count=1 -p 1 -timeout "${QO_TEST_TIMEOUT:-30m}" ${QO_TEST_PKGS:-./...} || status=$?

# --- Servers -------------------------------------------------------------------
# qo against S3 servers beside the test MinIO (docs/providers.md): the embedded
# gateway in both metadata modes, gofakes3 (safe) and s3rver (ignores
# conditional writes: doctor must refuse it), each with its expected verdict.
# The full list is the manual `bash scripts/compat.sh`.
step "scripts/compat.sh: doctor, 200 tasks and the forced race per server"
bash scripts/compat.sh --check --no-race-refused minio gateway-xattr gateway-sidecar gofakes3 s3rver || status=1
exit "$status"
