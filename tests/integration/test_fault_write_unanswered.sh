#!/usr/bin/env bash
# test_fault_write_unanswered - a server that stops answering one writer's
# writes in the middle of a write (a partition between that client and that
# server only) while it keeps serving everyone else. The writer times out
# twice, marks it failed, and the survivors record it dirty; the server,
# never stalled and still UP, serves its old unit until depfs-recovery sees
# the records and demotes it. The write must not be acknowledged before
# that: before, the fsync returned at once and a reader elsewhere got the
# old bytes. The test build's fault point write_unanswered (common/fault.h)
# drops the server's next two WRITEs carrying units, unanswered;
# depfs-recovery is held up (SIGSTOP) so that nothing demotes the server
# until the test lets it.
source "$(dirname "$0")/lib.sh"
use_test_build
require_recovery
cluster_up --servers 4
UNIT=4096
head -c $((4 * 2 * UNIT)) /dev/urandom > "$DEPFS_STATE/old"
depfs cp "$DEPFS_STATE/old" "depfs@4@2@4k:/f" || fail "copy in failed"
read -r servers < <(depfs layout get --json /f | json_get servers)
read -r -a sv <<<"$servers"
S=${sv[0]} # data unit 0 of stripe 0
log "/f on servers ${sv[*]}: stripe 0's unit 0 on server $S, restarted with write_unanswered=2"
DEPFS_FAULTS=write_unanswered=2 restart_rejoined "$S" 60

rec_pid=$(cat "$DEPFS_STATE/pids/recovery.pid")
kill -STOP "$rec_pid"
trap 'rc=$?; set +e; kill -CONT "$rec_pid" 2>/dev/null; (exit $rc); on_exit' EXIT
head -c "$UNIT" /dev/urandom > "$DEPFS_STATE/unit"
out="$DEPFS_STATE/writer.out"
python3 - "$LIBDEPFS_SO" "$CONF" "$DEPFS_STATE/unit" "$TOP/tests/integration" > "$out" \
  2> "$DEPFS_STATE/writer.err" <<'PY' &
import os, sys
sys.path.insert(0, sys.argv[4])
from depfs_ctypes import Depfs
fs = Depfs(sys.argv[1], sys.argv[2])
fh = fs.open("/f", os.O_RDWR)
fs.pwrite(fh, open(sys.argv[3], "rb").read(), 0)
try:
    fs.fsync(fh)
    print("acknowledged")
except OSError as e:
    print("failed: %s" % e)
PY
writer=$!
for i in $(seq 300); do # bounded: 30 s (two request timeouts, then the records)
  grep -q "marked failed" "$DEPFS_STATE/writer.err" && break
  sleep 0.1
done
grep -q "marked failed" "$DEPFS_STATE/writer.err" ||
  { kill "$writer"; fail "the writer never lost server $S"; }
grep -q "fault point write_unanswered fires" "$DEPFS_STATE/logs/ioserver-$S.log" ||
  fail "the fault point did not fire on server $S"
sleep 1 # the records are stored right after the mark
if ! kill -0 "$writer" 2>/dev/null; then
  cat "$out"
  python3 - "$LIBDEPFS_SO" "$CONF" "$DEPFS_STATE/unit" "$TOP/tests/integration" <<'PY' || true
import sys
sys.path.insert(0, sys.argv[4])
from depfs_ctypes import Depfs
got = Depfs(sys.argv[1], sys.argv[2]).read_file("/f")[:4096]
new = open(sys.argv[3], "rb").read()
print("a reader now gets %d of %d bytes of the acknowledged unit wrong" %
      (sum(1 for a, b in zip(got, new) if a != b), len(new)))
PY
  fail "the write was acknowledged while server $S, which missed it, still served its old unit"
fi
log "the write waits while server $S serves; depfs-recovery resumes"
kill -CONT "$rec_pid"
wait "$writer" || fail "the writer crashed"
grep -q "^acknowledged" "$out" || fail "the write was not acknowledged once server $S was demoted: $(cat "$out")"
head -c $((4 * 2 * UNIT)) "$DEPFS_STATE/old" > "$DEPFS_STATE/model"
python3 - "$DEPFS_STATE/model" "$DEPFS_STATE/unit" <<'PY'
import sys
m = bytearray(open(sys.argv[1], "rb").read())
m[0:4096] = open(sys.argv[2], "rb").read()
open(sys.argv[1], "wb").write(m)
PY
depfs cp depfs:/f "$DEPFS_STATE/back" && cmp "$DEPFS_STATE/model" "$DEPFS_STATE/back" ||
  fail "a reader got other bytes than acknowledged right after the write"
wait_all_up 120 || fail "servers not up: $(states_line)"
depfs cp depfs:/f "$DEPFS_STATE/back" && cmp "$DEPFS_STATE/model" "$DEPFS_STATE/back" ||
  fail "the file differs from what was acknowledged after server $S rejoined"
scrub_clean
echo "PASS: a write that only its writer could not store on server $S was acknowledged once depfs-recovery had demoted the server, never while it served its old unit; rejoin, scrub clean"
