#!/usr/bin/env bash
# test_fault_partition_heal - a server cut off by the network (not frozen,
# not restarted) cannot know it was written around; the instant the link
# comes back, a client whose picture of the cluster is as old as the cut
# (it had no reason to talk to that server meanwhile) reads from it. That
# read must not see the server's stale units (issue 10: a server treated as
# failed by anyone is not trusted until rebuilt). Server 4 runs in a network
# namespace (netns.sh); a libdepfs reader opens and reads the file, the link
# is cut, the mount overwrites the file and fsyncs (writing around server
# 4), depfs-recovery is held up (SIGSTOP), the link comes back and the
# reader reads again at once, on a fresh handle of the same client: every
# byte must be the new one. Then recovery resumes, the server rejoins and
# scrub is clean.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/netns.sh"
require_recovery
S=4
SIZE=$((2 * 6 * 65536 * 4))
trap 'rc=$?; set +e; cluster_down; netns_cleanup; (exit $rc); on_exit' EXIT
netns_setup
netns_cluster_up "$S" 8
mkdir "$MNT/d"; setfattr -n user.depfs.layout -v 8@6 "$MNT/d"
head -c "$SIZE" /dev/urandom > "$DEPFS_STATE/old"
head -c "$SIZE" /dev/urandom > "$DEPFS_STATE/new"
cp "$DEPFS_STATE/old" "$MNT/d/f" && sync "$MNT/d/f"

go="$DEPFS_STATE/go"; ready="$DEPFS_STATE/ready"
reader_py="$DEPFS_STATE/reader.py"
cat > "$reader_py" <<'PY'
import os, sys, time
sys.path.insert(0, sys.argv[4])
from depfs_ctypes import Depfs
lib, conf, state = sys.argv[1:4]
fs = Depfs(lib, conf)
old = open(os.path.join(state, "old"), "rb").read()
assert fs.read_file("/d/f") == old, "first read differs"
open(os.path.join(state, "ready"), "w").close()
for _ in range(12000):  # bounded: 120 s
    if os.path.exists(os.path.join(state, "go")):
        break
    time.sleep(0.01)
else:
    sys.exit("no go")
got = fs.read_file("/d/f")
new = open(os.path.join(state, "new"), "rb").read()
if got != new:
    bad = next(i for i in range(len(new)) if got[i] != new[i])
    stale = sum(1 for i in range(len(new)) if got[i] != new[i] and got[i] == old[i])
    sys.exit("WRONG: read right after the link came back differs from the acknowledged "
             "bytes at offset %d (%d bytes are the stale old ones)" % (bad, stale))
print("reader: right after the heal every byte is the new one")
fs.unmount()
PY
san_host python3 "$reader_py" "$LIBDEPFS_SO" "$CONF" "$DEPFS_STATE" "$TOP/tests/integration" &
reader=$!
for i in $(seq 300); do [ -e "$ready" ] && break; sleep 0.1; done
[ -e "$ready" ] || fail "the reader did not start"

log "cutting server $S off"
netns_cut
cp "$DEPFS_STATE/new" "$MNT/d/f" && sync "$MNT/d/f" || fail "the overwrite failed with server $S cut off"
# depfs-recovery busy elsewhere (stopped): nobody tells server $S what
# happened while it was cut off before the reader gets to it
rec_pid=$(cat "$DEPFS_STATE/pids/recovery.pid")
kill -STOP "$rec_pid"
log "overwrite fsynced around server $S; recovery stopped; healing the link and reading at once"
netns_heal
touch "$go"
reader_rc=0
wait "$reader" || reader_rc=$?
kill -CONT "$rec_pid"
[ "$reader_rc" -eq 0 ] || fail "the reader saw stale bytes from the healed server (see above)"
wait_all_up 120
cmp "$DEPFS_STATE/new" "$MNT/d/f" || fail "the mount reads wrong bytes after the rejoin"
scrub_clean
echo "PASS: a reader with a picture from before the cut read only acknowledged bytes the moment server $S's link came back; rejoin, scrub clean"
