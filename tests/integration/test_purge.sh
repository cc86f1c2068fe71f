#!/usr/bin/env bash
# test_purge - removing files through the MDS's purge queue (README
# "Removing files"), on a real cluster with a FUSE mount:
#   a) a file unlinked while open keeps working through its descriptor
#      (fstat, ftruncate, fchmod, reads), its strip files stay while it is
#      open and go from every server within PURGE_BOUND_S of its close;
#      hard links and rename over behave as unlink;
#   b) a libdepfs client SIGKILLed right after unlinking files it wrote:
#      their strip files still go (nothing leaked);
#   c) the MDS SIGKILLed after unlinks, depfs-recovery SIGKILLed in the
#      middle of draining them: nothing leaked once it is back, and nothing
#      removed early (a file unlinked while a libdepfs handle holds it open
#      is read back right through that handle after both crashes). The
#      MDS's holds journal (mds/holds_journal.h) outlives its crash: a
#      file closed before it and unlinked after it goes within
#      PURGE_BOUND_S, one held open across it stays until its close;
#   d) depfs status shows the queue (files, bytes) and, after an MDS start
#      that cannot trust its journal (a machine crash, as a test build
#      fakes with another kernel boot id), until when files unlinked are
#      kept whatever their handles (the purge floor);
#   e) the strip files on disk are exactly those of the files that exist
#      or are still held open, and scrub --all is clean.
source "$(dirname "$0")/lib.sh"
require_recovery
use_test_build # DEPFS_TEST_BOOT_ID: a machine crash in d)
cluster_up --servers 8

PURGE_BOUND_S=15   # the purger runs every second (REC_PURGE_IDLE_MS): a pass or two, loaded machine
OPEN_CHECK_S=3     # more than two purger passes: a held file must outlive them
MANY=600           # files unlinked at once for the crash part (several passes of 64)
W="$DEPFS_STATE/work"; mkdir -p "$W"
PYLIB="$TOP/tests/integration"

