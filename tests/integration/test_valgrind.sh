#!/usr/bin/env bash
# test_valgrind - every daemon (depfs-mds, 8 depfs-ioserver, depfs-recovery,
# depfs-fuse) under valgrind memcheck through a short workload: 8@6 and 4@2
# files written through the mount and the CLI, partial-stripe overwrites and
# an append, reads, a degraded read and write with one I/O server SIGKILLed,
# its restart with --rebuild and the recovery daemon's rebuild, scrub,
# removal, and malformed requests to the MDS's and I/O servers' ports
# (badwire.py: each daemon must log a clear error and keep serving). Daemons
# are also SIGTERMed in the middle of work (an I/O server under a write
# stream, the recovery daemon during a rejoin, the MDS with the mount
# connected) and must exit cleanly and come back, and a fake I/O server
# answers garbage to the recovery daemon and the clients for a while. The teardown SIGTERMs
# every daemon and fails on any valgrind error, definite leak or unclean
# exit (lib.sh, DEPFS_VALGRIND=1). Small data: the daemons run 20-50x slower.
export DEPFS_VALGRIND=1
source "$(dirname "$0")/lib.sh"
BADWIRE="$TOP/tests/integration/badwire.py"
FAKE_KINDS=6 # kinds of garbage badwire.py fake-io answers with, in turn

# ASan binaries (make asan) cannot run under valgrind.
if ldd "$DEPFS_BIN_DIR/depfs-mds" 2>/dev/null | grep -q libasan; then
  echo "SKIP: $DEPFS_BIN_DIR holds AddressSanitizer binaries; valgrind cannot run them"
  exit 77
fi
require_recovery

cluster_up --servers 8
W="$DEPFS_STATE/work"; mkdir -p "$W"
mds_addr() { awk '$1 == "mds_address" {print $3}' "$CONF"; }
io_addr() { awk -v id="$1" '$1 == "ioserver" && $3 == id {print $4}' "$CONF"; }
# patch FILE OFFSET BYTES: overwrite BYTES random bytes at OFFSET in the
# mount's FILE and in its reference copy ($W/ref.a.f for /a/f).
patch() {
  local f=$1 off=$2 len=$3 name
  name=$(tr / . <<<"$f")
  head -c "$len" /dev/urandom > "$W/patch"
  dd if="$W/patch" of="$MNT$f" bs="$len" count=1 seek="$off" oflag=seek_bytes conv=notrunc status=none || fail "patch of $f at $off"
  dd if="$W/patch" of="$W/ref$name" bs="$len" count=1 seek="$off" oflag=seek_bytes conv=notrunc status=none
}
# check_all: every file reads back right through the mount and the CLI.
check_all() {
  local f name
  for f in /a/f /b/f /c86 /c42; do
    name=$(tr / . <<<"$f")
    cmp "$W/ref$name" "$MNT$f" || fail "mount reads $f wrong ($1)"
    rm -f "$W/out"
    depfs cp "depfs:$f" "$W/out" && cmp "$W/ref$name" "$W/out" || fail "CLI reads $f wrong ($1)"
  done
}

# 8@6@64k: a stripe is 384 KiB; these sizes end in partial stripes.
SIZE=$((900 * 1024 + 4321))
head -c "$SIZE" /dev/urandom > "$W/src"
log "write 8@6 and 4@2 files through the mount and the CLI"
mkdir "$MNT/a" "$MNT/b"
setfattr -n user.depfs.layout -v 8@6 "$MNT/a"
setfattr -n user.depfs.layout -v 4@2 "$MNT/b"
cp "$W/src" "$MNT/a/f"; cp "$W/src" "$W/ref.a.f"
cp "$W/src" "$MNT/b/f"; cp "$W/src" "$W/ref.b.f"
depfs cp "$W/src" depfs@8@6:/c86 || fail "cp to depfs@8@6"
depfs cp "$W/src" depfs@4@2:/c42 || fail "cp to depfs@4@2"
cp "$W/src" "$W/ref.c86"; cp "$W/src" "$W/ref.c42"
lay=$(file_layout /a/f); [[ "$lay" == 8@6@* ]] || fail "/a/f layout: $lay"
lay=$(file_layout /b/f); [[ "$lay" == 4@2@* ]] || fail "/b/f layout: $lay"

