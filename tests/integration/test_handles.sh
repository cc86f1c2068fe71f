#!/usr/bin/env bash
# test_handles - inode handles (mds/handles.h, README "Inode handles"): a
# user proved by MUNGE reaches an inode by number only with the tag the MDS
# gave with it on a path it may walk. User A makes a 0700 directory with a
# 0644 file, a symlink and a 0777 subdirectory in it, and a 0744 directory
# (others may list it, not search it), through a depfs-fuse of its own
# kind: proved by MUNGE (no cluster key), so every request it sends names
# its inodes with their tags (libdepfs's table, the kernel's lookup counts
# and FORGETs). Through that mount A reads, stats, lists, links and
# follows its files, also after the kernel forgot every inode it held
# (drop_caches). User B, by raw frames (handleattack.py), is refused
# (EACCES) GETATTR, OPEN, READLINK, READDIR, LINK, LOOKUP, CREATE, SETATTR,
# EXTEND and GETXATTR of the inodes inside A's directory by guessed number,
# with no tag, a forged one or another inode's; its own files work with the
# tags its lookups from the root gave; a READDIR of a directory it may
# search gives tags, one of a directory it may only read gives none. B's
# CLI and mount work on its own files. No legitimate request of A, B or
# the CLI was refused for a missing tag; B's attempts were, logged at the
# MDS with the op and the inode; A's files are as they were.
source "$(dirname "$0")/lib.sh"
need_test_user
USER_A=depfs-test-a
if ! id "$USER_A" >/dev/null 2>&1; then
  useradd --system --no-create-home --shell /usr/sbin/nologin "$USER_A" ||
    id "$USER_A" >/dev/null 2>&1 || fail "cannot create the test user $USER_A"
fi
as_a() { su -s /bin/bash "$USER_A" -c "$*"; }
as_b() { as_user "$@"; }

M2="$DEPFS_STATE/mnt-munge"
# refusals for want of a handle at the MDS
refusals() { grep -c "named inode .* handle tag" "$DEPFS_STATE/logs/mds.log" || true; }

cluster_up --servers 4
MDS_ADDR=$(awk '$1 == "mds_address" {print $3}' "$CONF")
SOCK="$DEPFS_STATE/munge/munge.socket"
WORK=$(mktemp -d /tmp/handles.XXXXXX)
chown "$TEST_USER" "$WORK" && chmod o+rx "$DEPFS_STATE" "$WORK" && chmod o+r "$CONF"
mkdir "$MNT/pub" && chmod 1777 "$MNT/pub"

log "a depfs-fuse proved by MUNGE (root on a client node: it acts for its callers)"
sed "s|^cluster_key = .*|cluster_key = $DEPFS_STATE/no-such.key|" "$CONF" >"$DEPFS_STATE/munge.conf"
chmod o+r "$DEPFS_STATE/munge.conf"
mount_m2 "$DEPFS_STATE/munge.conf" "$DEPFS_STATE/logs/fuse-munge.log"

log "user A's private tree, through that mount"
as_a "mkdir '$M2/pub/a' && chmod 700 '$M2/pub/a' && echo 'for A only' >'$M2/pub/a/secret' &&
      chmod 644 '$M2/pub/a/secret' && ln -s /very/private/target '$M2/pub/a/lnk' &&
      mkdir '$M2/pub/a/sub' && chmod 777 '$M2/pub/a/sub' && echo f >'$M2/pub/a/sub/f' &&
      chmod 666 '$M2/pub/a/sub/f' && mkdir '$M2/pub/lo' && echo lo >'$M2/pub/lo/f' &&
      chmod 644 '$M2/pub/lo/f' && chmod 744 '$M2/pub/lo'" || fail "A could not make its tree"
