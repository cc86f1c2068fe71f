#!/usr/bin/env bash
# test_migrate - `depfs migrate` (README "Migrating a file to another
# layout") on a real cluster with a FUSE mount:
#   a) a file goes 8@6 -> 4@2 -> 8@7 (and a sparse one, and a directory
#      recursively, with --json): bytes, mtime, mode, owner and xattrs
#      unchanged, the layout the one asked, the old strip files gone once
#      the purge ran; `layout set` on a non-empty file points to migrate;
#   b) a writer appending records (open, append, close each) and reading
#      the file's head back, and a reader holding one descriptor opened
#      before, during four migrates: the head never changes for either,
#      every record the writer wrote is in the file afterwards, and each
#      migrate either switched or failed saying why (open for writing /
#      changed while copied);
#   c) the migrate SIGKILLed at several points (bounded loop): the file
#      reads back byte-exact under one of the two layouts, no name is left
#      behind, and every strip file on disk belongs to a linked file or to
#      an inode the killed client held (its copy, or the file's old inode),
#      which is queued for purge (its removal waits for the killed client's
#      hold to end, 10.5 min: not waited for here);
#   d) n-k servers of the old layout killed while a migrate is stopped
#      mid-copy (SIGSTOP/SIGCONT): the copy is read degraded and written
#      with servers down, the file is byte-exact under the new layout, also
#      after the servers rejoined.
# Ends with scrub --all clean.
source "$(dirname "$0")/lib.sh"
require_recovery
cluster_up --servers 8

PURGE_BOUND_S=20   # the purger runs every second: a few passes on a loaded machine
KILL_POINTS="0.05 0.1 0.2 0.35 0.6" # seconds into a migrate at which it is SIGKILLed
W="$DEPFS_STATE/work"; mkdir -p "$W"
SERVERS=$(awk '$1 == "ioserver" {print $3}' "$CONF")
cd "$MNT"

