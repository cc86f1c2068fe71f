#!/usr/bin/env bash
# test_tools - the ordinary tools a user reaches for behave on the mount as
# on a local file system: cp, cat, ls -l, mkdir, mv, rm, ln, ln -s, chmod,
# chown, touch, truncate, stat, df, dd (also O_DIRECT), mkfifo, sparse files,
# rename over, fallocate, mmap, times set before a close (cp -a, tar x),
# xattrs through cp --preserve=xattr, tar --xattrs and rsync -X,
# the mount's type and read-ahead window. Ends with a clean scrub.
source "$(dirname "$0")/lib.sh"
cluster_up --servers 8
W="$DEPFS_STATE/work"; mkdir -p "$W"
cd "$MNT"

mount | grep -q " $MNT type fuse.depfs " || fail "mount type is not fuse.depfs: $(mount | grep "$MNT")"
# depfs-fuse (root) widened the kernel's read-ahead window of its mount
# (right after FUSE_INIT, on a loop thread: allow it a moment)
for _ in $(seq 20); do
    ra_kb=$(cat "/sys/class/bdi/$(mountpoint -d "$MNT")/read_ahead_kb")
    [ "$ra_kb" != 16384 ] || break
    sleep 0.1
done
[ "$ra_kb" = 16384 ] || fail "read-ahead window of the mount is $ra_kb KiB, not 16384"

log "cp / cat / cmp"
head -c 5000000 /dev/urandom > "$W/a"
cp "$W/a" a; cmp "$W/a" a || fail "cp round trip differs"
cat a > "$W/a2"; cmp "$W/a" "$W/a2" || fail "cat differs"
[ "$(stat -c %s a)" = 5000000 ] || fail "size after cp"

log "mkdir -p / ls -l / mv / rm"
mkdir -p x/y/z; [ -d x/y/z ] || fail "mkdir -p"
echo hello > x/y/z/h
ls -l x/y/z | grep -q ' h$' || fail "ls -l does not list h"
mv x/y/z/h x/h2; [ "$(cat x/h2)" = hello ] || fail "mv"
[ ! -e x/y/z/h ] || fail "mv left the source"
echo over > x/o; mv x/o x/h2; [ "$(cat x/h2)" = over ] || fail "mv over an existing file"
mv x/y x/y2; [ -d x/y2/z ] || fail "mv of a directory"
rm -r x; [ ! -e x ] || fail "rm -r"

log "ln / ln -s"
echo linked > l1; ln l1 l2; [ "$(stat -c %h l1)" = 2 ] || fail "nlink after ln"
echo more >> l2; [ "$(cat l1)" = "$(printf 'linked\nmore')" ] || fail "hard link content"
ln -s l1 s1; [ "$(readlink s1)" = l1 ] || fail "readlink"; [ "$(cat s1)" = "$(cat l1)" ] || fail "read through symlink"
rm l1; [ "$(cat l2)" = "$(printf 'linked\nmore')" ] || fail "content after unlinking one name"
[ ! -e s1 ] || fail "dangling symlink still resolves"

log "chmod / chown / touch / stat"
touch t; chmod 640 t; [ "$(stat -c %a t)" = 640 ] || fail "chmod"
chown 1234:5678 t; [ "$(stat -c %u:%g t)" = 1234:5678 ] || fail "chown"
touch -d '2001-02-03 04:05:06' t; [ "$(stat -c %Y t)" = "$(date -d '2001-02-03 04:05:06' +%s)" ] || fail "touch -d"
bs=$(stat -c %o a); [ "$bs" -ge 65536 ] || fail "st_blksize $bs is not a stripe"

log "truncate / sparse files"
truncate -s 10M sp; [ "$(stat -c %s sp)" = 10485760 ] || fail "truncate grow"
[ "$(head -c 10485760 sp | tr -d '\0' | wc -c)" = 0 ] || fail "hole does not read zeros"
printf 'tail' | dd of=sp bs=1 seek=20000000 conv=notrunc status=none
[ "$(stat -c %s sp)" = 20000004 ] || fail "write past end"
cp a tr; truncate -s 123457 tr; cmp <(head -c 123457 "$W/a") tr || fail "truncate into a stripe"
truncate -s 300000 tr; cmp <(head -c 123457 "$W/a"; head -c $((300000 - 123457)) /dev/zero) tr || fail "regrow reads zeros"

log "dd, also O_DIRECT"
dd if="$W/a" of=dd1 bs=1M status=none; cmp "$W/a" dd1 || fail "dd"
dd if="$W/a" of=dd2 bs=1M oflag=direct status=none; cmp "$W/a" dd2 || fail "dd oflag=direct"
dd if=dd2 of="$W/dd2" bs=1M iflag=direct status=none; cmp "$W/a" "$W/dd2" || fail "dd iflag=direct"

