# lib.sh - shared helpers for integration tests (sourced). Each test runs its
# own cluster through deploy/local-cluster, the way users start one.
set -euo pipefail
TOP=${DEPFS_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export DEPFS_BIN_DIR=${DEPFS_BIN_DIR:-$TOP/build/bin}
export DEPFS_STATE=${DEPFS_STATE:-/tmp/depfs-it-$$}
export DEPFS_BASE_PORT=${DEPFS_BASE_PORT:-7600}
LC="$TOP/deploy/local-cluster"
# what the raw-frame tools (authwire.py) authenticate with, as depfs-recovery does
export DEPFS_CLUSTER_KEY=${DEPFS_CLUSTER_KEY:-$DEPFS_STATE/cluster.key}
CONF="$DEPFS_STATE/depfs.conf"
MNT="$DEPFS_STATE/mnt"

# ---- DEPFS_VALGRIND=1: every daemon (mds, ioservers, recovery, fuse) runs
# under valgrind memcheck, one log per daemon process in $VG_LOGS; teardown
# stops them with SIGTERM and fails on any valgrind error, definite leak or
# daemon that did not exit cleanly. Waits scale by DEPFS_TIME_FACTOR (default
# 10 under valgrind, 1 otherwise); what is checked stays the same.
DEPFS_VALGRIND=${DEPFS_VALGRIND:-0}
VG_DAEMONS="depfs-mds depfs-ioserver depfs-recovery depfs-fuse"
VG_DIR="$DEPFS_STATE/valgrind"
VG_BIN="$VG_DIR/bin"
VG_LOGS="$VG_DIR/logs"
VG_EXIT=97
VG_DEFAULT_TIME_FACTOR=10
VG_LOG_PREAMBLE_LINES=7 # valgrind's banner and command line at the top of each log
if [ "$DEPFS_VALGRIND" = 1 ]; then
  command -v valgrind >/dev/null || { echo "FAIL: DEPFS_VALGRIND=1 but valgrind is not installed (make deps installs it)"; exit 1; }
  DEPFS_TIME_FACTOR=${DEPFS_TIME_FACTOR:-$VG_DEFAULT_TIME_FACTOR}
else
  DEPFS_TIME_FACTOR=${DEPFS_TIME_FACTOR:-1}
fi
# tscale S: S seconds scaled by the time factor.
tscale() { echo $(( $1 * DEPFS_TIME_FACTOR )); }
# local-cluster's own start/stop waits (its defaults are 20 / 10 s).
export DEPFS_START_TIMEOUT=${DEPFS_START_TIMEOUT:-$(tscale 20)}
export DEPFS_STOP_TIMEOUT=${DEPFS_STOP_TIMEOUT:-$(tscale 10)}

log() { echo "[$(date +%T)] $*"; }
fail() { echo "FAIL: $*"; exit 1; }
depfs() { "$DEPFS_BIN_DIR/depfs" --config "$CONF" "$@"; }

# vg_wrappers: $VG_BIN holds one script per daemon that execs it under
# valgrind (same pid, so local-cluster's signals reach it), and the CLI as is.
vg_wrappers() {
  local d
  mkdir -p "$VG_BIN" "$VG_LOGS"
  ln -sf "$DEPFS_BIN_DIR/depfs" "$VG_BIN/depfs"
  for d in $VG_DAEMONS; do
    [ -x "$DEPFS_BIN_DIR/$d" ] || continue
    {
      echo '#!/usr/bin/env bash'
      echo "# written by tests/integration/lib.sh (DEPFS_VALGRIND=1): $d under memcheck"
      echo "tag=$d; prev="
      echo 'for a in "$@"; do [ "$prev" = --id ] && tag=$tag-$a; prev=$a; done'
      printf 'exec valgrind --error-exitcode=%s --leak-check=full --errors-for-leak-kinds=definite' "$VG_EXIT"
      printf ' --track-fds=no --num-callers=30 --log-file=%q/"$tag".%%p.log %q "$@"\n' \
        "$VG_LOGS" "$DEPFS_BIN_DIR/$d"
    } > "$VG_BIN/$d"
    chmod +x "$VG_BIN/$d"
  done
}
# lc ARGS: deploy/local-cluster, with the daemons under valgrind when asked
# (restarts reuse the recorded command line, so they stay under it).
lc() {
  if [ "$DEPFS_VALGRIND" = 1 ]; then DEPFS_BIN_DIR="$VG_BIN" "$LC" "$@"; else "$LC" "$@"; fi
}

cluster_up() {
  cluster_down || fail "a daemon's memory checker reported errors or leaks, or a daemon did not stop cleanly"
  rm -rf "$DEPFS_STATE"
  VG_CHECKED=0
  CLUSTER_STARTED=1
  [ "$DEPFS_VALGRIND" != 1 ] || { vg_wrappers; VG_STARTED=1; }
  lc up "$@" || { tail -n 30 "$DEPFS_STATE"/logs/*.log 2>/dev/null; fail "cluster did not start"; }
  mountpoint -q "$MNT" || fail "not mounted at $MNT"
}
# Stops the cluster and checks the daemons' logs: status 1 when one shows a
# sanitizer report (make asan) or, under valgrind, an error, a definite leak
# or an unclean exit.
cluster_down() {
  local rc=0
  if [ "$VG_STARTED" = 1 ] && [ -d "$VG_LOGS" ]; then
    vg_down_check || rc=1
  else
    "$LC" down >/dev/null 2>&1 || true
  fi
  [ "$CLUSTER_STARTED" != 1 ] || san_check || rc=1
  return $rc
}
CLUSTER_STARTED=0 # this test started a cluster (older logs are not its own)
SAN_REPORT_RE='ERROR: (AddressSanitizer|LeakSanitizer)|runtime error: '
# san_check: no daemon log holds an ASan/LSan/UBSan report; prints them.
san_check() {
  local f bad=0
  for f in "$DEPFS_STATE"/logs/*.log; do
    [ -e "$f" ] && grep -qE "$SAN_REPORT_RE" "$f" || continue
    echo "sanitizer report in $f:"
    grep -m1 -A40 -E "$SAN_REPORT_RE" "$f"
    bad=1
  done
  [ "$bad" -eq 0 ]
}

# vg_live_pids: pids of the cluster's daemons that are alive now.
vg_live_pids() {
  local f pid
  for f in "$DEPFS_STATE"/pids/*.pid; do
    [ -e "$f" ] || continue
    [ "$(basename "$f")" != munge.pid ] || continue # munged is not ours to check
    pid=$(cat "$f" 2>/dev/null) || continue
    kill -0 "$pid" 2>/dev/null && echo "$pid"
  done
  return 0
}
# vg_log_bad LOG: prints why LOG shows a valgrind error or definite leak, if
# it does. A log without a summary is a daemon killed with SIGKILL (by the
# test): the errors it reported before that still count.
VG_ERROR_RE='== (Invalid (read|write|free)|Conditional jump|Use of uninitialised|Syscall param|Mismatched free|Source and destination overlap|Argument .* of function|Process terminating with default action of signal (4|6|7|8|11) )'
vg_log_bad() {
  local log=$1
  if grep -qE '== ERROR SUMMARY: [1-9]' "$log"; then
    grep -E '== ERROR SUMMARY' "$log" | tail -1
  elif grep -qE "$VG_ERROR_RE" "$log"; then
    grep -m1 -E "$VG_ERROR_RE" "$log"
  fi
  if grep -qE 'definitely lost: [1-9]' "$log"; then grep -E 'definitely lost' "$log" | tail -1; fi
}
# vg_down_check: SIGTERM every daemon (local-cluster down); each one alive
# until then must exit by itself with a full valgrind summary, and no log may
# show an error or a definite leak. Returns 1 (keeping the logs) otherwise.
VG_STARTED=0 # this test started a cluster under valgrind
VG_CHECKED=0 # its logs were checked: 1 clean, 2 not
vg_down_check() {
  local pids pid log bad=0 why out
  pids=$(vg_live_pids)
  # on_exit after the test's own check: nothing new to look at
  if [ "$VG_CHECKED" != 0 ] && [ -z "$pids" ]; then
    "$LC" down >/dev/null 2>&1 || true
    [ "$VG_CHECKED" = 1 ]; return
  fi
  out=$("$LC" down 2>&1) || true
  if grep -q "ignored SIGTERM" <<<"$out"; then
    echo "valgrind: $(grep "ignored SIGTERM" <<<"$out")"; bad=1
  fi
  for pid in $pids; do
    log=$(ls "$VG_LOGS"/*."$pid".log 2>/dev/null | head -1 || true)
    if [ -z "$log" ]; then echo "valgrind: no log for daemon pid $pid"; bad=1; continue; fi
    if ! grep -q '== ERROR SUMMARY' "$log"; then
      echo "valgrind: $(basename "$log"): no exit summary (did not stop on SIGTERM)"; bad=1
    elif grep -q 'Process terminating with default action of signal' "$log"; then
      echo "valgrind: $(basename "$log"): $(grep -m1 'Process terminating' "$log" | sed 's/^==[0-9]*== //')"; bad=1
    fi
  done
  for log in "$VG_LOGS"/*.log; do
    [ -e "$log" ] || continue
    why=$(vg_log_bad "$log")
    [ -z "$why" ] || { echo "valgrind: $(basename "$log"): $why"; sed -n "$VG_LOG_PREAMBLE_LINES,\$p" "$log" | head -n 100; bad=1; }
  done
  [ "$bad" -eq 0 ] || { echo "valgrind logs kept in $VG_LOGS"; VG_CHECKED=2; return 1; }
  VG_CHECKED=1
  echo "valgrind: $(ls "$VG_LOGS" | wc -l) daemon logs clean"
}
# vg_term NAME: SIGTERM one daemon (mds, ioserver-ID, recovery) in the middle
# of a test and check that it exits by itself and, under valgrind, that its
# log shows a clean exit without errors or definite leaks.
vg_term() {
  local name=$1 pid log why limit
  pid=$(cat "$DEPFS_STATE/pids/$name.pid") || fail "no pid file for $name"
  kill -0 "$pid" 2>/dev/null || fail "$name (pid $pid) is not running"
  kill -TERM "$pid"
  limit=$(( SECONDS + $(tscale 10) ))
  while kill -0 "$pid" 2>/dev/null; do
    [ "$SECONDS" -lt "$limit" ] || fail "$name (pid $pid) did not exit within $(tscale 10) s of SIGTERM"
    sleep 0.1
  done
  [ "$VG_STARTED" = 1 ] || return 0
  log=$(ls "$VG_LOGS"/*."$pid".log 2>/dev/null | head -1 || true)
  [ -n "$log" ] || fail "no valgrind log for $name (pid $pid)"
  grep -q '== ERROR SUMMARY' "$log" || fail "$name: valgrind log has no exit summary"
  ! grep -q 'Process terminating with default action' "$log" ||
    fail "$name: $(grep -m1 'Process terminating' "$log" | sed 's/^==[0-9]*== //')"
  why=$(vg_log_bad "$log")
  [ -z "$why" ] || { sed -n "$VG_LOG_PREAMBLE_LINES,\$p" "$log" | head -n 100; fail "$name: $why"; }
}
# fuse_strace TRACE STRACE_OPTION...: strace the mount's depfs-fuse into
# TRACE from now on; fuse_strace_stop (and on_exit) ends it.
FUSE_STRACE_PID=
fuse_strace() {
  local trace=$1; shift
  command -v strace >/dev/null || fail "strace is needed (deploy/install-deps installs it)"
  strace -f "$@" -o "$trace" -p "$(cat "$DEPFS_STATE/pids/fuse.pid")" 2>/dev/null &
  FUSE_STRACE_PID=$!
}
fuse_strace_stop() {
  [ -n "$FUSE_STRACE_PID" ] || return 0
  kill -INT "$FUSE_STRACE_PID" 2>/dev/null || true
  wait "$FUSE_STRACE_PID" 2>/dev/null || true
  FUSE_STRACE_PID=
}
# A test's second FUSE mount (depfs-fuse at $M2, pid M2_PID), unmounted
# here or at the test's end, before the cluster goes down.
# mount_m2 CONF LOG [VAR=VALUE...]: mounts it with that config (the
# environment assignments go to depfs-fuse), its output in LOG.
M2_PID=
M2_WAIT_TENTHS=100
mount_m2() {
  local conf=$1 m2log=$2
  shift 2
  mkdir -p "$M2"
  env "$@" "$DEPFS_BIN_DIR/depfs-fuse" "$M2" -f -o "config=$conf" </dev/null >"$m2log" 2>&1 &
  M2_PID=$!
  for ((i = 0; i < M2_WAIT_TENTHS; i++)); do
    mountpoint -q "$M2" && return 0
    kill -0 "$M2_PID" 2>/dev/null || fail "the second depfs-fuse exited: $(tail -n 5 "$m2log")"
    sleep 0.1
  done
  fail "the second depfs-fuse did not mount at $M2"
}
umount_m2() {
  [ -n "$M2_PID" ] || return 0
  fusermount3 -u "$M2" 2>/dev/null || umount -l "$M2" 2>/dev/null || true
  wait "$M2_PID" 2>/dev/null || true
  M2_PID=
}
on_exit() {
  local rc=$?
  fuse_strace_stop
  umount_m2
  if [ $rc -ne 0 ] && [ -d "$DEPFS_STATE/logs" ]; then
    for f in "$DEPFS_STATE"/logs/*.log; do echo "---- $f"; tail -n 15 "$f"; done
  fi
  if ! cluster_down && [ $rc -eq 0 ]; then
    echo "FAIL: a daemon's memory checker (valgrind or a sanitizer) reported errors or leaks, or a daemon did not stop cleanly"
    rc=1
  fi
  [ $rc -eq 0 ] && rm -rf "$DEPFS_STATE"
  exit $rc
}
trap on_exit EXIT

# Every integration test ends here: parity consistent everywhere, and the
# MDS never called a server out of service before the server itself
# stopped serving reads (serve_order.py).
scrub_clean() {
  log "scrub --all"
  depfs scrub --all || fail "scrub found inconsistent or unreadable stripes"
  python3 "$TOP/tests/integration/serve_order.py" --logs "$DEPFS_STATE/logs" ||
    fail "the MDS called a server out of service while it still served reads"
}

# ---- helpers for the fault-injection tests (test_fault_*.sh)
FAULTLOAD="$TOP/tests/integration/faultload.py"
LIBDEPFS_SO="$DEPFS_BIN_DIR/../lib/libdepfs.so"
# make asan: libdepfs.so carries the ASan runtime, which must come first in
# a process. Programs built without it that load libdepfs (python through
# ctypes, MPI programs) run through san_host, which preloads the runtime
# (leak checks off there: the host program's own leaks are not ours).
DEPFS_SAN_PRELOAD=$(ldd "$LIBDEPFS_SO" 2>/dev/null | awk '/libasan\.so/ {print $3; exit}')
export DEPFS_SAN_PRELOAD

# wait_paused FILE POINT [PID]: until FILE (a client's stderr or log) says
# "DEPFS_TEST_PAUSE reached: POINT", for at most 30 s, or until process PID
# (when given) is gone; status 1 if it never did.
wait_paused() {
  local i
  for i in $(seq 300); do
    grep -q "DEPFS_TEST_PAUSE reached: $2" "$1" 2>/dev/null && return 0
    [ -z "${3:-}" ] || kill -0 "$3" 2>/dev/null || break
    sleep 0.1
  done
  grep -q "DEPFS_TEST_PAUSE reached: $2" "$1" 2>/dev/null
}
# use_test_build: this test needs a TEST ONLY switch (DEPFS_TEST_NO_LOCKS,
# DEPFS_TEST_PAUSE) or a fault point (DEPFS_FAULTS), which only the test
# build has (make hooks: BUILD/hooks); every daemon, tool and libdepfs of
# the test come from it from here on.
# need_test_user: the unprivileged user the security tests act as
# (TEST_USER, made when missing, as a system user without a home or a
# shell) and MUNGE, its way in; as_user CMD runs CMD as that user.
TEST_USER=depfs-test
need_test_user() {
  command -v munge >/dev/null || fail "munge is not installed (deploy/install-deps installs it)"
  if ! id "$TEST_USER" >/dev/null 2>&1; then
    # another test running beside this one may make it first
    useradd --system --no-create-home --shell /usr/sbin/nologin "$TEST_USER" ||
      id "$TEST_USER" >/dev/null 2>&1 || fail "cannot create the test user $TEST_USER (run as root)"
  fi
}
as_user() { su -s /bin/bash "$TEST_USER" -c "$*"; }
use_test_build() {
  local hooks
  hooks="$(cd "$DEPFS_BIN_DIR/.." && pwd)/hooks/bin"
  [ -x "$hooks/depfs-ioserver" ] || fail "no test build in $hooks (make hooks builds it)"
  export DEPFS_BIN_DIR="$hooks"
  LIBDEPFS_SO="$DEPFS_BIN_DIR/../lib/libdepfs.so"
}
san_host() {
  if [ -n "$DEPFS_SAN_PRELOAD" ]; then
    LD_PRELOAD="$DEPFS_SAN_PRELOAD${LD_PRELOAD:+:$LD_PRELOAD}" ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" "$@"
  else
    "$@"
  fi
}
if [ -n "$DEPFS_SAN_PRELOAD" ]; then python3() { san_host command python3 "$@"; }; fi
now_ms() { date +%s%3N; }
# conf_ms KEY DEFAULT: a config value (ms) from $CONF, or the documented default.
conf_ms() {
  local v
  v=$(awk -v k="$1" '$1 == k && $2 == "=" {print $3}' "$CONF" | tail -1)
  echo "${v:-$2}"
}
# t_HB + 2*t_T: the detection bound of the issue.
detect_bound_ms() { echo $(( $(conf_ms heartbeat_period_ms 500) + 2 * $(conf_ms request_timeout_ms 2000) )); }
# json_get PATH...: reads one JSON document (a CLI's --json output) on stdin
# and prints the value at each PATH, all on one line, separated by spaces.
# A PATH is dot-separated steps: a key (totals.locks_held), a list index
# (servers.0), * for every element of a list (servers.*.id), or KEY=VALUE for
# the first element of a list whose KEY is VALUE (servers.id=3.state).
# Strings print bare, other values as JSON (true, null, 12), a list of them
# space-separated. Status 1, with the reason on stderr, when the input is not
# JSON or a PATH leads nowhere: scripts read the CLI's --json, never its text.
json_get() {
  python3 -c 'import json, sys
def show(v):
    if isinstance(v, list):
        return " ".join(show(x) for x in v)
    return v if isinstance(v, str) else json.dumps(v)
def walk(v, steps):
    if not steps:
        return [v]
    step, rest = steps[0], steps[1:]
    if step == "*" and isinstance(v, list):
        return [x for e in v for x in walk(e, rest)]
    if "=" in step and isinstance(v, list):
        key, want = step.split("=", 1)
        for e in v:
            if isinstance(e, dict) and key in e and show(e[key]) == want:
                return walk(e, rest)
        raise KeyError(step)
    return walk(v[int(step)] if isinstance(v, list) else v[step], rest)
try:
    doc = json.load(sys.stdin)
    print(" ".join(show(x) for p in sys.argv[1:] for x in walk(doc, p.split("."))))
except (ValueError, KeyError, IndexError, TypeError) as e:
    sys.exit("json_get %s: %s: %s" % (" ".join(sys.argv[1:]), type(e).__name__, e))' "$@"
}
status_json() { timeout "$(tscale 60)" "$DEPFS_BIN_DIR/depfs" --config "$CONF" status --json; }
# server_state ID: up|down|rebuilding as `depfs status` reports it ("?" if it cannot).
server_state() { status_json 2>/dev/null | json_get "servers.id=$1.state" 2>/dev/null || echo "?"; }
# states_line: "0=up 1=down ..." for logs and waits.
states_line() {
  status_json 2>/dev/null | python3 -c 'import json,sys
d=json.load(sys.stdin); print(" ".join("{}={}".format(s["id"], s["state"]) for s in d["servers"]))' 2>/dev/null || echo "status unavailable"
}
locks_held() { status_json 2>/dev/null | json_get totals.locks_held 2>/dev/null || echo "?"; }
# wait_locks_freed T0_MS BOUND_S WHAT: until no stripe lock is held
# cluster-wide, failing ("WHAT still held after BOUND_S s") past T0_MS +
# BOUND_S; FREED_MS gets the milliseconds since T0_MS it took.
FREED_MS=
wait_locks_freed() {
  until [ "$(locks_held)" = 0 ]; do
    [ $(( $(now_ms) - $1 )) -lt $(( $2 * 1000 )) ] ||
      fail "$3 still held after $2 s: $(grep -h orphan "$DEPFS_STATE/logs/recovery.log" | tail -3)"
    sleep 0.5
  done
  FREED_MS=$(( $(now_ms) - $1 ))
}
# wait_all_up TIMEOUT_S: until every server is "up"; fails with the states seen.
wait_all_up() {
  local limit start=$SECONDS line seen=""
  limit=$(tscale "$1")
  while :; do
    line=$(states_line)
    [ "$line" = "$seen" ] || { log "states: $line"; seen=$line; }
    if [[ "$line" != "status unavailable" ]] && ! [[ " $line" =~ =(down|rebuilding|\?) ]]; then
      return 0
    fi
    if [ $((SECONDS - start)) -ge "$limit" ]; then
      dump_stacks_of_not_up "$line"
      fail "not every server is up after ${limit}s: $line"
    fi
    sleep 0.5
  done
}
# dump_stacks_of_not_up STATES_LINE: every thread's stack of each server the
# line does not call up and whose process is alive, and of depfs-recovery
# (which calls them up), with gdb when installed: a server that stopped
# answering, or a recovery that stopped asking, says where it stands.
dump_stacks_of_not_up() {
  local pair daemons=()
  command -v gdb >/dev/null || { echo "(no gdb: no stacks of the servers not up)"; return 0; }
  for pair in $1; do
    [[ "$pair" == *=up ]] || daemons+=("ioserver-${pair%%=*}")
  done
  [ ${#daemons[@]} -eq 0 ] || daemons+=(recovery)
  for name in "${daemons[@]}"; do dump_stacks_of "$name"; done
}
# dump_stacks_of NAME: every thread's stack of local-cluster's daemon NAME.
dump_stacks_of() {
  local pid
  pid=$(cat "$DEPFS_STATE/pids/$1.pid" 2>/dev/null) || return 0
  kill -0 "$pid" 2>/dev/null || { echo "---- $1 (pid $pid) is not running"; return 0; }
  echo "---- $1 (pid $pid): every thread's stack"
  timeout 60 gdb -p "$pid" -batch -nx -ex "thread apply all bt" 2>&1 | grep -E '^(Thread|#)' | head -400
}
# wait_state ID STATE TIMEOUT_S: until server ID shows STATE; prints the ms it took.
wait_state() {
  local id=$1 want=$2 limit_ms=$(( $(tscale "$3") * 1000 )) t0 st
  t0=$(now_ms)
  while :; do
    st=$(server_state "$id")
    [ "$st" = "$want" ] && { echo $(( $(now_ms) - t0 )); return 0; }
    [ $(( $(now_ms) - t0 )) -lt "$limit_ms" ] || { echo "server $id is '$st', not '$want', after $((limit_ms / 1000)) s" >&2; return 1; }
    sleep 0.1
  done
}
io_dir() { awk -v id="$1" '$1 == "ioserver" && $3 == id {print $5}' "$CONF"; }
# strip_names: every strip file and checksum sidecar on every server, as
# the 16-hex-digit inode it belongs to (one line each)
strip_names() {
  local id
  for id in $(awk '$1 == "ioserver" {print $3}' "$CONF"); do
    ls "$(io_dir "$id")/strips/"
  done | sed 's/\.crc$//'
}
# strips_of INO...: how many strip files and checksum sidecars of these
# inodes there are on every server
strips_of() {
  strip_names | grep -cxF -f <(printf '%016x\n' "$@") || true
}
# strip_of PATH STRIPE UNIT -> "server strip-file local-offset": where unit
# UNIT of stripe STRIPE of a file lies on disk (units rotate: unit u of
# stripe s is at layout position (u + s) mod n, at local offset s * su).
strip_of() {
  local ino n su servers pos sid sv
  read -r ino n su servers < <(depfs layout get --json "$1" | json_get ino n stripe_unit servers)
  read -r -a sv <<<"$servers"
  pos=$(( ($3 + $2) % n ))
  sid=${sv[$pos]}
  echo "$sid $(io_dir "$sid")/strips/$(printf '%016x' "$ino") $(( $2 * su ))"
}
# flip_byte FILE OFFSET: xor one byte of FILE in place, behind the servers'
# backs (flipping it again undoes it).
flip_byte() {
  python3 - "$1" "$2" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    off = int(sys.argv[2]); f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 0x5a]))
PY
}
# file_servers /PATH: the file's ordered server list, space separated.
file_servers() { depfs layout get --json "$1" | json_get servers; }
# file_layout /PATH: the file's (or directory's) layout as N@K@SU.
file_layout() { depfs layout get --json "$1" | json_get n k stripe_unit | tr ' ' @; }
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
# What another client changed shows in the mount once the mount's cache
# times have passed (attr_timeout and entry_timeout, 1 s by default, which
# also bound how old a statahead page may answer: README "Statahead").
MOUNT_CACHE_MS=1000
wait_mount_caches() { sleep "$(awk -v ms="$MOUNT_CACHE_MS" 'BEGIN { print ms / 1000 + 0.1 }')"; }
# rejoins_of ID: how many rejoins of server ID depfs-recovery has logged.
rejoins_of() { grep -c "ioserver $1: rejoined" "$DEPFS_STATE/logs/recovery.log" || true; }
# wait_rejoined ID BEFORE BOUND_S: until server ID rejoined once more than
# BEFORE (a server back from a known failure says "up" before that).
wait_rejoined() {
  local deadline=$((SECONDS + $(tscale "$3")))
  until [ "$(rejoins_of "$1")" -gt "$2" ]; do
    [ "$SECONDS" -lt "$deadline" ] ||
      fail "server $1 did not rejoin within $(tscale "$3") s: $(states_line); $(grep -h -E 'orphan|rejoin' "$DEPFS_STATE/logs/recovery.log" | tail -2)"
    sleep 0.2
  done
}
# restart_rejoined ID BOUND_S: restart server ID (environment passed on) and
# wait for its rejoin, then until status shows it up.
restart_rejoined() {
  local before
  before=$(rejoins_of "$1")
  lc restart "$1" >/dev/null
  wait_rejoined "$1" "$before" "$2"
  wait_state "$1" up 60 >/dev/null || fail "server $1 not up after its rejoin: $(states_line)"
}
# kill_down ID: SIGKILL I/O server ID and wait until the cluster calls it down
# (so a later restart is a return from a known failure, not a blip).
kill_down() {
  "$LC" kill "$1"
  wait_state "$1" down 30 >/dev/null || fail "server $1 not marked down within $(tscale 30) s of SIGKILL"
}
