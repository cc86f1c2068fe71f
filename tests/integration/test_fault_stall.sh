#!/usr/bin/env bash
# test_fault_stall - issue 10's reproduction: an I/O server that stalls (is
# frozen or cut off, not killed) while a writer goes on, then comes back,
# must not cost a single fsync-acknowledged byte.
#
# Each variant on a fresh 8-server cluster: a directory with layout 8@6, one
# writer on the mount (stallio.py): 24 MiB of random bytes, 256 KiB per
# write() every 50 ms, fsync() after every 10 MiB and at the end; every call
# must return success. 3 s after its first write, server S (4) stalls:
#   stop-until-done  SIGSTOP, held until the writer has finished (the issue)
#   stop-20s         SIGSTOP, held 20 s (a libdepfs-free reader on the mount
#                    reads another file meanwhile: its stalls are measured)
#   partition        S runs in a network namespace (netns.sh); its link is
#                    cut, held until the writer has finished
# Then, every read compared byte for byte with the bytes the writer wrote:
#   1. `depfs cp` while S is still stalled (degraded read),
#   2. S resumed (SIGCONT / link up); every server up within REJOIN_WAIT_S;
#      `depfs cp` and the mount (after the clients' status expiry),
#   3. S SIGKILLed and shown down: `depfs cp` decodes S's units from parity,
#   4. S restarted, every server up, the mount once more, scrub --all clean.
# The detection time of S (depfs-recovery's "detected N ms after its last
# answer") and the writer's and reader's slowest calls are printed (RESULT
# lines). All variants run even when one loses data; the test fails at the
# end naming each variant that lost data and where.
# DEPFS_STALL_VARIANTS="stop-until-done stop-20s partition" picks variants.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/netns.sh"
require_recovery
trap 'rc=$?; set +e; cluster_down; netns_cleanup; (exit $rc); on_exit' EXIT
STALLIO="$TOP/tests/integration/stallio.py"
VARIANTS=${DEPFS_STALL_VARIANTS:-"stop-until-done stop-20s partition"}
S=4
SERVERS=8
FILE_BYTES=$((24 << 20))
CHUNK=$((256 << 10))
INTERVAL_MS=50
FSYNC_EVERY=$((10 << 20))
STALL_AFTER_S=3
LONG_STOP_S=20
WRITER_WAIT_S=120   # the writer must be done by then, stalled server or not
REJOIN_WAIT_S=120   # from resume until every server is up again
UNIT=$((64 << 10))
K=6
WORK="$DEPFS_STATE-work"