log "mkfifo / fallocate / mmap"
mkfifo ff; [ -p ff ] || fail "mkfifo"
fallocate -l 1M fa; [ "$(stat -c %s fa)" = 1048576 ] || fail "fallocate"
head -c 1048576 /dev/urandom > fa; cp fa "$W/fa"
fallocate -p -o 5000 -l 70000 fa || fail "punch hole"
python3 - "$W/fa" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f: f.seek(5000); f.write(bytes(70000))
PY
cmp "$W/fa" fa || fail "punched range does not read zeros"
[ "$(stat -c %s fa)" = 1048576 ] || fail "punch hole changed the size"
if fallocate -c -o 0 -l 65536 fa 2>/dev/null; then fail "collapse range claimed to work"; fi
python3 - "$MNT/mm" <<'PY' || fail "mmap write/read"
import mmap, os, sys
p = sys.argv[1]
with open(p, "wb") as f: f.truncate(1 << 20)
with open(p, "r+b") as f:
    m = mmap.mmap(f.fileno(), 1 << 20); m[1000:1005] = b"hello"; m.flush(); m.close()
with open(p, "rb") as f:
    f.seek(1000); assert f.read(5) == b"hello"
PY

log "times set before the close outlive the written data (cp -a, tar x)"
python3 - "$MNT/timed" <<'PY' || fail "a time set on an open file after writing it was lost at its close"
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
os.write(fd, os.urandom(100000))
os.utime(fd, (981173106, 981173106))
os.close(fd)
st = os.stat(sys.argv[1])
if int(st.st_mtime) != 981173106:
    sys.exit("mtime %d after close, set 981173106" % st.st_mtime)
fd = os.open(sys.argv[1], os.O_WRONLY)  # a write after the time counts again
os.write(fd, b"x")
os.close(fd)
if int(os.stat(sys.argv[1]).st_mtime) == 981173106:
    sys.exit("a write after the set time did not change mtime")
PY
mkdir -p "$W/tree/sub"
for i in 1 2 3; do head -c $((i * 70000)) /dev/urandom > "$W/tree/sub/f$i"; done
touch -d "2001-02-03 04:05:06" "$W/tree/sub/f1" "$W/tree/sub/f2" "$W/tree/sub/f3"
cp -a "$W/tree" "$MNT/cpa"
tar -C "$W" -cf "$W/tree.tar" tree && mkdir "$MNT/tarx" && tar -C "$MNT/tarx" -xf "$W/tree.tar"
for i in 1 2 3; do
    want=$(stat -c %Y "$W/tree/sub/f$i")
    [ "$(stat -c %Y "$MNT/cpa/sub/f$i")" = "$want" ] || fail "cp -a lost the mtime of f$i"
    [ "$(stat -c %Y "$MNT/tarx/tree/sub/f$i")" = "$want" ] || fail "tar x lost the mtime of f$i"
done

log "xattrs copied by cp --preserve=xattr, tar --xattrs and rsync -X"
head -c 300000 /dev/urandom > "$MNT/xa"
setfattr -n user.note -v hello "$MNT/xa"
getfattr -d -m - "$MNT/xa" 2>/dev/null | grep -q "user.depfs.layout" && fail "a file's layout is listed (copy tools would set it on the copy)"
getfattr --only-values -n user.depfs.layout "$MNT/xa" | grep -q '@' || fail "the layout xattr does not answer by name"
cp --preserve=xattr "$MNT/xa" "$MNT/xb" || fail "cp --preserve=xattr between DePFS files"
[ "$(getfattr --only-values -n user.note "$MNT/xb")" = hello ] || fail "cp --preserve=xattr lost user.note"
cmp "$MNT/xa" "$MNT/xb" || fail "cp --preserve=xattr: bytes differ"
setfattr -n user.depfs.layout -v "$(getfattr --only-values -n user.depfs.layout "$MNT/xa")" "$MNT/xa" ||
  fail "setting a non-empty file's own layout again was refused"
tar -C "$MNT" --xattrs --xattrs-include='user.*' -cf "$W/x.tar" xa && mkdir "$MNT/xt" &&
  tar -C "$MNT/xt" --xattrs --xattrs-include='user.*' -xf "$W/x.tar" || fail "tar --xattrs round trip"
[ "$(getfattr --only-values -n user.note "$MNT/xt/xa")" = hello ] || fail "tar --xattrs lost user.note"
command -v rsync >/dev/null || fail "rsync is not installed (deploy/install-deps installs it)"
rsync -X "$MNT/xa" "$MNT/xr" || fail "rsync -X between DePFS files"
[ "$(getfattr --only-values -n user.note "$MNT/xr")" = hello ] || fail "rsync -X lost user.note"

log "df"
df -h "$MNT" | tail -1
[ "$(df --output=size -B1 "$MNT" | tail -1)" -gt 0 ] || fail "df size is zero"

cd /
scrub_clean
echo "PASS: ordinary tools behave as on a local file system"
