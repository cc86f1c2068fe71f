#!/usr/bin/env bash
# test_permissions - the MDS enforces POSIX permissions for whoever reaches
# it (issue 13): an unprivileged test user proved by MUNGE sends raw frames
# claiming uid 0 (permattack.py) - chmod/chown of root's file, unlink and
# rename over it, unlink in a sticky directory, the layout of root's
# directory, readdir of a 0700 directory, create in root's directory, chown
# of its own file to root, open of root's 0600 file, a hard link to it, a
# device node, a migrate swap of its own copy for root's files and of
# another client's copy for its own - and each is refused with EACCES/EPERM
# and changes nothing (checked afterwards), while the owner's own changes
# work, and a writer's SET_CTIME and size commits claiming 1970 or 2116
# leave ctime and mtime the MDS's. Through the CLI the user cannot read root's
# 0600 file nor write into root's directories, and can into its own. Root
# proved by MUNGE (the CLI without the cluster key) is squashed to 65534
# (root_squash); root's depfs-fuse on a client node (client_nodes) acts for
# the uid of its callers, also for a file it left open at depfs_unmount
# (the last flush and size commit act for the handle's writer, not the
# squashed process). The README's mount (the cluster key) still works
# for root, and the kernel's default_permissions still hold for the user.
source "$(dirname "$0")/lib.sh"
REF="$DEPFS_STATE-ref"
rm -rf "$REF"; mkdir -p "$REF"
need_test_user
TUID=$(id -u "$TEST_USER"); TGID=$(id -g "$TEST_USER")

cluster_up --servers 4
MDS_ADDR=$(awk '$1 == "mds_address" {print $3}' "$CONF")
SOCK="$DEPFS_STATE/munge/munge.socket"
chmod o+rx "$DEPFS_STATE" && chmod o+r "$CONF" && chmod o+rx "$REF"

log "root's files through the README mount (the cluster key): the root of the tree is root's"
head -c $((2 * 65536 + 321)) /dev/urandom >"$REF/secret"
cp "$REF/secret" "$MNT/secret" && chmod 600 "$MNT/secret"
mkdir "$MNT/pub" && chmod 1777 "$MNT/pub"
echo root >"$MNT/pub/rootfile" && chmod 666 "$MNT/pub/rootfile"
echo root >"$MNT/open666" && chmod 666 "$MNT/open666" # as long as rootfile (migrate copies)
mkdir "$MNT/priv" && chmod 700 "$MNT/priv" && echo hidden >"$MNT/priv/f"
chmod 755 "$MNT"
layout_before=$(getfattr --only-values -n user.depfs.layout "$MNT" 2>/dev/null || echo none)

log "the user makes its own file through the CLI"
head -c 100000 /dev/urandom >"$REF/mine" && chmod 644 "$REF/mine"
as_user "'$DEPFS_BIN_DIR/depfs' --config '$CONF' cp '$REF/mine' depfs:/pub/mine" ||
  fail "$TEST_USER could not copy a file into the sticky directory"
ino() { depfs layout get --json "$1" | json_get ino; }
INOS="$(ino /secret),1,$(ino /pub),$(ino /pub/rootfile),$(stat -c %i "$MNT/priv"),$(ino /pub/mine),$(ino /open666)"
[ "$(stat -c %u "$MNT/pub/mine")" = "$TUID" ] || fail "the user's file is not the user's"

log "raw frames from $TEST_USER claiming uid 0"
attack_start=$(date +%s)
as_user "DEPFS_CLUSTER_KEY= python3 '$TOP/tests/integration/permattack.py' attack '$MDS_ADDR' '$SOCK' '$INOS'" ||
  fail "$TEST_USER got through (above)"

log "afterwards: nothing changed"
sleep 1.5 # the mount's attribute cache (attr_timeout 1 s) forgets what it saw before
[ "$(stat -c '%a %u %g' "$MNT/secret")" = "600 0 0" ] ||
  fail "/secret changed: $(stat -c '%a %u %g' "$MNT/secret")"
