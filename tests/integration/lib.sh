# lib.sh - shared helpers for integration tests (sourced). Each test runs its
# own cluster through deploy/local-cluster, the way users start one.
set -euo pipefail
TOP=${DEPFS_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export DEPFS_BIN_DIR=${DEPFS_BIN_DIR:-$TOP/build/bin}
export DEPFS_STATE=${DEPFS_STATE:-/tmp/depfs-it-$$}
export DEPFS_BASE_PORT=${DEPFS_BASE_PORT:-7600}
LC="$TOP/deploy/local-cluster"
CONF="$DEPFS_STATE/depfs.conf"
MNT="$DEPFS_STATE/mnt"

log() { echo "[$(date +%T)] $*"; }
fail() { echo "FAIL: $*"; exit 1; }
depfs() { "$DEPFS_BIN_DIR/depfs" --config "$CONF" "$@"; }

cluster_up() {
  "$LC" down >/dev/null 2>&1 || true
  rm -rf "$DEPFS_STATE"
  "$LC" up "$@" || { tail -n 30 "$DEPFS_STATE"/logs/*.log 2>/dev/null; fail "cluster did not start"; }
  mountpoint -q "$MNT" || fail "not mounted at $MNT"
}
cluster_down() { "$LC" down >/dev/null 2>&1 || true; }
on_exit() {
  local rc=$?
  if [ $rc -ne 0 ] && [ -d "$DEPFS_STATE/logs" ]; then
    for f in "$DEPFS_STATE"/logs/*.log; do echo "---- $f"; tail -n 15 "$f"; done
  fi
  cluster_down
  [ $rc -eq 0 ] && rm -rf "$DEPFS_STATE"
  exit $rc
}
trap on_exit EXIT

# Every integration test ends here: parity consistent everywhere.
scrub_clean() {
  log "scrub --all"
  depfs scrub --all || fail "scrub found inconsistent or unreadable stripes"
}

# ---- helpers for the fault-injection tests (test_fault_*.sh)
FAULTLOAD="$TOP/tests/integration/faultload.py"
LIBDEPFS_SO="$DEPFS_BIN_DIR/../lib/libdepfs.so"
now_ms() { date +%s%3N; }
# conf_ms KEY DEFAULT: a config value (ms) from $CONF, or the documented default.
conf_ms() {
  local v
  v=$(awk -v k="$1" '$1 == k && $2 == "=" {print $3}' "$CONF" | tail -1)
  echo "${v:-$2}"
}
# t_HB + 2*t_T: the detection bound of the issue.
detect_bound_ms() { echo $(( $(conf_ms heartbeat_period_ms 500) + 2 * $(conf_ms request_timeout_ms 2000) )); }
status_json() { timeout 60 "$DEPFS_BIN_DIR/depfs" --config "$CONF" status --json; }
# server_state ID: up|down|rebuilding as `depfs status` reports it ("?" if it cannot).
server_state() {
  status_json 2>/dev/null | python3 -c 'import json,sys
d=json.load(sys.stdin); print(next((s["state"] for s in d["servers"] if s["id"]==int(sys.argv[1])), "?"))' "$1" 2>/dev/null || echo "?"
}
# states_line: "0=up 1=down ..." for logs and waits.
states_line() {
  status_json 2>/dev/null | python3 -c 'import json,sys
d=json.load(sys.stdin); print(" ".join("{}={}".format(s["id"], s["state"]) for s in d["servers"]))' 2>/dev/null || echo "status unavailable"
}
locks_held() {
  status_json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["totals"]["locks_held"])' 2>/dev/null || echo "?"
}
# wait_all_up TIMEOUT_S: until every server is "up"; fails with the states seen.
wait_all_up() {
  local limit=$1 start=$SECONDS line seen=""
  while :; do
    line=$(states_line)
    [ "$line" = "$seen" ] || { log "states: $line"; seen=$line; }
    if [[ "$line" != "status unavailable" ]] && ! [[ " $line" =~ =(down|rebuilding|\?) ]]; then
      return 0
    fi
    [ $((SECONDS - start)) -lt "$limit" ] || fail "not every server is up after ${limit}s: $line"
    sleep 0.5
  done
}
# wait_state ID STATE TIMEOUT_S: until server ID shows STATE; prints the ms it took.
wait_state() {
  local id=$1 want=$2 limit_ms=$(( $3 * 1000 )) t0 st
  t0=$(now_ms)
  while :; do
    st=$(server_state "$id")
    [ "$st" = "$want" ] && { echo $(( $(now_ms) - t0 )); return 0; }
    [ $(( $(now_ms) - t0 )) -lt "$limit_ms" ] || { echo "server $id is '$st', not '$want', after $3 s" >&2; return 1; }
    sleep 0.1
  done
}
io_dir() { awk -v id="$1" '$1 == "ioserver" && $3 == id {print $5}' "$CONF"; }
# file_servers /PATH: the file's ordered server list, space separated.
file_servers() { depfs layout get "$1" | sed -E 's/.*servers=([0-9,]+).*/\1/' | tr , ' '; }
# verify_all REF [faultload verify options]: the mount and a fresh libdepfs
# client both read every reference file right.
verify_all() {
  local ref=$1; shift
  python3 "$FAULTLOAD" verify "$MNT" "$ref" --lib "$LIBDEPFS_SO" --conf "$CONF" "$@" ||
    fail "files differ from the reference"
}
# The fault tests need the recovery module: local-cluster runs without it when it is not built.
require_recovery() {
  [ -x "$DEPFS_BIN_DIR/depfs-recovery" ] || fail "$DEPFS_BIN_DIR/depfs-recovery is not built: the fault tests need the recovery module"
}
# settle_clients: a client keeps a server it saw fail as down for
# server_down_expiry_ms (the documented status-vector expiry), even after the
# cluster calls it up again; wait that long before asking the mount for
# stripes that need a server it saw fail.
settle_clients() { sleep "$(awk -v ms="$(conf_ms server_down_expiry_ms 5000)" 'BEGIN { print ms / 1000 + 0.5 }')"; }
# kill_down ID: SIGKILL I/O server ID and wait until the cluster calls it down
# (so a later restart is a return from a known failure, not a blip).
kill_down() {
  "$LC" kill "$1"
  wait_state "$1" down 30 >/dev/null || fail "server $1 not marked down within 30 s of SIGKILL"
}
