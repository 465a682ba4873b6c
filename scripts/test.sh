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
# Every Go step runs in every Go module of the repository: the root (the
# library and the qo binary) and the nested modules e2e/ and deploy/, which
# are modules of their own so that what only they need (chromedp, toxiproxy,
# the Kubernetes API, go-containerregistry) stays out of the library's
# go.mod. `go test ./...` does not enter a nested module, hence the loop.
# There is no go.work: each module is checked as its own go.mod resolves it,
# which is what a program importing qo, and the release build, get.
#
# Environment:
#   QO_CACHE_DIR       where tools are cached (default ${XDG_CACHE_HOME:-$HOME/.cache}/qo)
#   QO_TEST_TIMEOUT    go test -timeout (default 30m)
#   QO_TEST_PKGS       packages to test, as paths from the repository root
#                      (default: every package of every module; ./e2e/... runs
#                      in the e2e module)
set -euo pipefail

cd "$(dirname "$0")/.."
# A local go.work (CONTRIBUTING.md) would resolve every module together.
export GOWORK=off

step() { echo "==> $*" >&2; }

# The Go modules of the repository, "." (the root) first.
mapfile -t modules < <(find . -name go.mod -not -path './.git/*' -not -path '*/testdata/*' -not -path '*/node_modules/*' |
	sed -e 's#^\./##' -e 's#/\?go\.mod$##' -e 's#^$#.#' | LC_ALL=C sort)

# in_modules CMD...: runs CMD in each module's directory, stopping at the
# first failure.
in_modules() {
	local m
	for m in "${modules[@]}"; do
		(cd "$m" && "$@") || {
			echo "test.sh: in module $m: $* failed" >&2
			return 1
		}
	done
}

# module_pkgs MODULE: the packages of QO_TEST_PKGS (./... unset) that lie in
# MODULE, as paths relative to it; each path belongs to the innermost
# module whose directory holds it.
module_pkgs() {
	local mod=$1 p rel owner m
	if [[ -z ${QO_TEST_PKGS:-} ]]; then
		echo ./...
		return
	fi
	for p in $QO_TEST_PKGS; do
		rel=${p#./}
		owner=.
		for m in "${modules[@]}"; do
			if [[ $m != . && ($rel == "$m" || $rel == "$m"/*) && ${#m} -gt ${#owner} ]]; then
				owner=$m
			fi
		done
		[[ $owner == "$mod" ]] || continue
		if [[ $mod == . ]]; then
			echo "$p"
		else
			rel=${rel#"$mod"}
			rel=${rel#/}
			echo "${rel:+./}${rel:-.}"
		fi
	done
}

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
step "modules: ${modules[*]}; go mod tidy -diff in each (go.mod and go.sum say exactly what the module needs)"
in_modules go mod tidy -diff

step "go vet ./... in every module (linux, and windows + darwin: the release targets)"
in_modules go vet ./...
GOOS=windows in_modules go vet ./...
GOOS=darwin in_modules go vet ./...

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
in_modules "$staticcheck_bin/staticcheck" ./...

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
status=0
# One package at a time (-p 1), one module after another: the process and
# chaos tests load the machine on their own, and leases of a second or two
# must not expire because another package's tests starve them of CPU.
for m in "${modules[@]}"; do
	mapfile -t pkgs < <(module_pkgs "$m")
	((${#pkgs[@]} > 0)) || continue
	step "go test -race ${pkgs[*]} (module $m)"
	(cd "$m" && go test -race -count=1 -p 1 -timeout "${QO_TEST_TIMEOUT:-30m}" "${pkgs[@]}") || status=1
done

# --- Servers -------------------------------------------------------------------
# qo against S3 servers beside the test MinIO (docs/providers.md): the embedded
# gateway in both metadata modes, gofakes3 (safe) and s3rver (ignores
# conditional writes: doctor must refuse it), each with its expected verdict.
# The full list is the manual `bash scripts/compat.sh`.
step "scripts/compat.sh: doctor, 200 tasks and the forced race per server"
bash scripts/compat.sh --check --no-race-refused minio gateway-xattr gateway-sidecar gofakes3 s3rver || status=1
exit "$status"