cmp "$MNT/secret" "$REF/secret" || fail "/secret's data changed"
[ "$(cat "$MNT/pub/rootfile")" = root ] || fail "/pub/rootfile changed or went"
[ "$(stat -c %u "$MNT/pub/rootfile")" = 0 ] || fail "/pub/rootfile changed owner"
[ ! -e "$MNT/evil" ] || fail "the user created /evil"
[ ! -e "$MNT/pub/stolen" ] || fail "the user hard-linked root's 0600 file"
[ ! -e "$MNT/pub/mine-link" ] || fail "the user's own link of its file is still there"
[ ! -e "$MNT/pub/nulldev" ] || fail "the user made a device node"
[ -p "$MNT/pub/fifo" ] || fail "the user could not make a FIFO"
[ "$(cat "$MNT/open666")" = root ] && [ "$(stat -c %u "$MNT/open666")" = 0 ] ||
  fail "/open666 was replaced (migrate swap without write permission on /)"
ctime=$(stat -c %Z "$MNT/pub/rootfile") mtime=$(stat -c %Y "$MNT/pub/rootfile") now=$(date +%s)
[ "$ctime" -ge "$attack_start" ] && [ "$ctime" -le "$now" ] ||
  fail "a writer set /pub/rootfile's ctime to $ctime (the MDS's now is $now)"
[ "$mtime" -ge "$((attack_start - 3600))" ] && [ "$mtime" -le "$((now + 60))" ] ||
  fail "a writer's size commit set /pub/rootfile's mtime to $mtime"
[ "$(stat -c %u "$MNT/pub/mine")" = "$TUID" ] || fail "the user's file was given away"
[ "$(stat -c %a "$MNT/pub/mine")" = 640 ] || fail "the owner's own chmod did not happen"
layout_after=$(getfattr --only-values -n user.depfs.layout "$MNT" 2>/dev/null || echo none)
[ "$layout_before" = "$layout_after" ] || fail "the root directory's layout changed: $layout_before -> $layout_after"

log "the CLI as $TEST_USER: root's 0600 file, root's directories, a 0700 directory"
OUT=$(mktemp -d /tmp/perm-user.XXXXXX) && chown "$TEST_USER" "$OUT"
if as_user "'$DEPFS_BIN_DIR/depfs' --config '$CONF' cp depfs:/secret '$OUT/secret'" 2>"$OUT/err"; then
  fail "$TEST_USER read root's 0600 file through the CLI"
fi
grep -qi "permission denied" "$OUT/err" || fail "no clear error for the read: $(cat "$OUT/err")"
if as_user "'$DEPFS_BIN_DIR/depfs' --config '$CONF' cp '$REF/mine' depfs:/intruder" 2>/dev/null; then
  fail "$TEST_USER wrote into root's directory through the CLI"
fi
if as_user "'$DEPFS_BIN_DIR/depfs' --config '$CONF' ls /priv" >/dev/null 2>&1; then
  fail "$TEST_USER listed a 0700 directory through the CLI"
fi
if as_user "'$DEPFS_BIN_DIR/depfs' --config '$CONF' rm /pub/rootfile" 2>/dev/null; then
  fail "$TEST_USER removed root's file in a sticky directory through the CLI"
fi
as_user "'$DEPFS_BIN_DIR/depfs' --config '$CONF' cp depfs:/pub/mine '$OUT/mine'" ||
  fail "$TEST_USER could not read its own file"
cmp "$OUT/mine" "$REF/mine" || fail "$TEST_USER's file came back different"
as_user "'$DEPFS_BIN_DIR/depfs' --config '$CONF' mkdir /pub/d && '$DEPFS_BIN_DIR/depfs' --config '$CONF' cp '$REF/mine' depfs:/pub/d/x && '$DEPFS_BIN_DIR/depfs' --config '$CONF' rm /pub/d/x" ||
  fail "$TEST_USER could not work in its own directory"
[ ! -e "$MNT/intruder" ] || fail "/intruder exists"
[ -e "$MNT/pub/rootfile" ] || fail "/pub/rootfile went"

