#!/usr/bin/env bash
# test_fault_restart_plain - an I/O server that crashed, was declared down
# and written around, and is then started again without --rebuild (an
# admin's plain restart, or systemd's Restart=on-failure): its strip files
# hold the units from before the writes acknowledged meanwhile. It must not
# serve them to a client that never saw it fail (whose view of the cluster
# still has it up) before depfs-recovery has rejoined and rebuilt it.
# depfs-recovery is held up (SIGSTOP) while the server comes back, so that
# nothing but the server itself can keep it from serving.
source "$(dirname "$0")/lib.sh"
require_recovery
cluster_up --servers 4
UNIT=4096
SIZE=$((4 * 2 * UNIT))
head -c "$SIZE" /dev/urandom > "$DEPFS_STATE/old"
head -c "$SIZE" /dev/urandom > "$DEPFS_STATE/new"
depfs cp "$DEPFS_STATE/old" "depfs@4@2@4k:/f" || fail "copy in failed"
read -r servers < <(depfs layout get --json /f | json_get servers)
read -r -a sv <<<"$servers"
S=${sv[0]} # data unit 0 of stripe 0

# a client that reads /f now and then sees nothing of the failure
go="$DEPFS_STATE/go"
out="$DEPFS_STATE/reader.out"
python3 - "$LIBDEPFS_SO" "$CONF" "$go" "$TOP/tests/integration" "$DEPFS_STATE/back" > "$out" \
  2> "$DEPFS_STATE/reader.err" <<'PY' &
import os, sys, time
sys.path.insert(0, sys.argv[4])
from depfs_ctypes import Depfs
fs = Depfs(sys.argv[1], sys.argv[2])
fs.read_file("/f")
print("ready", flush=True)
for _ in range(1200): # bounded: 120 s
    if os.path.exists(sys.argv[3]):
        break
    time.sleep(0.1)
try:
    open(sys.argv[5], "wb").write(fs.read_file("/f"))
    print("read", flush=True)
except OSError as e:
    print("failed: %s" % e, flush=True)
PY
reader=$!
for i in $(seq 300); do grep -q ready "$out" && break; sleep 0.1; done
grep -q ready "$out" || { cat "$DEPFS_STATE/reader.err"; fail "the reader did not start"; }

log "server $S (stripe 0's unit 0) killed and declared down; /f rewritten around it"
kill_down "$S"
depfs cp "$DEPFS_STATE/new" depfs:/f || fail "the write around server $S failed"
rec_pid=$(cat "$DEPFS_STATE/pids/recovery.pid")
kill -STOP "$rec_pid"
trap 'rc=$?; set +e; kill -CONT "$rec_pid" 2>/dev/null; kill "$reader" 2>/dev/null; (exit $rc); on_exit' EXIT
log "server $S started again without --rebuild, depfs-recovery held up"
lc restart "$S" >/dev/null || fail "restart of server $S failed"
sleep 1 # it answers by now
touch "$go"
wait "$reader" || fail "the reader crashed: $(cat "$DEPFS_STATE/reader.err")"
grep -q "^read" "$out" || fail "the reader could not read /f: $(cat "$out")"
if ! cmp -s "$DEPFS_STATE/new" "$DEPFS_STATE/back"; then
  bad=$(cmp -l "$DEPFS_STATE/new" "$DEPFS_STATE/back" | wc -l || true)
  fail "a client that never saw server $S fail read $bad of $SIZE acknowledged bytes wrong from it after its plain restart"
fi
log "the reader got every acknowledged byte; depfs-recovery resumes"
kill -CONT "$rec_pid"
wait_all_up 120 || fail "servers not up: $(states_line)"
depfs cp depfs:/f "$DEPFS_STATE/back" && cmp "$DEPFS_STATE/new" "$DEPFS_STATE/back" ||
  fail "the file differs from what was acknowledged after server $S rejoined"
scrub_clean
echo "PASS: a server restarted without --rebuild after it was written around served none of its old units; rejoined, every byte as acknowledged, scrub clean"