a_ops() {
  as_a "[ \"\$(cat '$M2/pub/a/secret')\" = 'for A only' ] && stat '$M2/pub/a/sub/f' >/dev/null &&
        [ \"\$(readlink '$M2/pub/a/lnk')\" = /very/private/target ] &&
        [ \"\$(ls '$M2/pub/a/sub')\" = f ] && ln '$M2/pub/a/secret' '$M2/pub/a/hard$1' &&
        [ \"\$(cat '$M2/pub/a/hard$1')\" = 'for A only' ] && echo more >>'$M2/pub/a/sub/f' &&
        getfattr -d '$M2/pub/a/sub/f' >/dev/null"
}
a_ops 1 || fail "A could not read, stat, follow, list or link its own files through the mount"
log "  the kernel forgets every inode it holds (FORGET), then A again"
sync
if echo 2 >/proc/sys/vm/drop_caches 2>/dev/null; then
  a_ops 2 || fail "A's files through the mount failed after the kernel forgot them"
else
  log "  (cannot drop the kernel's caches here: skipped)"
fi

log "user B: its own files through the mount and the CLI"
as_b "mkdir '$M2/pub/b' && echo mine >'$M2/pub/b/mine' && [ \"\$(cat '$M2/pub/b/mine')\" = mine ]" ||
  fail "B could not work in its own directory through the mount"
if as_b "cat '$M2/pub/a/secret'" >/dev/null 2>&1; then fail "B read A's secret through the mount"; fi
as_b "'$DEPFS_BIN_DIR/depfs' --config '$CONF' ls -l /pub /pub/b >'$WORK/ls.out' &&
      '$DEPFS_BIN_DIR/depfs' --config '$CONF' cp depfs:/pub/b/mine '$WORK/mine' &&
      '$DEPFS_BIN_DIR/depfs' --config '$CONF' stat /pub/b/mine >/dev/null" ||
  fail "B's CLI could not list, read or stat its own files"
grep -q mine "$WORK/ls.out" || fail "B's ls -l did not list its file: $(cat "$WORK/ls.out")"
[ "$(cat "$WORK/mine")" = mine ] || fail "B's file came back different"
[ "$(refusals)" = 0 ] || fail "a legitimate request was refused for want of a handle: $(grep 'handle tag' "$DEPFS_STATE/logs/mds.log" | head -3)"

log "B's raw frames: A's inodes by guessed number"
subf_before=$(stat -c %s "$MNT/pub/a/sub/f")
ino() { stat -c %i "$MNT/$1"; }
max=0
for f in pub pub/a pub/a/secret pub/a/lnk pub/a/sub pub/a/sub/f pub/lo pub/lo/f pub/b pub/b/mine; do
  i=$(ino "$f"); [ "$i" -gt "$max" ] && max=$i
done
cat >"$WORK/inos.json" <<EOF
{"a": $(ino pub/a), "secret": $(ino pub/a/secret), "lnk": $(ino pub/a/lnk), "sub": $(ino pub/a/sub),
 "subf": $(ino pub/a/sub/f), "lo": $(ino pub/lo), "lof": $(ino pub/lo/f), "pub": $(ino pub),
 "mine": $(ino pub/b/mine), "max": $max}
EOF
chmod o+r "$WORK/inos.json"
as_b "DEPFS_CLUSTER_KEY= python3 '$TOP/tests/integration/handleattack.py' attack '$MDS_ADDR' '$SOCK' '$WORK/inos.json'" ||
  fail "B got at A's inodes by number, or its own did not work (above)"

log "afterwards: refusals logged, A's files as they were"
[ "$(refusals)" -gt 0 ] || fail "the MDS logged no refusal for a missing or wrong handle"
grep -h "named inode .* handle tag" "$DEPFS_STATE/logs/mds.log" | tail -2
grep -q "getattr from .* refused: .*named inode $(ino pub/a/secret) (ino) with no handle tag" \
  "$DEPFS_STATE/logs/mds.log" || fail "no refusal naming the op and A's secret"
[ "$(cat "$MNT/pub/a/secret")" = "for A only" ] || fail "A's secret changed"
[ ! -e "$MNT/pub/stolen" ] && [ ! -e "$MNT/pub/a/sub/planted" ] || fail "B linked or created inside A's tree"
[ "$(stat -c %s "$MNT/pub/a/sub/f")" = "$subf_before" ] ||
  fail "A's 0666 file changed size: $subf_before -> $(stat -c %s "$MNT/pub/a/sub/f")"

umount_m2
rm -rf "$WORK"
scrub_clean
echo "PASS: a MUNGE user's bare, forged or borrowed inode handles are refused inside another user's 0700 directory (GETATTR, OPEN, READLINK, READDIR, LINK, LOOKUP, CREATE, SETATTR, EXTEND, GETXATTR); its own files, its CLI and a MUNGE depfs-fuse work with the tags their walks gave, also after the kernel's FORGETs; a read-only directory's listing carries no tags"