log "root by MUNGE (no cluster key): squashed to 65534"
sed "s|^cluster_key = .*|cluster_key = $DEPFS_STATE/no-such.key|" "$CONF" >"$DEPFS_STATE/munge-root.conf"
if "$DEPFS_BIN_DIR/depfs" --config "$DEPFS_STATE/munge-root.conf" cp depfs:/secret "$OUT/sq" 2>"$OUT/err"; then
  fail "root by MUNGE read a 0600 file: root_squash did not hold"
fi
grep -q "65534" "$OUT/err" || fail "the refusal does not name the squashed uid: $(cat "$OUT/err")"

log "root's depfs-fuse by MUNGE on a client node acts for its callers"
python3 "$TOP/tests/integration/permattack.py" actfor "$MDS_ADDR" "$SOCK" "$INOS" "$TUID" "$TGID" ||
  fail "acting for a caller went wrong (above)"
[ "$(stat -c %u "$MNT/pub/actfor")" = "$TUID" ] || fail "/pub/actfor is not $TEST_USER's"
[ ! -e "$MNT/squashed" ] || fail "squashed root created /squashed"

log "MUNGE root on a client node acting for $TEST_USER: a file left open at depfs_unmount keeps its bytes"
cat >"$OUT/atunmount.py" <<PY
import ctypes, os, sys
sys.path.insert(0, "$TOP/tests/integration")
from depfs_ctypes import Depfs, default_lib
class Cred(ctypes.Structure):
    _fields_ = [("uid", ctypes.c_uint32), ("gid", ctypes.c_uint32), ("ngroups", ctypes.c_uint),
                ("groups", ctypes.c_uint32 * 64)]
fs = Depfs(default_lib("$TOP"), "$DEPFS_STATE/munge-root.conf")
fs.lib.depfs_act_as.argtypes = [ctypes.c_void_p]
cred = Cred($TUID, $TGID, 0)
fs._check(fs.lib.depfs_act_as(ctypes.byref(cred)), "depfs_act_as")
data = os.urandom(300000)  # a full stripe and a write-behind tail
fh = fs.open("/pub/atunmount", os.O_RDWR | os.O_CREAT, 0o600)
fs.pwrite(fh, data, 0)
fs._check(fs.lib.depfs_act_as(None), "depfs_act_as")
fs.unmount()  # the handle still open: unmount writes it back
open("$OUT/atunmount.ref", "wb").write(data)
PY
python3 "$OUT/atunmount.py" || fail "the libdepfs program acting for $TEST_USER failed"
depfs cp depfs:/pub/atunmount "$OUT/atunmount.out" >/dev/null
[ "$(stat -c %u:%s "$MNT/pub/atunmount")" = "$TUID:300000" ] ||
  fail "/pub/atunmount is $(stat -c %u:%s "$MNT/pub/atunmount") (uid:size), not $TUID:300000"
cmp "$OUT/atunmount.out" "$OUT/atunmount.ref" || fail "/pub/atunmount lost bytes written before unmount"

log "the mount: root works, the user is held by default_permissions and the MDS"
echo again >"$MNT/root-again" || fail "root cannot write through the mount"
if as_user "cat '$MNT/secret'" >/dev/null 2>&1; then fail "$TEST_USER read /secret through the mount"; fi
if as_user "touch '$MNT/intruder2'" 2>/dev/null; then fail "$TEST_USER created in / through the mount"; fi
as_user "echo mine >'$MNT/pub/viamount'" || fail "$TEST_USER could not write in /pub through the mount"
[ "$(stat -c %u "$MNT/pub/viamount")" = "$TUID" ] || fail "the mount's file is not $TEST_USER's"
grep -h "refused: Permission denied\|refused: Operation not permitted" "$DEPFS_STATE/logs/mds.log" | tail -4 ||
  fail "the MDS logged no permission refusal"

rm -rf "$OUT" "$REF"
scrub_clean
echo "PASS: a MUNGE user's raw frames claiming root, and its CLI, are refused where POSIX refuses and change nothing; its own files work; MUNGE root is squashed; depfs-fuse acts for its callers on a client node; the mount still works"