# strip_inos: the inode (decimal) of every strip file on every server, unique
strip_inos() {
  local id
  for id in $SERVERS; do ls "$(io_dir "$id")/strips/"; done | sed 's/\.crc$//' | sort -u |
    while read -r hex; do echo $((16#$hex)); done | sort -u
}
has_strips() { strip_inos | grep -qx "$1"; }
# wait_strips_gone INO: until no server holds a strip file of INO, bounded
wait_strips_gone() {
  local deadline=$((SECONDS + $(tscale "$PURGE_BOUND_S")))
  while has_strips "$1"; do
    [ "$SECONDS" -lt "$deadline" ] || fail "strip files of inode $1 still there $(tscale "$PURGE_BOUND_S") s later"
    sleep 0.2
  done
}
ino_of() { depfs layout get --json "$1" | json_get ino; }
mtime_of() { stat -c %Y.%y "$MNT$1"; }

# ---------------------------------------------------------------- a) layouts
log "a) 8@6 -> 4@2 -> 8@7: bytes, times, owner, xattrs kept"
head -c 7000001 /dev/urandom > "$W/f.ref"
depfs cp "$W/f.ref" depfs@8@6:/f
chmod 640 f; chown 1234:5678 f
setfattr -n user.color -v blue f
touch -d '2001-02-03 04:05:06' f
before_m=$(mtime_of /f); before_ino=$(ino_of /f)
if depfs layout set /f 4@2 2>"$W/err"; then fail "layout set changed a non-empty file"; fi
grep -q "depfs migrate" "$W/err" || fail "layout set on a non-empty file does not point to migrate: $(cat "$W/err")"
for spec in 4@2 8@7; do
  depfs migrate -r "$spec" /f || fail "migrate to $spec failed"
  [ "$(file_layout /f | cut -d@ -f1-2)" = "$spec" ] || fail "layout after migrate to $spec: $(file_layout /f)"
  cmp "$W/f.ref" f || fail "bytes differ after migrate to $spec"
  [ "$(mtime_of /f)" = "$before_m" ] || fail "mtime changed by migrate to $spec: $(mtime_of /f)"
  [ "$(stat -c %a:%u:%g f)" = 640:1234:5678 ] || fail "mode/owner after migrate to $spec: $(stat -c %a:%u:%g f)"
  [ "$(getfattr --only-values -n user.color f)" = blue ] || fail "xattr lost by migrate to $spec"
done
after_ino=$(ino_of /f)
[ "$after_ino" != "$before_ino" ] || fail "the file kept its inode (no switch happened)"
wait_strips_gone "$before_ino"
log "the 8@6 strip files of inode $before_ino went"
out=$(depfs migrate -r 8@7 /f) || fail "migrate to the layout it has failed"
grep -q "skipped 1" <<<"$out" || fail "migrate to the same layout did not skip: $out"

log "a) sparse file and a directory, --json"
mkdir -p d/e
truncate -s 50M d/sparse
printf 'middle' | dd of=d/sparse bs=1 seek=20000000 conv=notrunc status=none
head -c 300000 /dev/urandom > d/e/small; cp d/e/small "$W/small.ref"
cp d/sparse "$W/sparse.ref"; ln -s small d/e/link; mkfifo d/e/fifo
depfs migrate --json -r 4@3@128k /d > "$W/d.json" || fail "migrate of a directory failed: $(cat "$W/d.json")"
[ "$(json_get migrated < "$W/d.json")" = 2 ] || fail "directory migrate: $(cat "$W/d.json")"
[ "$(json_get failed < "$W/d.json")" = 0 ] || fail "directory migrate failures: $(cat "$W/d.json")"
[ "$(file_layout /d/sparse)" = 4@3@131072 ] || fail "sparse file layout $(file_layout /d/sparse)"
cmp "$W/sparse.ref" d/sparse || fail "sparse file differs"
cmp "$W/small.ref" d/e/small || fail "small file differs"
[ "$(du -k d/sparse | cut -f1)" -lt 4096 ] || fail "the sparse file's holes were filled: $(du -k d/sparse)"
ln d/e/small d/e/hard
if depfs migrate -r 8@6 /d/e/small 2>"$W/err"; then fail "a file with hard links was migrated"; fi
grep -q "hard links" "$W/err" || fail "hard link refusal unclear: $(cat "$W/err")"
rm d/e/hard

# ------------------------------------------------------- b) reader and writer
log "b) a reader and a writer busy during migrates"
head -c 4000000 /dev/urandom > "$W/b.ref"; cp "$W/b.ref" b
python3 - "$MNT/b" "$W" "$(tscale 60)" <<'PY' &
# appends numbered 4 KiB records (open, append, close each) until the stop
# file appears; the reader checks the fixed head never changes
import os, sys, time
path, w, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
head = open(w + "/b.ref", "rb").read()
t0, n = time.time(), 0
while not os.path.exists(w + "/b.stop") and time.time() - t0 < limit:
    rec = (b"%08d" % n) * 512
    with open(path, "ab") as f:
        f.write(rec)
    with open(path, "rb") as f:
        got = f.read(len(head))
    if got != head:
        open(w + "/b.bad", "w").write("head changed after record %d\n" % n)
        break
    n += 1
    if n == 1:
        open(w + "/b.wstarted", "w").close()
open(w + "/b.count", "w").write(str(n))
PY
bpid=$!
python3 - "$MNT/b" "$W" "$(tscale 60)" <<'PY' &
# one descriptor opened before the migrates, read through them all: the
# old inode's strip files stay while it is open
import os, sys, time
path, w, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
head = open(w + "/b.ref", "rb").read()
fd, t0, n = os.open(path, os.O_RDONLY), time.time(), 0
while not os.path.exists(w + "/b.stop") and time.time() - t0 < limit:
    if os.pread(fd, len(head), 0) != head:
        open(w + "/b.bad", "w").write("reader: the head read through an old descriptor changed\n")
        break
    n += 1
    if n == 1:
        open(w + "/b.rstarted", "w").close()
os.close(fd)
open(w + "/b.reads", "w").write(str(n))
PY
rpid=$!
# the migrates begin once both are at work (else on a busy machine they can
# all be over before either has started: nothing tested)
for _ in $(seq "$(tscale 300)"); do
  [ -e "$W/b.wstarted" ] && [ -e "$W/b.rstarted" ] && break
  [ -e "$W/b.bad" ] && break
  sleep 0.1
done
[ ! -e "$W/b.bad" ] || fail "before any migrate: $(cat "$W/b.bad")"
[ -e "$W/b.wstarted" ] && [ -e "$W/b.rstarted" ] || fail "the writer and the reader did not both start within $(tscale 30) s"
ok=0; refused=0
for spec in 4@2 8@6 6@4 8@7; do
  if depfs migrate -r "$spec" /b > "$W/b.out" 2>&1; then ok=$((ok + 1)); else
    grep -qE "open for writing|changed while it was copied" "$W/b.out" || fail "migrate under a writer failed unclearly: $(cat "$W/b.out")"
    refused=$((refused + 1))
  fi
done
touch "$W/b.stop"; wait "$bpid" || fail "the writer failed"; wait "$rpid" || fail "the reader failed"
[ ! -e "$W/b.bad" ] || fail "reader: $(cat "$W/b.bad")"
n=$(cat "$W/b.count")
python3 - "$MNT/b" "$W/b.ref" "$n" <<'PY' || fail "the writer's bytes are not all in the file"
import sys
data, head, n = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read(), int(sys.argv[3])
want = head + b"".join((b"%08d" % i) * 512 for i in range(n))
if data != want:
    sys.exit("file has %d bytes, want %d (%d records)" % (len(data), len(want), n))
PY
[ "$(cat "$W/b.reads")" -gt 0 ] || fail "the reader read nothing"
log "writer wrote $n records, reader read the head $(cat "$W/b.reads") times; $ok migrates switched, $refused refused clearly"
depfs migrate -r 4@2 /b || fail "migrate after the writer stopped failed"
python3 -c 'import sys; d=open(sys.argv[1],"rb").read(); sys.exit(0 if len(d)==4000000+int(sys.argv[2])*4096 else 1)' "$MNT/b" "$n" ||
  fail "size after the last migrate"

# ---------------------------------------------------------------- c) SIGKILL
log "c) migrate SIGKILLed at $KILL_POINTS s"
head -c 60000000 /dev/urandom > "$W/c.ref"; depfs cp "$W/c.ref" depfs@8@6:/c
killed_copies=""        # inodes with strip files a killed migrate created
c_inos=$(ino_of /c)     # every inode /c has had
spec=4@2
for t in $KILL_POINTS; do
  inos_before=$(strip_inos)
  "$DEPFS_BIN_DIR/depfs" --config "$CONF" migrate -r "$spec" /c > /dev/null 2>&1 &
  mpid=$!
  sleep "$t"
  kill -KILL "$mpid" 2>/dev/null || true
  wait "$mpid" 2>/dev/null || true
  cmp "$W/c.ref" c || fail "bytes differ after a migrate killed at $t s"
  lay=$(file_layout /c | cut -d@ -f1-2)
  case "$lay" in 8@6|4@2) ;; *) fail "layout $lay after a migrate killed at $t s" ;; esac
  [ -z "$(ls -A . | grep -v -xE 'f|d|b|c')" ] || fail "names left behind: $(ls -A .)"
  cur=$(ino_of /c)
  c_inos="$c_inos $cur"
  killed_copies="$killed_copies $(comm -13 <(echo "$inos_before") <(strip_inos) | { grep -vx "$cur" || true; } | tr '\n' ' ')"
  log "killed at $t s: layout $lay (inode $cur), byte-exact"
  [ "$lay" = 4@2 ] && spec=8@6 || spec=4@2
