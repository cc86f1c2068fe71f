#!/usr/bin/env bash
# test_purge_rebuild - a file unlinked while a reconstruction rebuilds it
# keeps its strip files until that rebuild is done with it, and loses every
# one of them after. The rebuild holds the file open at the MDS as a handle
# does, so the purge queue never lists it meanwhile: a purge that removed
# the strip files under a rebuild could have the rebuild write the new
# server's strip file after its removal, left on disk with no queue entry.
# Server S of the file is replaced; its `depfs reconstruct` (test build)
# stops at DEPFS_TEST_PAUSE=rebuild_held, holding the file, while the file
# is unlinked and the purger (every second) runs several passes (the only
# file: the stop is surely its rebuild's). A file written after the
# reconstruction reads back exactly and scrub --all is clean at the end.
source "$(dirname "$0")/lib.sh"
require_recovery
use_test_build
cluster_up --servers 8

PAUSE_MS=8000       # the rebuild's stop: longer than the checks below take
REACH_S=60          # until the stopped reconstruct says so (a fresh server)
PURGER_PASSES_S=3   # the purger runs every second (REC_PURGE_IDLE_MS)
PURGE_BOUND_S=15    # strip files gone after the rebuild: a pass or two, loaded machine
REBUILD_WAIT_S=60
W="$DEPFS_STATE/work"; mkdir -p "$W"

head -c 3000000 /dev/urandom > "$MNT/race"
sync "$MNT/race"
ino=$(stat -c %i "$MNT/race")
S=$(file_servers /race | cut -d' ' -f1)
[ "$(strips_of "$ino")" -gt 0 ] || fail "file /race (inode $ino) has no strip files"
log "file /race: inode $ino, $(strips_of "$ino") strip files and sidecars; replacing server $S"

kill_down "$S"
DEPFS_TEST_PAUSE=rebuild_held DEPFS_TEST_PAUSE_MS=$PAUSE_MS "$LC" replace "$S" > "$W/replace.out" 2>&1 &
replacer=$!
deadline=$((SECONDS + $(tscale "$REACH_S")))
until grep -q "DEPFS_TEST_PAUSE reached: rebuild_held" "$W/replace.out"; do
  kill -0 "$replacer" 2>/dev/null || { cat "$W/replace.out"; fail "the reconstruct ended before it held a file"; }
  [ "$SECONDS" -lt "$deadline" ] || { cat "$W/replace.out"; fail "the reconstruct never reached rebuild_held"; }
  sleep 0.1
done
log "the reconstruct holds a file (stopped for ${PAUSE_MS} ms): unlink /race, let the purger run"
rm "$MNT/race"
sleep "$PURGER_PASSES_S"
left=$(strips_of "$ino")
[ "$left" -gt 0 ] ||
  fail "the purge removed /race's strip files while a rebuild of it was still going on (its write to server $S could then outlive them)"
log "after $PURGER_PASSES_S s of purger passes: $left strip files kept for the rebuild"

wait "$replacer" || { cat "$W/replace.out"; fail "local-cluster replace $S failed"; }
wait_all_up "$REBUILD_WAIT_S"
deadline=$((SECONDS + $(tscale "$PURGE_BOUND_S")))
until [ "$(strips_of "$ino")" = 0 ]; do
  [ "$SECONDS" -lt "$deadline" ] ||
    fail "$(strips_of "$ino") strip files of the unlinked /race left $(tscale "$PURGE_BOUND_S") s after its rebuild (server $S's: $(find "$(io_dir "$S")/strips" -name "$(printf '%016x' "$ino")*" | wc -l))"
  sleep 0.2
done
head -c 1000000 /dev/urandom > "$W/keep.ref"
cp "$W/keep.ref" "$MNT/keep"; sync "$MNT/keep"
cmp "$W/keep.ref" "$MNT/keep" || fail "/keep, written on the rebuilt cluster, differs"
scrub_clean
echo "PASS: a file unlinked during its rebuild kept its strip files until the rebuild let go ($left during it), then lost all of them on every server, the rebuilt one included; a file written after exact; scrub clean"
