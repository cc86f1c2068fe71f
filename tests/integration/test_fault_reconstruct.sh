#!/usr/bin/env bash
# test_fault_reconstruct - node replacement. Files of layouts 8@6, 8@7 and
# 4@2 (and one of 48 MiB) are written; I/O server S is SIGKILLed and its
# data directory wiped (a new, empty disk); `local-cluster replace S` starts
# it empty and runs `depfs reconstruct S`. Then: every server up, S holds a
# strip for exactly the files it held before, every file reads back
# unchanged, S's units equal decoding (two other servers killed so reads
# decode through S), and scrub is clean.
# Second round, `depfs reconstruct` by hand on another wiped server: started
# with a rate limit, interrupted (SIGTERM) part way, run again: it must resume
# and finish, with the same checks.
source "$(dirname "$0")/lib.sh"
require_recovery
SEED=${DEPFS_FAULT_SEED:-$(( $(date +%s) % 30000 ))}
RANDOM=$SEED
REF="$DEPFS_STATE-ref"
rm -rf "$REF"; mkdir -p "$REF"
REBUILD_WAIT_S=300
RATE_MBPS=${DEPFS_RECONSTRUCT_RATE:-1}  # MB/s: slow enough to interrupt part way
INTERRUPT_AFTER_S=2

strips_of() { ls "$(io_dir "$1")/strips" 2>/dev/null | sort; }
# check_restored ID: same strip files as before the wipe, files right,
# units equal decoding (two other servers down: reads decode through ID)
check_restored() {
  local id=$1 o1 o2
  local missing extra f
  missing=$(comm -23 "$DEPFS_STATE/strips-$id" <(strips_of "$id"))
  [ -z "$missing" ] || fail "server $id lacks strip files it held before the wipe: $missing"
  # a unit that was a hole (never written) may come back written out as zeros
  extra=$(comm -13 "$DEPFS_STATE/strips-$id" <(strips_of "$id"))
  for f in $extra; do
    f="$(io_dir "$id")/strips/$f"
    cmp -s -n "$(stat -c %s "$f")" "$f" /dev/zero || fail "server $id has a new, non-zero strip file $f it did not hold before"
  done
  log "server $id holds the $(wc -l <"$DEPFS_STATE/strips-$id") strip files it held before the wipe$([ -z "$extra" ] || echo " (plus $(echo $extra | wc -w) all-zero ones for units that were holes)")"
  verify_all "$REF"
  o1=$(( (id + 1) % 8 )); o2=$(( (id + 5) % 8 ))
  log "kill $o1 and $o2: reads decode through server $id's reconstructed units"
  kill_down "$o1"; kill_down "$o2"
  verify_all "$REF" --eio-ok-dirs L8_7
  "$LC" restart "$o1" --rebuild; "$LC" restart "$o2" --rebuild
  wait_all_up "$REBUILD_WAIT_S"
  settle_clients
  verify_all "$REF"
}

# start_reconstructing ID: the server's command line (local-cluster's cmd
# file) plus --reconstruct, started the way local-cluster starts daemons so
# its pid file, kill and restart keep working.
start_reconstructing() {
  local id=$1 name="ioserver-$1" a port
  local -a cmd args=()
  eval "cmd=($(cat "$DEPFS_STATE/pids/$name.cmd"))"
  for a in "${cmd[@]}"; do [ "$a" = --rebuild ] || [ "$a" = --reconstruct ] || args+=("$a"); done
  args+=(--reconstruct)
  rm -f "$DEPFS_STATE/pids/$name.pid"
  echo "=== $(date '+%F %T') starting: ${args[*]}" >>"$DEPFS_STATE/logs/$name.log"
  setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$DEPFS_STATE/pids/$name.pid" "${args[@]}" \
    </dev/null >>"$DEPFS_STATE/logs/$name.log" 2>&1 &
  port=$(awk -v id="$id" '$1 == "ioserver" && $3 == id {print $4}' "$CONF" | cut -d: -f2)
  for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0; sleep 0.1; done
  fail "$name (--reconstruct) not listening on port $port"
}

