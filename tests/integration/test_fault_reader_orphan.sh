#!/usr/bin/env bash
# test_fault_reader_orphan - a decoding reader that dies holding its stripe
# locks leaves nothing in doubt (make test's CI run at 61a0659: an 8@7 file
# of test_fault_degraded never came back). A server S of a 4@3 file is
# down and the file was written around it (S is stale for it); a reader
# decodes around S, which takes stripe locks on the other three servers
# (LOCK+READ) to read a consistent codeword, and is SIGKILLed there
# (DEPFS_TEST_PAUSE=degraded_locked). Those locks outlive their lease as
# orphans. Before lock modes every held position of an orphan counted as a
# unit in doubt: with S stale that is more than n-k=1 erasures, the repair
# failed every few seconds and kept the stripes locked, S's rejoin could
# never rebuild them, and S stayed out of service for good. A lock taken
# only to read leaves its unit as it was: the repair must release it, S
# must rejoin within REJOIN_BOUND_S, and the file must read back exactly
# (also with another server down: parity checked), scrub clean.
source "$(dirname "$0")/lib.sh"
use_test_build
require_recovery
REJOIN_BOUND_S=60
FREE_BOUND_S=30
STRIPES=8
cluster_up --servers 4
mkdir "$MNT/d"; setfattr -n user.depfs.layout -v 4@3 "$MNT/d"
head -c $((STRIPES * 3 * 65536)) /dev/urandom > "$DEPFS_STATE/ref"
cp "$DEPFS_STATE/ref" "$MNT/d/f" && sync "$MNT/d/f"
read -r S < <(depfs layout get --json /d/f | json_get servers.0)

log "server $S killed; the file is overwritten around it (S now stale for it)"
kill_down "$S"
settle_clients
python3 - "$MNT/d/f" "$DEPFS_STATE/ref" <<'PY' || fail "the overwrite around the down server failed"
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
ref = bytearray(open(sys.argv[2], "rb").read())
for off in range(5000, len(ref) - 3 * 65536, 3 * 65536):  # every stripe but the last
    os.pwrite(fd, b"\xa5" * 100000, off)
    ref[off:off + 100000] = b"\xa5" * 100000
os.fsync(fd)
os.close(fd)
open(sys.argv[2], "wb").write(ref)
PY

log "a decoding reader (depfs cp) pauses holding its stripe locks and is SIGKILLed there"
DEPFS_TEST_PAUSE=degraded_locked depfs cp depfs:/d/f "$DEPFS_STATE/dead.out" 2> "$DEPFS_STATE/reader.err" &
reader=$!
pid=""
for _ in $(seq 300); do
  pid=$(sed -n 's/.*DEPFS_TEST_PAUSE reached: degraded_locked pid=\([0-9]*\).*/\1/p' "$DEPFS_STATE/reader.err" | head -1)
  [ -n "$pid" ] && break
  kill -0 "$reader" 2>/dev/null || break
  sleep 0.1
done
[ -n "$pid" ] || { cat "$DEPFS_STATE/reader.err"; fail "the reader never reached degraded_locked"; }
kill -9 "$pid"
wait "$reader" 2>/dev/null || true
held=$(locks_held)
log "reader killed; stripe locks held cluster-wide: $held"
[ "$held" != 0 ] || fail "the killed reader left no lock: the test does not reach the case"

t0=$(now_ms)
wait_locks_freed "$t0" "$FREE_BOUND_S" "the dead reader's locks"
log "the dead reader's locks were released after $FREED_MS ms"

log "server $S restarted: it must rejoin (rebuild its stale units) within ${REJOIN_BOUND_S} s"
restart_rejoined "$S" "$REJOIN_BOUND_S"
! grep -q "repair failed" "$DEPFS_STATE/logs/recovery.log" ||
  fail "depfs-recovery logged a failed repair: $(grep -m1 'repair failed' "$DEPFS_STATE/logs/recovery.log")"
[ "$(locks_held)" = 0 ] || fail "locks held after the rejoin: $(locks_held)"

depfs cp depfs:/d/f "$DEPFS_STATE/back" && cmp "$DEPFS_STATE/ref" "$DEPFS_STATE/back" ||
  fail "the file differs from what was acknowledged after $S rejoined"
cmp "$DEPFS_STATE/ref" "$MNT/d/f" || fail "the mount reads other bytes than were acknowledged"
read -r O < <(depfs layout get --json /d/f | json_get servers.2)
log "server $O killed: reads decode through $S's rebuilt units and parity"
kill_down "$O"
settle_clients
depfs cp depfs:/d/f "$DEPFS_STATE/back" && cmp "$DEPFS_STATE/ref" "$DEPFS_STATE/back" ||
  fail "decoding around $O does not give what was acknowledged"
restart_rejoined "$O" 60
scrub_clean
echo "PASS: a decoding reader killed holding its stripe locks beside a stale server: its locks released, the server rejoined, every byte as written, scrub clean"
