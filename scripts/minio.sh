#!/usr/bin/env bash
# Installs and runs a throwaway MinIO server for qo's integration tests.
#
#   scripts/minio.sh install            build MinIO once into the cache (a few minutes cold)
#   scripts/minio.sh path               print the MinIO binary path (installing it)
#   scripts/minio.sh start [PORT [CONSOLE_PORT]]
#                                       start MinIO on 127.0.0.1 (free ports unless given)
#                                       and print the variables the tests read, ready for
#                                       eval "$(scripts/minio.sh start)"
#   scripts/minio.sh stop [STATE_DIR]   stop the server started by `start` and delete its
#                                       data (STATE_DIR defaults to $QO_MINIO_STATE_DIR)
#
# The binary is cached outside the repository, keyed by version:
#   ${QO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/qo}/minio/<version>/bin/minio
#
# `start` prints (on stdout, everything else goes to stderr):
#   export QO_TEST_S3_ENDPOINT=http://127.0.0.1:PORT
#   export QO_TEST_S3_ACCESS_KEY=... QO_TEST_S3_SECRET_KEY=... QO_TEST_S3_REGION=us-east-1
#   export QO_MINIO_STATE_DIR=...   (data, log and pid file; `stop` removes it)
set -euo pipefail

MINIO_MODULE=github.com/minio/minio
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
# Fixed test credentials: this server only ever listens on 127.0.0.1 and holds test data.
ACCESS_KEY=qoadmin
SECRET_KEY=qoadmin-secret
REGION=us-east-1
READY_TIMEOUT=${QO_MINIO_READY_TIMEOUT:-60} # seconds

cache_root=${QO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/qo}
bin_dir=$cache_root/minio/$MINIO_VERSION/bin
minio=$bin_dir/minio

say() { echo "minio.sh: $*" >&2; }
die() {
	echo "minio.sh: error: $*" >&2
	exit 1
}

install() {
	if [[ -x $minio ]]; then
		return
	fi
	command -v go >/dev/null || die "the Go toolchain is required to build MinIO (go not found in PATH)"
	say "installing MinIO $MINIO_VERSION into $bin_dir (one-time build, about 6 minutes on 2 cores)"
	mkdir -p "$bin_dir"
	# go install builds in its own work directory and only then moves the finished
	# binary into GOBIN, so a concurrent build into the same directory is harmless.
	if ! GOBIN=$bin_dir CGO_ENABLED=0 go install "$MINIO_MODULE@$MINIO_VERSION" >&2; then
		die "go install $MINIO_MODULE@$MINIO_VERSION failed (see the output above); the Go module proxy must be reachable"
	fi
	[[ -x $minio ]] || die "go install finished but $minio does not exist"
	say "installed $minio"
}

# port_in_use PORT: true when something accepts connections on 127.0.0.1:PORT.
port_in_use() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# free_port: a port on 127.0.0.1 that nothing listens on right now.
free_port() {
	local p i
	for i in $(seq 1 200); do
		p=$((20000 + RANDOM % 40000))
		if ! port_in_use "$p"; then
			echo "$p"
			return
		fi
	done
	die "could not find a free port on 127.0.0.1"
}

# ready PORT: true when MinIO answers its readiness probe with 200.
ready() (
	local line
	exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
	printf 'GET /minio/health/ready HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
	IFS= read -r -t 2 line <&3 || exit 1
	[[ $line == "HTTP/1."?" 200"* ]]
) 2>/dev/null