# compare NAME GOT REF: byte-exact, or a line naming the 64 KiB units that
# differ (stripe, unit, zeros or not); status 1 then.
compare() {
  local what=$1 got=$2 ref=$3
  cmp -s "$got" "$ref" && { log "$what: byte-exact ($(stat -c %s "$got") bytes)"; return 0; }
  python3 - "$got" "$ref" "$UNIT" "$K" "$what" <<'EOF'
import sys
got, ref = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
unit, k, what = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
bad = []
for off in range(0, max(len(got), len(ref)), unit):
    g, r = got[off:off + unit], ref[off:off + unit]
    if g != r:
        bad.append((off // (unit * k), off // unit % k, g.count(0) == len(g) and len(g) > 0))
zeros = sum(1 for b in bad if b[2])
stripes = sorted({b[0] for b in bad})
print(f"LOST DATA: {what}: {len(got)} bytes read, want {len(ref)}; {len(bad)} units of {unit // 1024} KiB "
      f"differ ({zeros} all zeros), in stripes {stripes[0] if stripes else '-'}-{stripes[-1] if stripes else '-'}: "
      + " ".join(f"s{s}u{u}{'(0)' if z else ''}" for s, u, z in bad[:24]) + (" ..." if len(bad) > 24 else ""))
EOF
  return 1
}

# cp_check WHAT: depfs cp of the file, compared with the reference
cp_check() {
  rm -f "$WORK/out"
  timeout "$(tscale 120)" "$DEPFS_BIN_DIR/depfs" --config "$CONF" cp depfs:/d/f "$WORK/out" ||
    { echo "LOST DATA: $1: depfs cp depfs:/d/f failed"; return 1; }
  compare "$1 (depfs cp)" "$WORK/out" "$WORK/ref"
}
mount_check() {
  rm -f "$WORK/out"
  timeout "$(tscale 120)" cat "$MNT/d/f" >"$WORK/out" || { echo "LOST DATA: $1: cat of the mount's file failed"; return 1; }
  compare "$1 (mount)" "$WORK/out" "$WORK/ref"
}

spid() { cat "$DEPFS_STATE/pids/ioserver-$S.pid"; }
stall() { if [ "$1" = partition ]; then netns_cut; else kill -STOP "$(spid)"; fi; }
resume() { if [ "$1" = partition ]; then netns_heal; else kill -CONT "$(spid)"; fi; }

# run_variant NAME: one variant on a fresh cluster; status 1 when data was
# lost or a step failed (the message says which).
run_variant() {
  local v=$1 wl rd="" t_stall t_resume lost=0 line
  rm -rf "$WORK"; mkdir -p "$WORK"
  if [ "$v" = partition ]; then
    netns_cluster_up "$S" "$SERVERS"
  else
    cluster_up --servers "$SERVERS"
  fi
  mkdir "$MNT/d"
  setfattr -n user.depfs.layout -v 8@6 "$MNT/d"
  if [ "$v" = stop-20s ]; then
    head -c $((4 << 20)) /dev/urandom >"$WORK/rref"
    cp "$WORK/rref" "$MNT/d/r"
  fi
  log "[$v] writer: $FILE_BYTES bytes to /d/f (8@6), $CHUNK per write() every $INTERVAL_MS ms, fsync every $FSYNC_EVERY"
  python3 "$STALLIO" write "$MNT/d/f" "$WORK/ref" --bytes "$FILE_BYTES" --chunk "$CHUNK" \
    --interval-ms "$INTERVAL_MS" --fsync-every "$FSYNC_EVERY" --started "$WORK/started" >"$WORK/writer.out" 2>&1 &
  wl=$!
  local i
  for i in $(seq 100); do [ -e "$WORK/started" ] && break; kill -0 "$wl" 2>/dev/null || break; sleep 0.1; done
  [ -e "$WORK/started" ] || { cat "$WORK/writer.out"; echo "FAILED: [$v] the writer did not start"; return 1; }
  if [ "$v" = stop-20s ]; then
    python3 "$STALLIO" read "$MNT/d/r" "$WORK/rref" --stop "$WORK/stop-reader" >"$WORK/reader.out" 2>&1 &
    rd=$!
  fi
  sleep "$STALL_AFTER_S"
  t_stall=$(now_ms)
  stall "$v"
  log "[$v] server $S stalled ($v) $STALL_AFTER_S s into the writer"
  # the writer must finish, and succeed, while S is stalled
  local deadline=$((SECONDS + $(tscale "$WRITER_WAIT_S")))
  while kill -0 "$wl" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
  if kill -0 "$wl" 2>/dev/null; then
    kill -9 "$wl"; cat "$WORK/writer.out"; resume "$v"
    echo "FAILED: [$v] the writer did not finish within ${WRITER_WAIT_S} s of the stall"; return 1
  fi
  if ! wait "$wl"; then
    cat "$WORK/writer.out"; resume "$v"
    echo "FAILED: [$v] the writer failed (a write() or fsync() did not return success)"; return 1
  fi
  cat "$WORK/writer.out"
  log "[$v] writer done $(( $(now_ms) - t_stall )) ms after the stall; server $S still stalled"
  cp_check "[$v] 1. read while server $S is stalled" || lost=1
  if [ "$v" = stop-20s ]; then
    local left=$(( t_stall + LONG_STOP_S * 1000 - $(now_ms) ))
    [ "$left" -le 0 ] || sleep "$((left / 1000)).$(printf '%03d' $((left % 1000)))"
  fi
  t_resume=$(now_ms)
  resume "$v"
  log "[$v] server $S resumed after $(( t_resume - t_stall )) ms"
  if [ -n "$rd" ]; then
    sleep 2
    touch "$WORK/stop-reader"
    wait "$rd" || { cat "$WORK/reader.out"; echo "LOST DATA: [$v] the reader on the mount read wrong bytes"; lost=1; }
    log "RESULT [$v] $(cat "$WORK/reader.out")"
  fi
  line=$(grep -m1 "ioserver $S down: detected" "$DEPFS_STATE/logs/recovery.log" || true)
  log "RESULT [$v] detection: ${line:-no 'ioserver $S down: detected' line in recovery.log}"
  log "RESULT [$v] writer: $(tail -1 "$WORK/writer.out")"
  wait_all_up "$REJOIN_WAIT_S"
  log "[$v] every server up $(( $(now_ms) - t_resume )) ms after the resume"
  grep -h -E "orphan|rebuilt|degraded|rejoin" "$DEPFS_STATE/logs/recovery.log" | tail -8 || true
  cp_check "[$v] 2. read after server $S rejoined" || lost=1
  settle_clients
  mount_check "[$v] 2. read through the mount after server $S rejoined" || lost=1
  log "[$v] SIGKILL server $S: the next read decodes its units from parity"
  kill_down "$S"
  cp_check "[$v] 3. degraded read without server $S" || lost=1
  if [ "$v" = partition ]; then rm -f "$DEPFS_STATE/pids/ioserver-$S.pid"; netns_restart "$S"; else "$LC" restart "$S" >/dev/null; fi
  wait_all_up "$REJOIN_WAIT_S"
  settle_clients
  mount_check "[$v] 4. read through the mount after server $S was restarted" || lost=1
  log "[$v] scrub --all"
  depfs scrub --all >"$WORK/scrub.out" 2>&1 || { cat "$WORK/scrub.out"; echo "FAILED: [$v] scrub found inconsistent or unreadable stripes"; lost=1; }
  tail -2 "$WORK/scrub.out"
  python3 "$TOP/tests/integration/serve_order.py" --logs "$DEPFS_STATE/logs" ||
    { echo "FAILED: [$v] the MDS called a server out of service while it still served reads"; lost=1; }
  [ "$lost" -eq 0 ]
}

failed=()
for v in $VARIANTS; do
  case "$v" in stop-until-done|stop-20s|partition) ;; *) fail "unknown variant '$v'";; esac
  log "==== variant $v"
  t0=$SECONDS
  [ "$v" != partition ] || netns_setup # here: the parent shell cleans it up
  set +e
  ( set -e; run_variant "$v" ) 2>&1 | tee "$DEPFS_STATE.$v.out"
  rc=${PIPESTATUS[0]}
  set -e
  p=$(cat "$DEPFS_STATE/pids/ioserver-$S.pid" 2>/dev/null || true)
  [ -z "$p" ] || kill -CONT "$p" 2>/dev/null || true # a variant that failed while S was stopped
  cluster_down || fail "a daemon's memory checker reported errors or leaks"
  netns_cleanup
  if [ "$rc" -eq 0 ]; then
    log "==== variant $v: every byte kept ($((SECONDS - t0)) s)"
  else
    failed+=("$v: $(grep -m1 -E '^(LOST DATA|FAILED|FAIL)' "$DEPFS_STATE.$v.out" || echo "failed (rc $rc)")")
    log "==== variant $v: FAILED ($((SECONDS - t0)) s)"
    # keep the logs of the first failure for the report
    [ -d "$DEPFS_STATE.$v.logs" ] || cp -r "$DEPFS_STATE/logs" "$DEPFS_STATE.$v.logs" 2>/dev/null || true
  fi
done
rm -rf "$WORK"
if [ ${#failed[@]} -gt 0 ]; then
  printf '  %s\n' "${failed[@]}"
  echo "FAIL: a stalled server cost fsync-acknowledged bytes or a step failed in ${#failed[@]} of $(wc -w <<<"$VARIANTS") variants: ${failed[*]%%:*}"
  exit 1
fi
rm -f "$DEPFS_STATE".*.out
echo "PASS: server $S stalled 3 s into a 24 MiB fsynced writer ($VARIANTS): every fsync returned 0, every byte right while stalled, after the rejoin and decoded from parity; scrub clean"
