#!/usr/bin/env bash
# Runs qo against the S3 servers this machine can install and prints a table.
#
#   bash scripts/compat.sh [--check] [--tasks N] [--no-race | --no-race-refused] [SERVER...]
#   bash scripts/compat.sh --help
#
# For each server it installs the server (cached outside the repository, keyed
# by version), starts it on 127.0.0.1 with a bucket (versioned where the server
# has versioning), then runs with the qo binary built from this checkout:
#
#   doctor   `qo doctor`: its verdict and the first failing check
#   e2e      `qo init`, N tasks through `qo submit --file`, one `qo run-worker`
#            with an exec handler that logs each execution, `qo wait`: how many
#            completed, and executions beyond one per task
#   race     the forced race of two workers over the same N tasks in a bucket
#            of its own (e2e's TestForcedRaceEndpoint): double executions
#
# and prints one line per server: server, version, doctor verdict, e2e, doubles
# and the verdict:
#
#   safe      doctor passed, every task completed, none ran twice and the race's
#             history check found every task's history sound
#   refused   doctor refused the server (the expected answer for a server that
#             ignores conditional writes: the e2e and race columns show why)
#   UNSAFE    doctor passed but a task ran twice
#   failing   doctor passed but the tasks did not all complete, or the race
#             failed otherwise (its history check, a time-out)
#   error     the server did not install or start (see the log above)
#
# With --check the exit code is 1 when a server's verdict is not the one
# expected for it (EXPECTED below), so CI notices a regression either way: a
# safe server refused, or an unsafe one let through. --no-race skips the
# forced race; --no-race-refused skips it only where doctor refused the server
# (on a server that ignores conditions the race cannot finish and gives up
# after two minutes: the manual run shows that, CI need not).
#
# Servers (default: all of them):
#   minio            MinIO (scripts/minio.sh)
#   gateway-xattr    the embedded gateway (versitygw), metadata in user xattrs
#   gateway-sidecar  the same with sidecar metadata (the data dir has meta/)
#   seaweedfs        SeaweedFS `weed server -s3`, built from the Go module proxy
#   gofakes3         gofakes3 (memory backend), built from the Go module proxy
#   rclone           rclone `serve s3` over a directory, built from the Go module proxy
#   s3rver           s3rver (npm)
#   fauxqs           fauxqs (npm)
# Not here: Ceph radosgw and OpenStack Swift with s3api (Debian packages) need a
# cluster (monitors and OSDs) or rings, several daemons and memcached set up
# around them; docs/providers.md gives the results of earlier runs.
#
# Environment:
#   QO_CACHE_DIR           where servers are cached (default ${XDG_CACHE_HOME:-$HOME/.cache}/qo)
#   QO_COMPAT_TASKS        tasks of the e2e run and of the race (default 200; --tasks)
#   QO_COMPAT_E2E_TIMEOUT  seconds the e2e run may wait for its tasks (default 180)
#   QO_COMPAT_RACE_TIMEOUT go test -timeout of one forced race (default 6m)
#   QO_COMPAT_KEEP=1       keep the logs (servers, qo, the race) and say where
set -euo pipefail
# shellcheck disable=SC2317 # servers start through "start_$server", which shellcheck cannot follow
# The whole script is one block, read before it runs: editing the file (a
# checkout, a rebase) while it runs cannot change what it does.
{

cd "$(dirname "$0")/.."

ALL_SERVERS=(minio gateway-xattr gateway-sidecar seaweedfs gofakes3 rclone s3rver fauxqs)
# The verdict each server is expected to get (see docs/providers.md).
declare -A EXPECTED=(
	[minio]=safe
	[gateway-xattr]=safe
	[gateway-sidecar]=safe
	[seaweedfs]=safe
	[gofakes3]=safe
	[rclone]=refused
	[s3rver]=refused
	[fauxqs]=refused
)

# Pinned versions: bump them here (the cache is keyed by them).
SEAWEEDFS_VERSION=v0.0.0-20261109003541-7506e5f91cd6 # SeaweedFS 4.53
GOFAKES3_VERSION=v1.2.0
RCLONE_VERSION=v1.75.1
S3RVER_VERSION=3.7.1
FAUXQS_VERSION=1.9.2 # 2.x needs Node 22.5 (node:sqlite)

# Fixed test credentials: every server listens on 127.0.0.1 and holds test data.
ACCESS_KEY=qocompat
SECRET_KEY=qocompat-secret
REGION=us-east-1
BUCKET="qo-compat"
RACE_BUCKET="qo-compat-race"

cache_root=${QO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/qo}
tasks=${QO_COMPAT_TASKS:-200}
e2e_timeout=${QO_COMPAT_E2E_TIMEOUT:-180}
race_timeout=${QO_COMPAT_RACE_TIMEOUT:-6m}
check=0
race=1
race_refused=1

say() { echo "compat.sh: $*" >&2; }
die() {
	echo "compat.sh: error: $*" >&2
	exit 1
}

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

servers=()
while (($# > 0)); do
	case $1 in
	-h | --help)
		usage
		exit 0
		;;
	--check) check=1 ;;
	--no-race) race=0 ;;
	--no-race-refused) race_refused=0 ;;
	--tasks)
		(($# >= 2)) || die "--tasks needs a number"
		tasks=$2
		shift
		;;
	--tasks=*) tasks=${1#--tasks=} ;;
	-*) die "unknown option $1 (see --help)" ;;
	*)
		[[ -n ${EXPECTED[$1]+x} ]] || die "unknown server '$1': pick from ${ALL_SERVERS[*]}"
		servers+=("$1")
		;;
	esac
	shift
