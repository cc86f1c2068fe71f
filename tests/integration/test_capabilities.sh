#!/usr/bin/env bash
# test_capabilities - the I/O servers serve a file only to a client that
# holds the MDS's capability for it (issue 13): the unprivileged test user,
# holding a real ticket (MUNGE, MDS_REGISTER), sends raw frames to every
# I/O server (capattack.py): IO_READ of root's 0600 file with no
# capability, its own file's, an expired one, a forged one and another
# client's; IO_WRITE, IO_TRUNCATE, IO_REMOVE, a writing lock and IO_FSYNC
# of root's file; and with its own file's read-only capability a write, a
# truncate, a remove and a write's locked pre-read. Each is refused with
# EACCES and a reason, and root's file reads back unchanged, no lock is
# left, scrub is clean. The same user reads and writes its own files
# through the CLI and through libdepfs (partial-stripe writes: locked
# pre-reads), capabilities obtained from the MDS as usual, and removes and
# truncates them; root (the cluster key) needs none.
# The MDS makes a capability out only to the client of the ticket the
# request shows (mds/cap_owner.h): the test user's raw MDS_OPEN/MDS_CREATE
# naming another client id is refused, its own works, an expired ticket is
# renewed with its client id; a libdepfs process of the test user keeps
# opening, creating and writing across an MDS restart (a reconnect, a new
# MUNGE session, the same ticket).
source "$(dirname "$0")/lib.sh"
REF="$DEPFS_STATE-ref"
rm -rf "$REF"; mkdir -p "$REF"
need_test_user

cluster_up --servers 4
MDS_ADDR=$(awk '$1 == "mds_address" {print $3}' "$CONF")
IO_ADDRS=$(awk '$1 == "ioserver" {print $4}' "$CONF" | paste -sd,)
SOCK="$DEPFS_STATE/munge/munge.socket"
CAPATTACK="$TOP/tests/integration/capattack.py"
chmod o+rx "$DEPFS_STATE" "$REF" && chmod o+r "$CONF"
USER_DIR=$(mktemp -d /tmp/caps-user.XXXXXX) && chown "$TEST_USER" "$USER_DIR"

log "root's 0600 file (3 stripes and a bit) and the user's own file"
head -c $((3 * 3 * 65536 + 1234)) /dev/urandom >"$REF/secret"
cp "$REF/secret" "$MNT/secret" && chmod 600 "$MNT/secret"
mkdir "$MNT/pub" && chmod 1777 "$MNT/pub"
head -c 300000 /dev/urandom >"$REF/mine" && chmod 644 "$REF/mine"
as_user "'$DEPFS_BIN_DIR/depfs' --config '$CONF' cp '$REF/mine' depfs:/pub/mine" ||
  fail "$TEST_USER could not copy its file in through the CLI"
ino() { depfs layout get --json "$1" | json_get ino; }
ROOT_FID=$(ino /secret); OWN_FID=$(ino /pub/mine)

log "$TEST_USER registers (a real ticket); root mints an expired capability and another client's"
ME=$(as_user "DEPFS_CLUSTER_KEY= python3 '$CAPATTACK' register '$MDS_ADDR' '$SOCK' '$USER_DIR/ticket.json'") ||
  fail "$TEST_USER could not register"
NOW=$(date +%s)
EXPIRED=$(python3 "$CAPATTACK" mint "$DEPFS_CLUSTER_KEY" "$ROOT_FID" "$ME" 3 $((NOW - 3600)))
OTHER=$(python3 "$CAPATTACK" mint "$DEPFS_CLUSTER_KEY" "$ROOT_FID" $((ME + 1000)) 3 $((NOW + 600)))

log "raw MDS frames from $TEST_USER (client $ME): capabilities only for its own ticket's client"
USER_UID=$(id -u "$TEST_USER")
EXPIRED_TICKET=$(python3 "$CAPATTACK" mint-ticket "$DEPFS_CLUSTER_KEY" "$ME" "$USER_UID" $((NOW - 60)))
ROOT_TICKET=$(python3 "$CAPATTACK" mint-ticket "$DEPFS_CLUSTER_KEY" "$ME" 0 $((NOW + 600)))
PUB_INO=$(stat -c %i "$MNT/pub")
as_user "DEPFS_CLUSTER_KEY= python3 '$CAPATTACK' owner '$MDS_ADDR' '$SOCK' '$USER_DIR/ticket.json' '$OWN_FID' '$PUB_INO' '$EXPIRED_TICKET' '$ROOT_TICKET'" ||
  fail "the MDS made a capability out to a client the request's ticket is not (above)"
