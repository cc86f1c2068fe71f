#!/usr/bin/env bash
# test_fault_eio - one server more than n-k down: a 4@2 file loses 3 of its
# 4 servers (and an 8@6 file, on all 8 servers, loses the same 3): whole-
# stripe reads fail with EIO, single-unit reads are right or EIO, the mount's
# whole-file read fails with EIO, a write fails with EIO; never a wrong byte.
# The servers come back (restart --rebuild): everything reads right, the
# failed writes left only old bytes or their own, and scrub is clean.
source "$(dirname "$0")/lib.sh"
require_recovery
REF="$DEPFS_STATE-ref"
rm -rf "$REF"; mkdir -p "$REF"
REBUILD_WAIT_S=180
SU=65536

cluster_up --servers 8
for spec in 8@6 4@2; do
  d="L${spec/@/_}"
  mkdir "$MNT/$d" "$REF/$d"
  setfattr -n user.depfs.layout -v "$spec" "$MNT/$d"
done
python3 "$FAULTLOAD" populate "$MNT" "$REF" --dirs L8_6,L4_2 --files 2 --seed 5 || fail "populate failed"
verify_all "$REF"

read -r -a S42 <<<"$(file_servers /L4_2/f0)"
[ "${#S42[@]}" -eq 4 ] || fail "/L4_2/f0 has servers '${S42[*]}', want 4"
DEAD=("${S42[0]}" "${S42[1]}" "${S42[2]}")
log "/L4_2/f0 lives on servers ${S42[*]}; killing ${DEAD[*]} (n-k+1 = 3)"
for id in "${DEAD[@]}"; do kill_down "$id"; done

python3 "$FAULTLOAD" eio-check "$MNT" "$REF" --lib "$LIBDEPFS_SO" --conf "$CONF" --path /L4_2/f0 \
  --stripe-bytes $((2 * SU)) --unit-bytes "$SU" --ready "$DEPFS_STATE/w42" --seed 1 || fail "4@2 file with 3 of 4 servers down"
python3 "$FAULTLOAD" eio-check "$MNT" "$REF" --lib "$LIBDEPFS_SO" --conf "$CONF" --path /L8_6/f0 \
  --stripe-bytes $((6 * SU)) --unit-bytes "$SU" --ready "$DEPFS_STATE/w86" --seed 2 || fail "8@6 file with 3 of 8 servers down"
log "untouched files: right bytes or EIO, never wrong"
python3 "$FAULTLOAD" verify "$MNT" "$REF" --lib "$LIBDEPFS_SO" --conf "$CONF" --eio-ok-dirs L8_6,L4_2 ||
  fail "a read returned wrong bytes"

log "restart ${DEAD[*]} with --rebuild"
for id in "${DEAD[@]}"; do "$LC" restart "$id" --rebuild; done
wait_all_up "$REBUILD_WAIT_S"
settle_clients
python3 "$FAULTLOAD" after-failed-write "$MNT" "$REF" --path /L4_2/f0 --ready "$DEPFS_STATE/w42" || fail "4@2 file after its failed write"
python3 "$FAULTLOAD" after-failed-write "$MNT" "$REF" --path /L8_6/f0 --ready "$DEPFS_STATE/w86" || fail "8@6 file after its failed write"
verify_all "$REF"
scrub_clean
rm -rf "$REF"
echo "PASS: with n-k+1 servers down reads of affected stripes and writes fail with EIO, never wrong bytes; all readable after restart; scrub clean"