log "partial-stripe overwrites (inside a unit, across units and stripes) and an append"
patch /a/f 100 1000
patch /a/f $((64 * 1024 - 500)) 3000
patch /a/f $((384 * 1024 - 7)) 20
patch /b/f 70000 65536
head -c 777 /dev/urandom | tee -a "$MNT/b/f" >> "$W/ref.b.f"
check_all "after writes"

log "malformed requests to the MDS and two I/O servers"
python3 "$BADWIRE" mds "$(mds_addr)" || fail "the MDS mishandled a malformed request"
for id in 0 5; do
  python3 "$BADWIRE" io "$(io_addr "$id")" || fail "I/O server $id mishandled a malformed request"
done
for name in mds ioserver-0 ioserver-5; do
  whys=("bad frame magic" "frame header length over limit")
  if [ "$name" = mds ]; then # no MDS request carries bulk: any is refused at the header
    whys+=("frame carries bulk data, which this receiver never takes")
  else
    whys+=("frame bulk length over limit" "bulk crc32c mismatch")
  fi
  for why in "${whys[@]}"; do
    grep -q "$why" "$DEPFS_STATE/logs/$name.log" || fail "$name logged no '$why'"
  done
done
grep -q "malformed IoRequest" "$DEPFS_STATE/logs/ioserver-0.log" || fail "ioserver-0 logged no malformed IoRequest"
grep -q "malformed MdsRequest" "$DEPFS_STATE/logs/mds.log" || fail "the MDS logged no malformed MdsRequest"
grep -q "unknown MDS operation" "$DEPFS_STATE/logs/mds.log" || fail "the MDS logged no unknown operation"
for name in mds ioserver-0 ioserver-5; do
  grep -q "refused" "$DEPFS_STATE/logs/$name.log" || fail "$name logged no refused request"
done
check_all "after malformed requests"

read -r -a servers <<<"$(file_servers /a/f)"
victim=${servers[1]}
log "SIGKILL I/O server $victim (holds units of /a/f); degraded reads and a degraded write"
kill_down "$victim"
check_all "degraded"
patch /a/f 200000 5000
cmp "$W/ref.a.f" "$MNT/a/f" || fail "degraded write reads back wrong"

log "restart $victim with --rebuild; the recovery daemon rebuilds it"
"$LC" restart "$victim" --rebuild
wait_all_up 30
settle_clients
check_all "after rebuild"
scrub_clean

log "SIGTERM an I/O server while the mount streams a file to it"
head -c $((3 * 1024 * 1024)) /dev/urandom > "$W/ref.b.stream"
: > "$MNT/b/stream"
read -r -a servers <<<"$(file_servers /b/stream)"
v2=${servers[0]}
dd if="$W/ref.b.stream" of="$MNT/b/stream" bs=64k status=none &
dd_pid=$!
for _ in $(seq 50); do
  [ "$(stat -c %s "$MNT/b/stream")" -gt 0 ] || ! kill -0 $dd_pid 2>/dev/null && break
  sleep 0.1
done
vg_term "ioserver-$v2"
wait $dd_pid || fail "the write stream failed when I/O server $v2 stopped"
wait_state "$v2" down 30 >/dev/null || fail "server $v2 not marked down after SIGTERM"
cmp "$W/ref.b.stream" "$MNT/b/stream" || fail "stream reads back wrong with $v2 down"
small=()
for i in $(seq 24); do
  head -c $((3000 + i * 500)) /dev/urandom > "$W/ref.b.s$i"
  cp "$W/ref.b.s$i" "$MNT/b/s$i"; small+=("/b/s$i")
done