[ ! -e "$MNT/pub/for-another" ] || fail "a refused MDS_CREATE created /pub/for-another"
grep -h "refused: .*ticket of client $ME" "$DEPFS_STATE/logs/mds.log" | tail -1 |
  grep -q . || fail "the MDS logged no refusal of a capability for another client"

log "raw frames from $TEST_USER (client $ME) at every I/O server"
as_user "DEPFS_CLUSTER_KEY= python3 '$CAPATTACK' attack '$MDS_ADDR' '$SOCK' '$USER_DIR/ticket.json' '$IO_ADDRS' '$ROOT_FID' '$OWN_FID' '$EXPIRED' '$OTHER'" ||
  fail "$TEST_USER got through (above)"

log "afterwards: root's file and the user's unchanged, no lock held, refusals logged"
cmp "$MNT/secret" "$REF/secret" || fail "/secret changed (mount)"
depfs cp depfs:/secret "$DEPFS_STATE/secret.out" >/dev/null
cmp "$DEPFS_STATE/secret.out" "$REF/secret" || fail "/secret changed (libdepfs)"
cmp "$MNT/pub/mine" "$REF/mine" || fail "$TEST_USER's file changed"
[ "$(locks_held)" = 0 ] || fail "stripe locks held: $(locks_held)"
grep -h "refused: file .*no capability\|refused: .*expired\|refused: .*forged" \
  "$DEPFS_STATE"/logs/ioserver-*.log | tail -3 || fail "no I/O server logged a capability refusal"

log "the CLI as $TEST_USER: root's file refused, its own read, rewritten, truncated, removed"
if as_user "'$DEPFS_BIN_DIR/depfs' --config '$CONF' cp depfs:/secret '$USER_DIR/secret'" 2>"$USER_DIR/err"; then
  fail "$TEST_USER read root's 0600 file through the CLI"
fi
as_user "'$DEPFS_BIN_DIR/depfs' --config '$CONF' cp depfs:/pub/mine '$USER_DIR/mine'" ||
  fail "$TEST_USER could not read its own file"
cmp "$USER_DIR/mine" "$REF/mine" || fail "$TEST_USER's file came back different"

log "libdepfs as $TEST_USER: partial-stripe writes (locked pre-reads), a read-only handle, truncate, unlink"
cat >"$USER_DIR/lib.py" <<PY
import os, sys
sys.path.insert(0, "$TOP/tests/integration")
from depfs_ctypes import Depfs, default_lib
fs = Depfs(default_lib("$TOP"), "$CONF")
ref = bytearray(open("$REF/mine", "rb").read())
fh = fs.open("/pub/mine", os.O_RDWR)
for off in (1000, 70000, 250000):
    piece = os.urandom(3000)
    fs.pwrite(fh, piece, off)
    ref[off:off + len(piece)] = piece
fs.fsync(fh)
assert fs.pread(fh, len(ref), 0) == bytes(ref), "read back differs"
fs.close(fh)
fh = fs.open("/pub/mine", os.O_RDONLY)
assert fs.pread(fh, len(ref), 0) == bytes(ref), "read-only handle reads differently"
try:
    fs.pwrite(fh, b"x", 0)
    sys.exit("a read-only handle wrote")
except OSError:
    pass
fs.close(fh)
open("$USER_DIR/mine.ref", "wb").write(ref)
fh = fs.open("/pub/other", os.O_RDWR | os.O_CREAT, 0o600)
fs.pwrite(fh, os.urandom(200000), 0)
fs.close(fh)
fh = fs.open("/pub/other", os.O_WRONLY)
fs._check(fs.lib.depfs_ftruncate(fh, 1000), "depfs_ftruncate")
fs.close(fh)
fh = fs.open("/pub/gone", os.O_RDWR | os.O_CREAT, 0o600)
fs.pwrite(fh, os.urandom(200000), 0)
fs.close(fh)
fs.unmount()
print("libdepfs: written, read back, read-only handle refused to write")
PY
as_user "DEPFS_BIN_DIR='$DEPFS_BIN_DIR' python3 '$USER_DIR/lib.py'" || fail "libdepfs as $TEST_USER failed"
cmp "$MNT/pub/mine" "$USER_DIR/mine.ref" || fail "$TEST_USER's libdepfs writes did not land"
[ "$(stat -c %s "$MNT/pub/other")" = 1000 ] || fail "/pub/other is $(stat -c %s "$MNT/pub/other") bytes"
as_user "'$DEPFS_BIN_DIR/depfs' --config '$CONF' scrub /pub/mine /pub/other" ||
  fail "$TEST_USER could not scrub its own files"