# try_start STATE PORT CONSOLE_PORT: start MinIO and wait until it is ready.
# Returns 0 when ready, 2 when the port was taken (caller may retry), 1 otherwise.
try_start() {
	local state=$1 port=$2 console=$3 pid deadline
	: >"$state/minio.log"
	MINIO_ROOT_USER=$ACCESS_KEY MINIO_ROOT_PASSWORD=$SECRET_KEY MINIO_REGION=$REGION \
		MINIO_UPDATE=off MINIO_CALLHOME_ENABLE=off \
		nohup "$minio" server --quiet --anonymous \
		--address "127.0.0.1:$port" --console-address "127.0.0.1:$console" \
		"$state/data" </dev/null >>"$state/minio.log" 2>&1 &
	pid=$!
	echo "$pid" >"$state/minio.pid"
	deadline=$((SECONDS + READY_TIMEOUT))
	while ((SECONDS < deadline)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid" 2>/dev/null || true
			if grep -qiE "address already in use|port is already in use|bind:" "$state/minio.log"; then
				return 2
			fi
			say "MinIO exited during startup; its log:"
			sed 's/^/  | /' "$state/minio.log" >&2
			return 1
		fi
		if ready "$port"; then
			return 0
		fi
		sleep 0.2
	done
	say "MinIO did not become ready on 127.0.0.1:$port within ${READY_TIMEOUT}s; its log:"
	sed 's/^/  | /' "$state/minio.log" >&2
	kill -KILL "$pid" 2>/dev/null || true
	return 1
}

start() {
	local want_port=${1:-} want_console=${2:-} state port console attempt rc
	if [[ -n $want_port && ! $want_port =~ ^[0-9]+$ ]]; then
		die "PORT must be a number, got '$want_port' (usage: scripts/minio.sh start [PORT [CONSOLE_PORT]])"
	fi
	if [[ -n $want_console && ! $want_console =~ ^[0-9]+$ ]]; then
		die "CONSOLE_PORT must be a number, got '$want_console'"
	fi
	install
	if [[ -n $want_port ]] && port_in_use "$want_port"; then
		die "port $want_port on 127.0.0.1 is already in use; pick another or omit PORT to use a free one"
	fi
	state=$(mktemp -d "${TMPDIR:-/tmp}/qo-minio.XXXXXX")
	mkdir -p "$state/data"
	for attempt in 1 2 3 4 5; do
		port=${want_port:-$(free_port)}
		console=${want_console:-$(free_port)}
		if [[ $console == "$port" ]]; then
			continue
		fi
		rc=0
		try_start "$state" "$port" "$console" || rc=$?
		if ((rc == 0)); then
			break
		fi
		if ((rc == 2)) && [[ -z $want_port || -z $want_console ]]; then
			say "port $port or $console was taken meanwhile; retrying ($attempt/5)"
			continue
		fi
		rm -rf "$state"
		die "could not start MinIO (see above)"
	done
	if ((rc != 0)); then
		rm -rf "$state"
		die "could not start MinIO after 5 attempts"
	fi
	say "MinIO ready at http://127.0.0.1:$port (console http://127.0.0.1:$console, pid $(cat "$state/minio.pid"), state $state)"
	cat <<EOF
export QO_TEST_S3_ENDPOINT=http://127.0.0.1:$port
export QO_TEST_S3_ACCESS_KEY=$ACCESS_KEY
export QO_TEST_S3_SECRET_KEY=$SECRET_KEY
export QO_TEST_S3_REGION=$REGION
export QO_MINIO_STATE_DIR=$state
EOF
}

stop() {
	local state=${1:-${QO_MINIO_STATE_DIR:-}} pid i
	[[ -n $state ]] || die "no state directory: pass it or set QO_MINIO_STATE_DIR (printed by 'start')"
	if [[ ! -d $state ]]; then
		say "nothing to stop: $state does not exist"
		return
	fi
	if [[ -f $state/minio.pid ]]; then
		pid=$(cat "$state/minio.pid")
		if kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null || true
			for i in $(seq 1 50); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.2
			done
			if kill -0 "$pid" 2>/dev/null; then
				say "MinIO (pid $pid) did not stop within 10s; killing it"
				kill -KILL "$pid" 2>/dev/null || true
			fi
		fi
	fi
	rm -rf "$state"
	say "stopped MinIO and removed $state"
}

case ${1:-} in
install)
	install
	;;
path)
	install
	echo "$minio"
	;;
start)
	shift
	start "$@"
	;;
stop)
	shift
	stop "$@"
	;;
*)
	echo "usage: scripts/minio.sh install | path | start [PORT [CONSOLE_PORT]] | stop [STATE_DIR]" >&2
	exit 2
	;;
esac