log "seed $SEED"
cluster_up --servers 8
for spec in 8@6 8@7 4@2; do
  d="L${spec/@/_}"
  mkdir "$MNT/$d" "$REF/$d"
  setfattr -n user.depfs.layout -v "$spec" "$MNT/$d"
done
python3 "$FAULTLOAD" populate "$MNT" "$REF" --dirs L8_6,L8_7,L4_2 --files 5 --seed "$SEED" || fail "populate failed"
head -c $((48 * 1024 * 1024 + 333)) /dev/urandom >"$REF/L8_6/big"
cp "$REF/L8_6/big" "$MNT/L8_6/big"
verify_all "$REF"
scrub_clean

# ---- 1. local-cluster replace
"$LC" --help 2>&1 | grep -qE '^ *replace' || fail "deploy/local-cluster has no 'replace ID' command yet"
S=$((RANDOM % 8))
strips_of "$S" >"$DEPFS_STATE/strips-$S"
log "replace server $S: SIGKILL, wipe $(io_dir "$S"), local-cluster replace"
kill_down "$S"
rm -rf "$(io_dir "$S")"; mkdir -p "$(io_dir "$S")"
t0=$(now_ms)
"$LC" replace "$S" || fail "local-cluster replace $S failed"
wait_all_up "$REBUILD_WAIT_S"
settle_clients
log "RESULT replace of server $S: $(( $(now_ms) - t0 )) ms to up ($(du -sh --apparent-size "$(io_dir "$S")/strips" | cut -f1) of strips)"
check_restored "$S"

# ---- 2. depfs reconstruct by hand: rate limit, interruption, resumption
S2=$(( (S + 3) % 8 ))
strips_of "$S2" >"$DEPFS_STATE/strips-$S2"
log "server $S2: SIGKILL, wipe, restart with --reconstruct, depfs reconstruct --rate $RATE_MBPS"
kill_down "$S2"
rm -rf "$(io_dir "$S2")"; mkdir -p "$(io_dir "$S2")"
start_reconstructing "$S2"
"$DEPFS_BIN_DIR/depfs" --config "$CONF" reconstruct "$S2" --rate "$RATE_MBPS" >"$DEPFS_STATE/recon1.out" 2>&1 &
rp=$!
sleep "$INTERRUPT_AFTER_S"
kill -0 "$rp" 2>/dev/null || { wait "$rp" || true; cat "$DEPFS_STATE/recon1.out"; fail "depfs reconstruct --rate $RATE_MBPS ended within ${INTERRUPT_AFTER_S}s: cannot test resumption (rate limit not honoured?)"; }
kill -TERM "$rp"; wait "$rp" || true  # SIGINT: ignored by background jobs of a script
tr '\r' '\n' <"$DEPFS_STATE/recon1.out" | tail -3
[ "$(server_state "$S2")" != up ] || fail "server $S2 is up after an interrupted reconstruction"
log "run depfs reconstruct $S2 again: it must resume"
depfs reconstruct "$S2" >"$DEPFS_STATE/recon2.out" 2>&1 || { cat "$DEPFS_STATE/recon2.out"; fail "second depfs reconstruct $S2 failed"; }
tr '\r' '\n' <"$DEPFS_STATE/recon2.out" | tail -3
done_before=$(sed -n -E 's/.*\(([0-9]+) done before\).*/\1/p' "$DEPFS_STATE/recon2.out" | head -1)
[ -n "$done_before" ] && [ "$done_before" -gt 0 ] ||
  fail "the second depfs reconstruct did not resume (no 'N done before' with N > 0 in its output)"
log "the second run resumed: $done_before files were done before the interruption"
wait_all_up "$REBUILD_WAIT_S"
settle_clients
check_restored "$S2"
scrub_clean
rm -rf "$REF"
echo "PASS: servers $S (local-cluster replace) and $S2 (reconstruct, interrupted, resumed) rebuilt from empty directories; contents unchanged; units equal decoding; scrub clean (seed $SEED)"