done
[[ $e2e_timeout =~ ^[1-9][0-9]*$ ]] || die "QO_COMPAT_E2E_TIMEOUT must be a number of seconds, got '$e2e_timeout'"
[[ $tasks =~ ^[1-9][0-9]*$ ]] || die "--tasks (QO_COMPAT_TASKS) must be a positive number, got '$tasks'"
((${#servers[@]} > 0)) || servers=("${ALL_SERVERS[@]}")

for tool in go curl jq; do
	command -v "$tool" >/dev/null || die "$tool is required (apt-get install $tool, or the Go toolchain for go)"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/qo-compat.XXXXXX")
pids=()          # processes this script started, stopped on exit
server_pids=()   # the servers among them (and MinIO's)
minio_state=""   # scripts/minio.sh's state directory while MinIO runs

stop_servers() {
	local pid i
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		for i in $(seq 1 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	pids=() server_pids=()
	if [[ -n $minio_state ]]; then
		bash scripts/minio.sh stop "$minio_state" || true
		minio_state=""
	fi
}
if [[ ${QO_COMPAT_KEEP:-} == 1 ]]; then
	trap 'stop_servers; say "logs kept in $work"' EXIT
else
	trap 'stop_servers; rm -rf "$work"' EXIT
fi

# --- helpers -----------------------------------------------------------------

# servers_alive: every server process this script started still runs.
servers_alive() {
	local pid
	for pid in "${server_pids[@]}"; do
		kill -0 "$pid" 2>/dev/null || return 1
	done
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port: a port on 127.0.0.1 that nothing listens on, below 55000 (some
# servers listen on PORT+10000 too).
free_port() {
	local p i
	for i in $(seq 1 200); do
		p=$((20000 + RANDOM % 35000))
		if ! port_in_use "$p" && ! port_in_use $((p + 10000)); then
			echo "$p"
			return
		fi
	done
	die "could not find a free port on 127.0.0.1"
}

# wait_port PORT PID SECONDS LOG: wait until PORT accepts connections while PID lives.
wait_port() {
	local port=$1 pid=$2 deadline=$((SECONDS + $3)) log=$4
	while ((SECONDS < deadline)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			say "the server exited during startup; its log:"
			tail -n 30 "$log" | sed 's/^/  | /' >&2
			return 1
		fi
		port_in_use "$port" && return 0
		sleep 0.2
	done
	say "the server did not listen on 127.0.0.1:$port within $3s; its log:"
	tail -n 30 "$log" | sed 's/^/  | /' >&2
	return 1
}

# s3 METHOD PATH [BODY]: a signed request to the current server; prints the
# HTTP status. curl signs the payload with the hash it is given.
s3() {
	local method=$1 path=$2 body=${3:-} hash
	hash=$(printf %s "$body" | sha256sum | cut -d' ' -f1)
	curl -sS -o "$work/s3.out" -w '%{http_code}' --max-time 30 \
		--aws-sigv4 "aws:amz:$REGION:s3" -u "$ACCESS_KEY:$SECRET_KEY" \
		-H "x-amz-content-sha256: $hash" -X "$method" --data-binary "$body" \
		"$endpoint$path" || echo 000
}

# make_bucket NAME: create the bucket (an existing one is fine) and, where the
# server has versioning, turn it on and read it back.
make_bucket() {
	local name=$1 code
	code=$(s3 PUT "/$name")
	case $code in
	200 | 409) ;;
	*)
		say "creating bucket $name: HTTP $code: $(head -c 300 "$work/s3.out")"
		return 1
		;;
	esac
	if ((versioned || set_versioning)); then
		code=$(s3 PUT "/$name?versioning=" '<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>')
		[[ $code == 200 ]] || {
			say "enabling versioning on $name: HTTP $code: $(head -c 300 "$work/s3.out")"
			return 1
		}
	fi
}

# start_bg LOG CMD...: start CMD in the background (its own process group),
# remember its pid in $bg_pid and in pids.
start_bg() {
	local log=$1
	shift
	"$@" </dev/null >"$log" 2>&1 &
	bg_pid=$!
	pids+=("$bg_pid")
}

# start_server LOG CMD...: start_bg for a server process (servers_alive checks it).
start_server() {
	start_bg "$@"
	server_pids+=("$bg_pid")
}

go_install() { # DIR PACKAGE@VERSION
	local dir=$1 pkg=$2 start=$SECONDS
	mkdir -p "$dir"
	say "installing $pkg into $dir (one-time build)"
	GOBIN=$dir CGO_ENABLED=0 go install "$pkg" >&2 || {
		say "go install $pkg failed (the Go module proxy must be reachable)"
		return 1
	}
	say "installed $pkg in $((SECONDS - start))s"
}

npm_install() { # DIR PACKAGE@VERSION
	local dir=$1 pkg=$2 start=$SECONDS
	command -v npm >/dev/null || {
		say "npm is required for $pkg (apt-get install npm)"
		return 1
	}
	mkdir -p "$dir"
	say "installing $pkg into $dir"
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$pkg" >&2 || {
		say "npm install $pkg failed"
		return 1
	}
	say "installed $pkg in $((SECONDS - start))s"
}

# --- servers -------------------------------------------------------------------
# start_NAME sets endpoint, version and versioned (1: the server has bucket
# versioning, 0: qo runs with QO_ALLOW_NO_VERSIONING=1, so doctor's first
# failure is about conditional writes), starts the server and
# creates the bucket (the forced race creates its own and versions it).

start_minio() {
	local env
	version=$(sed -n 's/^MINIO_VERSION=//p' scripts/minio.sh)
	versioned=1
	bash scripts/minio.sh install
	env=$(bash scripts/minio.sh start) || return 1
	minio_state=$(sed -n 's/^export QO_MINIO_STATE_DIR=//p' <<<"$env")
	server_pids+=("$(cat "$minio_state/minio.pid")")
	endpoint=$(sed -n 's/^export QO_TEST_S3_ENDPOINT=//p' <<<"$env")
	ACCESS_KEY=$(sed -n 's/^export QO_TEST_S3_ACCESS_KEY=//p' <<<"$env")
	SECRET_KEY=$(sed -n 's/^export QO_TEST_S3_SECRET_KEY=//p' <<<"$env")
	make_bucket "$BUCKET"
}

# start_gateway xattr|sidecar: `qo gateway` on a fresh data directory; sidecar
# mode is what the gateway picks when the directory already has meta/.
start_gateway() {
	local mode=$1 dir=$work/gateway-$1 port i
	version="versitygw $(go list -m -f '{{.Version}}' github.com/versity/versitygw)"
	versioned=1
	mkdir -p "$dir/data"
	[[ $mode == sidecar ]] && mkdir -p "$dir/data/meta"
	port=$(free_port)
	start_server "$dir/log" env QO_GATEWAY_ACCESS_KEY="$ACCESS_KEY" QO_GATEWAY_SECRET_KEY="$SECRET_KEY" \
		"$qo" gateway --data-dir "$dir/data" --addr "127.0.0.1:$port" --bucket "$BUCKET" --region "$REGION"
	for i in $(seq 1 300); do
		grep -q '^AWS_SECRET_ACCESS_KEY=' "$dir/log" 2>/dev/null && break
		kill -0 "$bg_pid" 2>/dev/null || break
		sleep 0.1
	done
	grep -q '^AWS_SECRET_ACCESS_KEY=' "$dir/log" || {
		say "qo gateway did not start; its log:"
		sed 's/^/  | /' "$dir/log" >&2
		return 1
	}
	endpoint=http://127.0.0.1:$port
	if [[ $mode == xattr && -d $dir/data/meta ]]; then
		say "the gateway chose sidecar metadata: this filesystem has no user xattrs"
		return 1
	fi
}
start_gateway-xattr() { start_gateway xattr; }
start_gateway-sidecar() { start_gateway sidecar; }

# SeaweedFS's go.mod has replace directives, so `go install pkg@version` is
# refused: build its weed command inside the module instead.
install_seaweedfs() {
	local bin=$1 src tmp start=$SECONDS
	say "building SeaweedFS $SEAWEEDFS_VERSION into ${bin%/*} (one-time build)"
	src=$(go mod download -json "github.com/seaweedfs/seaweedfs@$SEAWEEDFS_VERSION" | jq -r '.Dir // empty')
	[[ -n $src ]] || {
		say "go mod download github.com/seaweedfs/seaweedfs@$SEAWEEDFS_VERSION failed"
		return 1
	}
	tmp=$(mktemp -d "$work/seaweedfs-src.XXXXXX")
	cp -r "$src/." "$tmp/"
	chmod -R u+w "$tmp"
	mkdir -p "${bin%/*}"
	(cd "$tmp" && CGO_ENABLED=0 go build -o "$bin.tmp" ./weed) >&2 || {
		say "building weed failed"
		return 1
	}
	mv "$bin.tmp" "$bin"
	rm -rf "$tmp"
	say "built weed in $((SECONDS - start))s"
}

start_seaweedfs() {
	local weed=$cache_root/seaweedfs/$SEAWEEDFS_VERSION/bin/weed dir=$work/seaweedfs
	local mport vport fport sport
	[[ -x $weed ]] || install_seaweedfs "$weed" || return 1
	version="SeaweedFS $("$weed" version 2>/dev/null | awk '{print $3; exit}')"
	versioned=1
	mkdir -p "$dir/data"
	mport=$(free_port) vport=$(free_port) fport=$(free_port) sport=$(free_port)
	# No -s3.config: the S3 gateway accepts any signature.
	start_server "$dir/log" "$weed" server -dir="$dir/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
		-master.port="$mport" -volume.port="$vport" -filer.port="$fport" -s3 -s3.port="$sport" \
		-master.volumeSizeLimitMB=64 -volume.max=20
	wait_port "$sport" "$bg_pid" 120 "$dir/log" || return 1
	endpoint=http://127.0.0.1:$sport
	# The S3 port opens before the filer is ready: retry the first bucket.
	local i
	for i in $(seq 1 60); do
		make_bucket "$BUCKET" 2>/dev/null && break
		sleep 1
	done
	make_bucket "$BUCKET"
}

start_gofakes3() {
	local bin=$cache_root/gofakes3/$GOFAKES3_VERSION/bin/gofakes3 dir=$work/gofakes3 port
	[[ -x $bin ]] || go_install "${bin%/*}" "github.com/johannesboyne/gofakes3/cmd/gofakes3@$GOFAKES3_VERSION" || return 1
	version="gofakes3 $GOFAKES3_VERSION"
	versioned=1
	mkdir -p "$dir"
	port=$(free_port)
	# The memory backend is the one with versioning; gofakes3 checks no signature.
	start_server "$dir/log" "$bin" -backend memory -host "127.0.0.1:$port"
	wait_port "$port" "$bg_pid" 30 "$dir/log" || return 1
	endpoint=http://127.0.0.1:$port
	make_bucket "$BUCKET"
}

start_rclone() {
	local bin=$cache_root/rclone/$RCLONE_VERSION/bin/rclone dir=$work/rclone port
	[[ -x $bin ]] || go_install "${bin%/*}" "github.com/rclone/rclone@$RCLONE_VERSION" || return 1
	version="rclone ${RCLONE_VERSION}"
	versioned=0 # rclone serve s3 has no versioning
	mkdir -p "$dir/data"
	port=$(free_port)
	start_server "$dir/log" "$bin" serve s3 "$dir/data" --addr "127.0.0.1:$port" \
		--auth-key "$ACCESS_KEY,$SECRET_KEY" --config /dev/null
	wait_port "$port" "$bg_pid" 30 "$dir/log" || return 1
	endpoint=http://127.0.0.1:$port
	make_bucket "$BUCKET"
}

start_s3rver() {
	local dir=$work/s3rver pkg=$cache_root/s3rver/$S3RVER_VERSION port
	[[ -x $pkg/node_modules/.bin/s3rver ]] || npm_install "$pkg" "s3rver@$S3RVER_VERSION" || return 1
	version="s3rver $S3RVER_VERSION"
	versioned=0 # s3rver has no versioning
	mkdir -p "$dir/data"
	port=$(free_port)
	# s3rver knows one key pair, S3RVER/S3RVER.
	ACCESS_KEY=S3RVER SECRET_KEY=S3RVER
	start_server "$dir/log" "$pkg/node_modules/.bin/s3rver" -d "$dir/data" -a 127.0.0.1 -p "$port" --silent --no-vhost-buckets
	wait_port "$port" "$bg_pid" 30 "$dir/log" || return 1
	endpoint=http://127.0.0.1:$port
	make_bucket "$BUCKET"
}

start_fauxqs() {
	local dir=$work/fauxqs pkg=$cache_root/fauxqs/$FAUXQS_VERSION port
	[[ -f $pkg/node_modules/fauxqs/dist/cli.js ]] || npm_install "$pkg" "fauxqs@$FAUXQS_VERSION" || return 1
	version="fauxqs $FAUXQS_VERSION"
	# fauxqs answers 200 to PUT ?versioning and keeps no versions: the bucket
	# gets the request all the same, and qo runs without history.
	versioned=0 set_versioning=1
	mkdir -p "$dir"
	# fauxqs listens on 0.0.0.0 with no option to change it: a preload moves
	# its listener to 127.0.0.1.
	cat >"$dir/loopback.cjs" <<'EOF'
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (args[0] && typeof args[0] === "object" && args[0].host === "0.0.0.0") {
    args[0] = { ...args[0], host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
EOF
	port=$(free_port)
	start_server "$dir/log" env FAUXQS_PORT="$port" FAUXQS_LOGGER=false node --require "$dir/loopback.cjs" "$pkg/node_modules/fauxqs/dist/cli.js"
	wait_port "$port" "$bg_pid" 30 "$dir/log" || return 1
	if command -v ss >/dev/null && ss -Hltn "sport = :$port" | awk '{print $4}' | grep -qv '^127\.0\.0\.1:'; then
		say "fauxqs listens beyond 127.0.0.1 (ss -ltn): refusing to go on"
		return 1
	fi
	endpoint=http://127.0.0.1:$port
	make_bucket "$BUCKET"
}

# --- the runs ------------------------------------------------------------------

# qo_env CMD...: CMD in the environment that points qo at the current
# server's bucket (and at nothing else).
qo_env() {
	env "${qo_vars[@]}" "$@"
}
set_qo_vars() {
	qo_vars=(-u AWS_PROFILE -u AWS_SESSION_TOKEN
		S3_ENDPOINT="$endpoint" S3_BUCKET="$BUCKET" S3_REGION="$REGION" S3_PATH_STYLE=true
		AWS_ACCESS_KEY_ID="$ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$SECRET_KEY"
		AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true
		QO_ALLOW_NO_VERSIONING=$((1 - versioned)))
}

# run_doctor: sets doctor_ok (1/0) and doctor_col.
run_doctor() {
	local out=$work/$server-doctor.json first
	doctor_ok=0
	qo_env "$qo" doctor --json --timeout 90s >"$out" 2>"$work/$server-doctor.err" || true
	if ! jq -e . "$out" >/dev/null 2>&1; then
		doctor_col="no report: $(head -c 80 "$work/$server-doctor.err" | tr '\n' ' ')"
		return
	fi
	if [[ $(jq -r '.ok' "$out") == true ]]; then
		doctor_ok=1
		doctor_col="ok"
		return
	fi
	first=$(jq -r '[.checks[] | select(.status == "fail")][0] | "\(.name): \(.detail)"' "$out")
	doctor_col="fail ($(cut -c1-90 <<<"$first"))"
	say "doctor: $first"
}

# run_e2e: sets e2e_col (completed/N, reruns) and e2e_done.
run_e2e() {
	local dir=$work/$server-e2e handler worker i ids crashed=0
	rm -rf "$dir"
	mkdir -p "$dir"
	e2e_done=0
	if ! qo_env "$qo" init --json >"$dir/init.out" 2>"$dir/init.err"; then
		e2e_col="init refused"
		say "qo init: $(tail -n 3 "$dir/init.err")"
		return
	fi
	handler=$dir/handler.sh
	# shellcheck disable=SC2016 # the handler expands them, not this script
	printf '#!/bin/sh\ncat >/dev/null\necho "$QO_TASK_ID" >>"$COMPAT_LOG"\n' >"$handler"
	chmod +x "$handler"
	: >"$dir/executions.log"
	for i in $(seq 1 "$tasks"); do
		printf '{"type":"compat","input":{"n":%d},"timeout_seconds":300}\n' "$i"
	done >"$dir/tasks.jsonl"
	if ! qo_env "$qo" submit --file "$dir/tasks.jsonl" --json >"$dir/submit.json" 2>"$dir/submit.err"; then
		e2e_col="submit failed"
		say "qo submit: $(tail -n 3 "$dir/submit.err")"
		return
	fi
	ids=$(jq -r '.ids[]?' "$dir/submit.json")
	start_bg "$dir/worker.log" env "${qo_vars[@]}" "$qo" run-worker --exec "compat=$handler" \
		--env "COMPAT_LOG=$dir/executions.log" --concurrency 8
	worker=$bg_pid
	# qo wait until every task ended or the time is up; a wait that stops on
	# an error (a read the server broke) is started again for the rest.
	local deadline=$((SECONDS + e2e_timeout)) rest=$ids left
	: >"$dir/wait.out"
	while [[ -n $rest ]] && ((SECONDS < deadline)) && servers_alive; do
		qo_env "$qo" wait - --timeout "$((deadline - SECONDS))s" <<<"$rest" >>"$dir/wait.out" 2>>"$dir/wait.err" || true
		left=$(grep -vFf <(awk '{print $1}' "$dir/wait.out") <<<"$rest" || true)
		[[ $left == "$rest" ]] && sleep 1
		rest=$left
	done
	kill -TERM "$worker" 2>/dev/null || true
	wait "$worker" 2>/dev/null || true
	e2e_done=$(grep -c ' completed$' "$dir/wait.out" || true)
	servers_alive || crashed=1
	local runs uniq
	runs=$(grep -c . "$dir/executions.log" || true)
	uniq=$(sort -u "$dir/executions.log" | grep -c . || true)
	e2e_col="$e2e_done/$tasks"
	((runs > uniq)) && e2e_col+=" (+$((runs - uniq)) reruns)"
	((crashed)) && e2e_col+=", the server crashed"
	return 0
}

# run_race: sets race_doubles (a number, or empty), race_ok (1: the harness
# passed: no double execution and every task's history sound) and race_col.
run_race() {
	local log=$work/$server-race.log rc=0 line problem
	race_doubles="" race_ok=0
	if ((!race)); then
		race_col="not run"
		return
	fi
	if [[ ! -x $work/e2e.test ]]; then
		race_col="no harness"
		return
	fi
	(cd e2e && env QO_E2E_BINARY="$qo" QO_RACE_ENDPOINT="$endpoint" QO_RACE_BUCKET="$RACE_BUCKET" \
		QO_RACE_ACCESS_KEY="$ACCESS_KEY" QO_RACE_SECRET_KEY="$SECRET_KEY" QO_RACE_REGION="$REGION" \
		QO_RACE_TASKS="$tasks" QO_ALLOW_NO_VERSIONING=$((1 - versioned)) \
		"$work/e2e.test" -test.run '^TestForcedRaceEndpoint$' -test.v -test.count=1 \
		-test.timeout "$race_timeout") >"$log" 2>&1 || rc=$?
	line=$(grep -o 'forced race: [0-9]* tasks, [0-9]* double executions' "$log" | tail -n 1 || true)
	if [[ -n $line ]]; then
		race_doubles=$(awk '{print $5}' <<<"$line")
		race_col="$race_doubles of $tasks"
		if ((rc == 0)); then
			race_ok=1
		elif [[ $race_doubles == 0 ]]; then
			# No task ran twice, but the history checker found a problem.
			problem=$(grep -oE 'version [0-9]+: [^:]+' "$log" | head -n 1 || true)
			race_col+=", check failed${problem:+: $problem}"
		fi
	elif grep -q 'panic: test timed out' "$log"; then
		race_col="timed out ($race_timeout)"
	else
		# The harness stopped before counting: say why (a test's message,
		# else testify's error, the line after "Received unexpected error:").
		problem=$(grep -oE '^\s+[a-z_]+_test\.go:[0-9]+: [^- ].*' "$log" | grep -v 'output of' | head -n 1 |
			sed -E 's/^\s+[a-z_]+_test\.go:[0-9]+: //' || true)
		[[ -n $problem ]] || problem=$(awk '/Error:/{sub(/.*Error:[ \t]*/, ""); if ($0 ~ /unexpected error:$/) {getline; sub(/^[ \t]*/, "")} print; exit}' "$log")
		race_col="no result${problem:+: $(cut -c1-70 <<<"$problem")}"
	fi
	if ((rc != 0)); then
		say "forced race failed (exit $rc); its failures:"
		# The test's own messages and testify's failure blocks, not the
		# workers' logs.
		grep -vE '^\s*(\{"time"|[0-9/]+ [0-9:]+ Unsolicited)' "$log" | grep -vE '^\s*$' |
			head -n 40 | cut -c1-240 | sed 's/^/  | /' >&2
	fi
}

# --- main ------------------------------------------------------------------------

say "building qo and the e2e test binary"
qo=$work/qo
go build -o "$qo" . || die "building qo failed"
if ((race)) && grep -q 'func TestForcedRaceEndpoint' e2e/*_test.go 2>/dev/null; then
	# e2e is a module of its own: built in its directory, into an absolute path.
	go test -C e2e -c -o "$(cd "$work" && pwd)/e2e.test" . || die "building the e2e tests failed"
fi

rows=()
status=0 passed=0 failed=0
for server in "${servers[@]}"; do
	say "=== $server"
	started=$SECONDS
	endpoint="" version="?" versioned=1 set_versioning=0
	ACCESS_KEY=qocompat SECRET_KEY=qocompat-secret
	doctor_col="-" e2e_col="-" race_col="-" verdict=error
	if "start_$server"; then
		say "$server ($version) at $endpoint"
		set_qo_vars
		run_doctor
		run_e2e
		if ! servers_alive; then
			race_doubles="" race_ok=0 race_col="not run: the server crashed"
		elif ((doctor_ok || race_refused)); then
			run_race
		else
			race_doubles="" race_ok=0 race_col="skipped (refused)"
		fi
		if ((doctor_ok)); then
			if [[ -n $race_doubles && $race_doubles != 0 ]] || [[ $e2e_col == *reruns* ]]; then
				verdict=UNSAFE
			elif ((e2e_done != tasks)) || { ((race)) && ((!race_ok)); }; then
				verdict=failing
			else
				verdict=safe
			fi
		else
			verdict=refused
		fi
	fi
	stop_servers
	say "$server: $verdict ($((SECONDS - started))s)"
	((versioned)) || doctor_col+=" [no versioning]"
	rows+=("$server"$'\t'"$version"$'\t'"$doctor_col"$'\t'"$e2e_col"$'\t'"$race_col"$'\t'"$verdict")
	if [[ $verdict == "${EXPECTED[$server]}" ]]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		say "$server: verdict $verdict, expected ${EXPECTED[$server]}"
		((check)) && status=1
	fi
done

{
	printf 'server\tversion\tdoctor\te2e (completed)\trace (doubles)\tverdict\n'
	printf '%s\n' "${rows[@]}"
} | if command -v column >/dev/null; then column -t -s $'\t'; else cat; fi
# A closing line CI runners read: servers whose verdict was the expected one.
((check)) && echo "compat: $passed passed, $failed failed"
exit "$status"
}
