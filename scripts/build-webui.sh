#!/usr/bin/env bash
# Builds the web UI's embedded assets (webui/dist) from webui/src with the
# pinned tools of webui/package-lock.json. The output is checked in; CI runs
# this and fails when the result differs (bash scripts/build-webui.sh --check).
set -euo pipefail
cd "$(dirname "$0")/../webui"

check=false
[[ "${1:-}" == "--check" ]] && check=true

npm ci --no-audit --no-fund --loglevel=error >/dev/null
out=dist
$check && out=$(mktemp -d)
mkdir -p "$out"
npx --no-install esbuild src/app.js --bundle --format=esm --target=es2022 --legal-comments=none \
	--log-level=warning --outfile="$out/app.js"
cp src/index.html src/style.css "$out/"

if $check; then
	if ! diff -r dist "$out" >/dev/null; then
		diff -r dist "$out" | head -20 >&2 || true
		echo "build-webui: webui/dist is out of date: run bash scripts/build-webui.sh and commit webui/dist" >&2
		rm -rf "$out"
		exit 1
	fi
	rm -rf "$out"
	echo "build-webui: webui/dist matches its sources"
fi
