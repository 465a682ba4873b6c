#!/usr/bin/env bash
# The fleet simulation at full size (worker/sim): many seeds of real workers
# and monitors in simulated time, with faults, checked at every tick. The
# test command runs a few small seeds; this runs many and prints the report
# that docs/reliability.md quotes.
#
#   scripts/simulate.sh [SEEDS [FIRST]]     default: 200 seeds from 1
#
# Environment:
#   QO_SIM_REPORT   also write the summary as JSON to this file
#   QO_SIM_SIZE     full (default: minutes of load, bursts of up to 1,500 tasks)
#                   or small (the test command's size)
#   QO_SIM_TIMEOUT  go test -timeout (default 60m)
#
# A failing seed is named with the command that runs it alone.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-200}
first=${2:-1}
args=(-sim.seeds "$seeds" -sim.first "$first")
case ${QO_SIM_SIZE:-full} in
full) args+=(-sim.full) ;;
small) ;;
*)
	echo "simulate.sh: error: QO_SIM_SIZE must be full or small, not ${QO_SIM_SIZE}" >&2
	exit 2
	;;
esac
[[ -n ${QO_SIM_REPORT:-} ]] && args+=(-sim.report "$QO_SIM_REPORT")
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
go test -count=1 -timeout "${QO_SIM_TIMEOUT:-60m}" -run '^TestSimulate$' ./worker/sim -v -args "${args[@]}" >"$log" 2>&1 || status=$?
# The seeds' violations and reproduce lines, then the summary.
grep -vE '^(=== (RUN|PAUSE|CONT)|\s*$)' "$log" | grep -vE '^\s+--- PASS' || true
exit "$status"
