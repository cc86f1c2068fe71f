#!/usr/bin/env bash
# test_dir_revalidate - through FUSE the kernel drops a directory's cached
# attributes after each create or remove in it and asks for them again
# before the next one (default_permissions). The MDS's reply to the change
# carries them (MdsReply.dir_attr) and depfs-fuse answers that question
# without asking the MDS (libdepfs depfs_dir_attr_take):
#   - counted, not timed: FILES creates and FILES removes in one directory
#     send at most MAX_GETATTR_PCT percent of that many MDS_GETATTR
#     requests (one per create and one per remove before).
#   - what the kernel then shows is what the MDS has: the directory's link
#     count after mkdir and rmdir in it, its mode after a chmod that
#     follows a create, and its mtime after a create (against the CLI's
#     stat, which asks the MDS).
source "$(dirname "$0")/lib.sh"

FILES=40
MAX_GETATTR_PCT=25
MDS_GETATTR=3          # proto MdsOp
TRACE_WAIT_TENTHS=100

# frames TRACE TYPE: requests of frame type TYPE that depfs-fuse sent
# (strace -xx of sendmsg: the frame header's magic "DePF", version, type)
frames() {
  python3 - "$1" "$2" <<'PY'
import re, sys
n = 0
for line in open(sys.argv[1]):
    m = re.search(r'sendmsg\(\d+, .*?iov_base="((?:\\x[0-9a-f]{2})+)', line)
    if not m:
        continue
    b = bytes(int(x, 16) for x in re.findall(r'\\x([0-9a-f]{2})', m.group(1)))
    if b[:4] == b"DePF" and len(b) >= 8 and int.from_bytes(b[6:8], "little") == int(sys.argv[2]):
        n += 1
print(n)
PY
}
# the MDS's view of a path: "MODE NLINK MTIME_SEC MTIME_NSEC" (mode decimal)
mds_view() { depfs stat --json "$1" | json_get mode nlink mtime.sec mtime.nsec; }

cluster_up --servers 4 --fresh
D="$MNT/d"
mkdir "$D"

log "counting MDS_GETATTR requests over $FILES creates and $FILES removes"
TRACE="$DEPFS_STATE/fuse-sendmsg.trace"
fuse_strace "$TRACE" -e trace=sendmsg -xx -s 64
for ((i = 0; i < TRACE_WAIT_TENTHS; i++)); do # attached once a probe's lookup shows
  stat "$D/probe-$i" >/dev/null 2>&1 || true
  [ -s "$TRACE" ] && break
  sleep 0.1
done
[ -s "$TRACE" ] || fail "strace saw nothing sent by depfs-fuse"
before=$(frames "$TRACE" $MDS_GETATTR)
python3 - "$D" "$FILES" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    os.close(os.open(f"{d}/f{i}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
for i in range(n):
    os.unlink(f"{d}/f{i}")
PY
sleep 0.5 # the last release reaches depfs-fuse after close returns
fuse_strace_stop
getattrs=$(( $(frames "$TRACE" $MDS_GETATTR) - before ))
most=$(( 2 * FILES * MAX_GETATTR_PCT / 100 ))
log "  $getattrs MDS_GETATTR for $FILES creates + $FILES removes (at most $most)"
[ "$getattrs" -le "$most" ] ||
  fail "$getattrs MDS_GETATTR requests for $((2 * FILES)) changes: the directory's revalidation still asks the MDS"
[ -z "$(ls "$D")" ] || fail "files left in $D"

log "what the kernel shows is what the MDS has"
# expect_dir WHAT: the kernel's mode, nlink and mtime of $D equal the MDS's
expect_dir() {
  local k m
  k=$(python3 -c "import os, stat; s = os.stat('$D')
print('%o %d %d %d' % (stat.S_IMODE(s.st_mode), s.st_nlink, s.st_mtime_ns // 10**9, s.st_mtime_ns % 10**9))")
  m=$(mds_view /d | tr '\n' ' ' | xargs)
  m="$(printf '%o' "$(( ${m%% *} & 07777 ))") ${m#* }"
  [ "$k" = "$m" ] || fail "after $1: the kernel shows '$k' (mode nlink mtime s ns) for $D, the MDS '$m'"
  log "  after $1: $k"
}
touch "$D/a"
expect_dir "a create"
mkdir "$D/sub"
expect_dir "a mkdir"
touch "$D/b"
chmod 0700 "$D"
expect_dir "a create and a chmod"
rmdir "$D/sub"
expect_dir "an rmdir"
rm "$D/a"
expect_dir "an unlink"

scrub_clean
echo "PASS: the directory re-check after a create or remove is answered from the change, and the kernel shows the MDS's mode, link count and mtime"