log "restart $v2 with --rebuild; SIGTERM the recovery daemon once its rejoin has started"
started=$(grep -c "ioserver $v2: rejoin started" "$DEPFS_STATE/logs/recovery.log" || true)
"$LC" restart "$v2" --rebuild
limit=$(( SECONDS + $(tscale 30) ))
until [ "$(grep -c "ioserver $v2: rejoin started" "$DEPFS_STATE/logs/recovery.log")" -gt "$started" ]; do
  [ "$SECONDS" -lt "$limit" ] || fail "no rejoin of $v2 started: $(states_line)"
  sleep 0.1
done
vg_term recovery
if grep -q "ioserver $v2: rejoin failed.*$(python3 -c 'import os; print(os.strerror(125))')" \
  "$DEPFS_STATE/logs/recovery.log"; then log "the rejoin was cancelled by SIGTERM"; fi
"$LC" restart recovery
wait_all_up 30

log "SIGTERM the MDS with the mount connected; restart it"
vg_term mds
"$LC" restart mds
settle_clients
for f in "${small[@]}" /b/stream; do
  cmp "$W/ref$(tr / . <<<"$f")" "$MNT$f" || fail "$f reads back wrong after the rebuild"
done
check_all "after the MDS restart"
scrub_clean

read -r -a servers <<<"$(file_servers /a/f)"
v3=${servers[2]}
log "a fake I/O server answering garbage in place of server $v3"
"$LC" kill "$v3"
v3_addr=$(io_addr "$v3")
# timeout: the fake never outlives a failed test by long
timeout "$(tscale 20)" python3 "$BADWIRE" fake-io "$v3_addr" > "$W/fake.out" 2>&1 &
fake_pid=$!
limit=$(( SECONDS + $(tscale 1) ))
until (exec 3<>"/dev/tcp/${v3_addr%:*}/${v3_addr##*:}") 2>/dev/null; do
  [ "$SECONDS" -lt "$limit" ] || fail "the fake I/O server does not listen on $v3_addr"
  sleep 0.1
done
wait_state "$v3" down 30 >/dev/null || fail "server $v3 answering garbage is not marked down"
check_all "with a server answering garbage"
# now only the recovery daemon's prober asks it: let it get every kind twice
want=$(( $(grep -c '^fake-io: ' "$W/fake.out" || true) + 2 * FAKE_KINDS ))
limit=$(( SECONDS + $(tscale 10) ))
until [ "$(grep -c '^fake-io: ' "$W/fake.out")" -ge "$want" ]; do
  [ "$SECONDS" -lt "$limit" ] || fail "the recovery daemon stopped probing the fake server"
  sleep 0.2
done
# with auth on the garbage already fails the handshake
grep -qE "closing connection to $v3_addr|authentication with $v3_addr failed" \
  "$DEPFS_STATE/logs/recovery.log" ||
  fail "the recovery daemon logged no bad reply from the fake server"
kill -TERM $fake_pid; wait $fake_pid || true
cat "$W/fake.out"
grep -q "fake-io answered [1-9]" "$W/fake.out" || fail "nobody asked the fake server anything"
kill -0 "$(cat "$DEPFS_STATE/pids/recovery.pid")" || fail "the recovery daemon died"
"$LC" restart "$v3" --rebuild
wait_all_up 30
settle_clients
check_all "after the fake server"

log "remove"
rm "$MNT/a/f" "$MNT/b/f" "$MNT/b/stream"
for f in "${small[@]}"; do rm "$MNT$f"; done
depfs rm /c86 || fail "depfs rm /c86"
rm "$MNT/c42"
wait_mount_caches # /c86 went through another client
for f in /a/f /b/f /c86 /c42 /b/stream; do ! [ -e "$MNT$f" ] || fail "$f still there after removal"; done
[ -z "$(ls -A "$MNT/a")$(ls -A "$MNT/b")" ] || fail "directories not empty after removal"

log "stop every daemon with SIGTERM; check the valgrind logs"
cluster_down || fail "valgrind found errors, definite leaks or a daemon that did not stop cleanly"
echo "PASS: all daemons valgrind-clean through writes, degraded reads, rebuild, scrub, removal and malformed requests"