done
depfs migrate -r 8@7 /c || fail "migrate after the kills failed"
cmp "$W/c.ref" c || fail "bytes differ after the final migrate"
c_inos="$c_inos $(ino_of /c)"
# What is left on disk: the strip files of linked files, and of inodes the
# killed clients still hold (their copies, and /c's old inodes they had
# open): those wait in the purge queue for the holds to end (a
# capability's life, 10 min: not waited for here). Nothing else.
sleep "$(tscale 3)" # a few purger passes for what nobody holds
linked=$(find "$MNT" -type f -printf '%i\n' | sort -u)
leftover=$(comm -23 <(strip_inos) <(echo "$linked"))
allowed=$(echo $killed_copies $c_inos | tr ' ' '\n' | sort -u)
stray=$(comm -23 <(echo "$leftover" | grep . || true) <(echo "$allowed"))
[ -z "$stray" ] || fail "strip files of inodes neither linked nor left by a killed migrate: $stray"
nleft=$(echo "$leftover" | grep -c . || true)
queued=$(status_json | json_get purge_queue.files)
[ "$queued" -ge "$nleft" ] || fail "$nleft inodes with strip files but only $queued queued for purge"
log "left by the killed migrates: $nleft inodes with strip files, all queued ($queued in the queue)"

# ---------------------------------------------------- d) n-k servers killed
log "d) n-k servers of the old layout killed during a migrate"
head -c 60000000 /dev/urandom > "$W/dd.ref"; depfs cp "$W/dd.ref" depfs@6@4:/dd
read -r -a srv <<<"$(file_servers /dd)"
"$DEPFS_BIN_DIR/depfs" --config "$CONF" migrate -r 8@5 /dd > "$W/dd.out" 2>&1 &
mpid=$!
sleep 0.05
# stopped mid-copy (not switched yet) while the servers die, then let go
kill -STOP "$mpid" || fail "the migrate ended within 0.05 s: nothing tested"
[ "$(file_layout /dd | cut -d@ -f1-2)" = 6@4 ] || fail "the migrate switched before the servers were killed: nothing tested"
"$LC" kill "${srv[0]}"; "$LC" kill "${srv[3]}"
kill -CONT "$mpid"
wait "$mpid" || fail "migrate with n-k servers down failed: $(cat "$W/dd.out")"
cmp "$W/dd.ref" dd || fail "bytes differ after a migrate with servers down"
[ "$(file_layout /dd | cut -d@ -f1-2)" = 8@5 ] || fail "layout after a degraded migrate: $(file_layout /dd)"
wait_state "${srv[0]}" down 30 >/dev/null || fail "server ${srv[0]} not marked down"
wait_state "${srv[3]}" down 30 >/dev/null || fail "server ${srv[3]} not marked down"
restart_rejoined "${srv[0]}" 60
restart_rejoined "${srv[3]}" 60
cmp "$W/dd.ref" dd || fail "bytes differ after the servers rejoined"

cmp "$W/f.ref" f && cmp "$W/c.ref" c || fail "files changed at the end"
scrub_clean
echo "PASS: depfs migrate 8@6 -> 4@2 -> 8@7 keeps bytes, times, owner and xattrs; a writer and a reader during migrates lose nothing; SIGKILLed migrates leave one layout and no name; n-k servers down mid-copy; scrub clean"