GONE_FID=$(ino /pub/gone)
strips_of_gone() {
  for id in $(awk '$1 == "ioserver" {print $3}' "$CONF"); do
    ls "$(io_dir "$id")/strips/$(printf '%016x' "$GONE_FID")" 2>/dev/null || true
  done | wc -l
}
[ "$(strips_of_gone)" -gt 0 ] || fail "/pub/gone has no strip files to remove (wrong path?)"
as_user "'$DEPFS_BIN_DIR/depfs' --config '$CONF' rm /pub/gone" ||
  fail "$TEST_USER could not remove its own file"
gone=0 # the purge queue drains in the background (depfs-recovery, every second): wait, bounded
for _ in $(seq 100); do
  [ "$(strips_of_gone)" = 0 ] && { gone=1; break; }
  sleep 0.1
done
[ "$gone" = 1 ] || fail "the strip files of the removed /pub/gone are still there"

log "libdepfs as $TEST_USER across an MDS restart: reconnect, same ticket, capabilities still its own"
cat >"$USER_DIR/reconnect.py" <<PY
import os, sys, time
sys.path.insert(0, "$TOP/tests/integration")
from depfs_ctypes import Depfs, default_lib
fs = Depfs(default_lib("$TOP"), "$CONF")
before = os.urandom(150000)
fh = fs.open("/pub/before", os.O_RDWR | os.O_CREAT, 0o600)
fs.pwrite(fh, before, 0)
fs.close(fh)
open("$USER_DIR/ready", "w").close()
for _ in range(600):  # the MDS restarts meanwhile: at most 60 s
    if os.path.exists("$USER_DIR/go"):
        break
    time.sleep(0.1)
else:
    sys.exit("no go from the test")
after = os.urandom(150000)
fh = fs.open("/pub/after", os.O_RDWR | os.O_CREAT, 0o600)
fs.pwrite(fh, after, 0)
fs.close(fh)
fh = fs.open("/pub/before", os.O_RDWR)
assert fs.pread(fh, len(before), 0) == before, "/pub/before reads differently"
fs.pwrite(fh, after[:5000], 1000)
fs.close(fh)
fs.unmount()
open("$USER_DIR/after.ref", "wb").write(after)
open("$USER_DIR/before.ref", "wb").write(before[:1000] + after[:5000] + before[6000:])
print("libdepfs: created, wrote and reopened files after the MDS restart")
PY
chown "$TEST_USER" "$USER_DIR"
as_user "DEPFS_BIN_DIR='$DEPFS_BIN_DIR' python3 '$USER_DIR/reconnect.py'" &
user_pid=$!
for _ in $(seq 300); do [ -e "$USER_DIR/ready" ] && break; sleep 0.1; done
[ -e "$USER_DIR/ready" ] || { kill "$user_pid"; fail "the libdepfs process did not get ready"; }
"$LC" kill mds
"$LC" restart mds
touch "$USER_DIR/go"
wait "$user_pid" || fail "libdepfs as $TEST_USER failed after the MDS restart"
cmp "$MNT/pub/after" "$USER_DIR/after.ref" || fail "/pub/after differs"
cmp "$MNT/pub/before" "$USER_DIR/before.ref" || fail "/pub/before differs"

rm -rf "$USER_DIR"
cmp "$MNT/secret" "$REF/secret" || fail "/secret changed"
scrub_clean
rm -rf "$REF"
echo "PASS: without the MDS's capability for the file, the client and the access, a ticket holder reads, writes, truncates, removes and locks nothing at the I/O servers; root's file unchanged; the user's own files work through the CLI and libdepfs"