# strip_inos: the inode (decimal) of every strip file on every server, sorted, unique
strip_inos() {
  strip_names | sort -u | while read -r hex; do echo $((16#$hex)); done | sort -u
}
queue_files() { status_json | json_get purge_queue.files; }
queue_bytes() { status_json | json_get purge_queue.bytes; }
# wait_strips_gone WHAT INO...: until no strip file of these inodes is left, bounded
wait_strips_gone() {
  local what=$1 deadline=$((SECONDS + $(tscale "$PURGE_BOUND_S"))); shift
  until [ "$(strips_of "$@")" = 0 ]; do
    [ "$SECONDS" -lt "$deadline" ] ||
      fail "$what: $(strips_of "$@") strip files still there $(tscale "$PURGE_BOUND_S") s later (queue: $(queue_files) files)"
    sleep 0.2
  done
}
# wait_flag FILE S: until FILE exists, at most S seconds (for the helpers below)
wait_flag() {
  local deadline=$((SECONDS + $(tscale "$2")))
  until [ -e "$1" ]; do [ "$SECONDS" -lt "$deadline" ] || fail "no $1 after $(tscale "$2") s"; sleep 0.1; done
}

# ---------------------------------------------------------------- a) mount
log "a) unlinked while open on the mount: fstat, ftruncate, fchmod, reads"
head -c 3000000 /dev/urandom > "$W/a.ref"
python3 - "$MNT/a" "$W/a.ref" "$W" "$(tscale 60)" <<'PY' &
import os, sys, time
path, ref, w, limit = sys.argv[1], open(sys.argv[2], "rb").read(), sys.argv[3], float(sys.argv[4])
def check(cond, what):
    if not cond:
        print("FAIL: " + what, flush=True); os._exit(1)
def read_all(fd):
    os.lseek(fd, 0, 0); out = []
    while True:
        b = os.read(fd, 1 << 20)
        if not b: return b"".join(out)
        out.append(b)
fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
os.write(fd, ref); os.fsync(fd)
ino = os.fstat(fd).st_ino
os.unlink(path)
check(not os.path.exists(path), "the name is still there after unlink")
st = os.fstat(fd)
check(st.st_size == len(ref) and st.st_nlink == 0, "fstat after unlink: size %d nlink %d" % (st.st_size, st.st_nlink))
os.ftruncate(fd, 2000000)
os.fchmod(fd, 0o600)
st = os.fstat(fd)
check(st.st_size == 2000000, "ftruncate: size %d" % st.st_size)
check(st.st_mode & 0o7777 == 0o600, "fchmod: mode %o" % st.st_mode)
check(read_all(fd) == ref[:2000000], "bytes read back after unlink + ftruncate differ")
os.pwrite(fd, b"tail", 2000000); os.fsync(fd)
check(os.fstat(fd).st_size == 2000004, "write after unlink: size")
open(w + "/a.ino", "w").write(str(ino))
deadline = time.time() + limit
while not os.path.exists(w + "/a.close") and time.time() < deadline:
    time.sleep(0.1)
check(os.path.exists(w + "/a.close"), "never told to close")
check(read_all(fd) == ref[:2000000] + b"tail", "bytes read back before close differ")
os.close(fd)
print("unlinked-while-open file: fstat, ftruncate, fchmod, reads and writes worked", flush=True)
PY
holder=$!
wait_flag "$W/a.ino" 60
A_INO=$(cat "$W/a.ino")
[ "$(strips_of "$A_INO")" -gt 0 ] || fail "the open file has no strip files (wrong path?)"

log "d) depfs status shows the queue while the file is open"
[ "$(queue_files)" = 1 ] || fail "purge queue shows $(queue_files) files, not 1"
[ "$(queue_bytes)" = 2000004 ] || fail "purge queue shows $(queue_bytes) bytes, not 2000004"
depfs status | grep -q '^purge queue: 1 files, .* (2000004 bytes) pending' ||
  fail "depfs status does not show the queue: $(depfs status | tail -1)"
depfs status --prometheus > "$W/metrics" || fail "depfs status --prometheus"
OMCHECK="$TOP/tests/integration/openmetrics_check.py"
python3 "$OMCHECK" "$W/metrics" || fail "status --prometheus is not valid OpenMetrics"
[ "$(python3 "$OMCHECK" "$W/metrics" depfs_purge_queue_files)" = 1 ] &&
  [ "$(python3 "$OMCHECK" "$W/metrics" depfs_purge_queue_bytes)" = 2000004 ] &&
  [ "$(python3 "$OMCHECK" "$W/metrics" depfs_purge_floor_seconds)" = 0 ] ||
  fail "status --prometheus: queue $(grep '^depfs_purge' "$W/metrics" | tr '\n' ' ')"
[ "$(status_json | json_get purge_queue.floor_s)" = 0 ] || fail "a fresh MDS shows a purge floor"
sleep "$OPEN_CHECK_S"
[ "$(strips_of "$A_INO")" -gt 0 ] || fail "the strip files of a file still open went after $OPEN_CHECK_S s"
touch "$W/a.close"
wait "$holder" || fail "the unlinked-while-open checks failed"
wait_strips_gone "a file unlinked while open, after its close" "$A_INO"
log "its strip files went from all servers after the close"

log "a) hard links and rename over"
head -c 500000 /dev/urandom > "$W/l.ref"
cp "$W/l.ref" "$MNT/l1"; ln "$MNT/l1" "$MNT/l2"
L_INO=$(stat -c %i "$MNT/l1")
rm "$MNT/l1"
cp "$W/l.ref" "$MNT/over"; O_INO=$(stat -c %i "$MNT/over")
echo new > "$MNT/src"; mv "$MNT/src" "$MNT/over"
wait_strips_gone "a file replaced by rename" "$O_INO"
[ "$(strips_of "$L_INO")" -gt 0 ] || fail "unlinking one of two names removed the strip files"
cmp "$W/l.ref" "$MNT/l2" || fail "the other name's bytes differ"
[ "$(cat "$MNT/over")" = new ] || fail "rename over: wrong content"

# ------------------------------------------------------- b) client SIGKILL
log "b) a libdepfs client SIGKILLed right after unlinking what it wrote"
python3 - "$LIBDEPFS_SO" "$CONF" "$PYLIB" "$W/b.inos" <<'PY' && fail "the client was not killed"
import os, signal, sys
sys.path.insert(0, sys.argv[3])
from depfs_ctypes import Depfs
fs = Depfs(sys.argv[1], sys.argv[2])
inos = []
for i in range(40):
    fh = fs.open("/b%d" % i, os.O_CREAT | os.O_RDWR)
    fs.pwrite(fh, os.urandom(100000), 0)
    inos.append(fs.ino(fh))
    fs.close(fh)
open(sys.argv[4], "w").write(" ".join(map(str, inos)) + "\n")
for i in range(40):
    fs.unlink("/b%d" % i)
os.kill(os.getpid(), signal.SIGKILL)
PY
read -r -a B_INOS < "$W/b.inos"
[ "${#B_INOS[@]}" = 40 ] || fail "the client wrote ${#B_INOS[@]} files, not 40"
wait_strips_gone "files of a killed client" "${B_INOS[@]}"
log "the strip files of its 40 files went"

# ------------------------------------------------- c) MDS and purger crash
log "c) $MANY files and one held open by a libdepfs client; MDS and depfs-recovery SIGKILLed"
mkdir "$MNT/many"
python3 - "$MNT/many" "$MANY" <<'PY'
import os, sys
for i in range(int(sys.argv[2])):
    with open(os.path.join(sys.argv[1], "f%d" % i), "wb") as f:
        f.write(b"%d\n" % i * 100)
PY
head -c 1500000 /dev/urandom > "$W/held.ref"
cp "$W/held.ref" "$MNT/held"
head -c 700000 /dev/urandom > "$W/held2.ref"
cp "$W/held2.ref" "$MNT/held2"   # held open across the MDS crash, unlinked after it
head -c 900000 /dev/urandom > "$MNT/late"  # closed, unlinked after the MDS crash
C_INOS=$(python3 -c 'import os, sys; d = sys.argv[1]; print(" ".join(str(os.stat(os.path.join(d, n)).st_ino) for n in os.listdir(d)))' "$MNT/many")
python3 - "$LIBDEPFS_SO" "$CONF" "$PYLIB" "$W" "$W/held.ref" "$(tscale 120)" <<'PY' &
import os, sys, time
sys.path.insert(0, sys.argv[3])
from depfs_ctypes import Depfs
w, ref, limit = sys.argv[4], open(sys.argv[5], "rb").read(), float(sys.argv[6])
ref2 = open(w + "/held2.ref", "rb").read()
fs = Depfs(sys.argv[1], sys.argv[2])
fh = fs.open("/held", os.O_RDONLY)
fh2 = fs.open("/held2", os.O_RDONLY)
open(w + "/held.tmp", "w").write("%d %d\n" % (fs.ino(fh), fs.ino(fh2)))
os.rename(w + "/held.tmp", w + "/held.ino")
deadline = time.time() + limit
while not os.path.exists(w + "/held.read") and time.time() < deadline:
    time.sleep(0.1)
if not os.path.exists(w + "/held.read"):
    print("FAIL: never told to read", flush=True); sys.exit(1)
got = fs.pread(fh, len(ref) + 1, 0)
got2 = fs.pread(fh2, len(ref2) + 1, 0)
fs.close(fh)
fs.close(fh2)
fs.unmount()
if got != ref or got2 != ref2:
    print("FAIL: a held file reads bytes that differ from what was written (%d, %d)"
          % (len(got), len(got2)), flush=True)
    sys.exit(1)
print("the files held open read back right after the crashes", flush=True)
PY
reader=$!
wait_flag "$W/held.ino" 60
read -r H_INO H2_INO < "$W/held.ino"
LATE_INO=$(stat -c %i "$MNT/late")

lc kill recovery >/dev/null   # so the unlinks are still queued when the MDS dies
rm -r "$MNT/many" "$MNT/held"
[ "$(queue_files)" = $((MANY + 1)) ] || fail "queue has $(queue_files) files after the rm, not $((MANY + 1))"
lc kill mds >/dev/null
lc restart mds >/dev/null
[ "$(queue_files)" = $((MANY + 1)) ] || fail "the MDS lost queue entries in its crash: $(queue_files) left"
# the crash forgot no handle (its holds journal): no floor
[ "$(status_json | json_get purge_queue.floor_s)" = 0 ] ||
  fail "after the MDS process crashed it keeps every unlinked file until $(status_json | json_get purge_queue.floor_s): its holds journal was not trusted"
log "the queue survived the MDS crash; depfs-recovery back, killed mid-drain"
lc restart recovery >/dev/null
deadline=$((SECONDS + $(tscale 30)))
while :; do
  q=$(queue_files)
  [ "$q" -lt $((MANY + 1)) ] && break
  [ "$SECONDS" -lt "$deadline" ] || fail "depfs-recovery drained nothing in $(tscale 30) s"
  sleep 0.05
done
lc kill recovery >/dev/null
left=$(queue_files)
log "killed depfs-recovery with $left of $((MANY + 1)) entries left"
[ "$left" -gt 1 ] || fail "the drain ended ($left left) before depfs-recovery could be killed in its middle"
[ "$(strips_of "$H_INO")" -gt 0 ] || fail "the strip files of the file held open are gone"
lc restart recovery >/dev/null
# shellcheck disable=SC2086
wait_strips_gone "files unlinked before an MDS and a purger crash" $C_INOS
deadline=$((SECONDS + $(tscale "$PURGE_BOUND_S")))
until [ "$(queue_files)" = 1 ]; do
  [ "$SECONDS" -lt "$deadline" ] || fail "the queue holds $(queue_files) files, not just the held one"
  sleep 0.2
done
[ "$(strips_of "$H_INO")" -gt 0 ] || fail "the strip files of the file held open went"
log "unlinked after the MDS crash: a closed file goes, one held open across the crash stays"
rm "$MNT/late" "$MNT/held2"
wait_strips_gone "a closed file unlinked after the MDS crash" "$LATE_INO"
sleep "$OPEN_CHECK_S"
[ "$(strips_of "$H2_INO")" -gt 0 ] || fail "the strip files of a file held open across the MDS crash went when it was unlinked after it"
[ "$(queue_files)" = 2 ] || fail "the queue holds $(queue_files) files, not the 2 held open"
touch "$W/held.read"
wait "$reader" || fail "the files held open across the crashes did not read back right"
wait_strips_gone "files held open across the crashes, after their close" "$H_INO" "$H2_INO"

log "d) an MDS start that cannot trust its holds journal (another kernel boot) shows its purge floor"
lc kill mds >/dev/null
DEPFS_TEST_BOOT_ID=depfs-test-another-boot lc restart mds >/dev/null
floor=$(status_json | json_get purge_queue.floor_s)
[ "$floor" -gt "$(date +%s)" ] || fail "after a machine crash depfs status shows no purge floor (floor_s $floor)"
depfs status | grep -q '^purge floor: files unlinked now are kept until ' ||
  fail "depfs status does not say until when unlinked files are kept: $(depfs status | tail -2)"

# ------------------------------------------------------------ e) the end
log "e) strip files on disk are those of existing or held files; scrub"
live=$(find "$MNT" -type f -size +0 -printf '%i\n' | sort -u)
want=$(printf '%s\n' $live | sort -u)
got=$(strip_inos)
[ "$got" = "$want" ] || fail "strip files of inodes $(comm -13 <(echo "$want") <(echo "$got") | tr '\n' ' ')are not of a file; missing for $(comm -23 <(echo "$want") <(echo "$got") | tr '\n' ' ')"
cmp "$W/l.ref" "$MNT/l2" || fail "l2 changed"
scrub_clean
echo "PASS: unlinked files go through the purge queue (open handles keep them, crashes of a client, the MDS and depfs-recovery lose and leak nothing); scrub clean"
