#!/usr/bin/env bash
# test_auth - who gets in (issue 13): on a real cluster with auth on (the
# README's), a peer with no credentials, with another cluster's key, with
# a forged ticket, or replaying or changing someone's frames is refused; an
# unprivileged user (a test user made for the purpose, proved by MUNGE
# through the cluster's own munged) works through the CLI, and over the
# wire gets no admin operation (server states, epochs, dirty records,
# heartbeats) and no lock in another client's name (authattack.py). After
# every attempt: the file reads back as written, every server is up with
# its epoch unchanged, no lock is held, scrub is clean.
source "$(dirname "$0")/lib.sh"
REF="$DEPFS_STATE-ref"
rm -rf "$REF"; mkdir -p "$REF"
need_test_user

cluster_up --servers 4
head -c $((3 * 3 * 65536 + 1234)) /dev/urandom >"$REF/secret"
cp "$REF/secret" "$MNT/secret"
chmod 600 "$MNT/secret"
mkdir "$MNT/pub" && chmod 1777 "$MNT/pub"
read -r INO < <(depfs layout get --json /secret | json_get ino)
MDS_ADDR=$(awk '$1 == "mds_address" {print $3}' "$CONF")
IO_ADDR=$(awk '$1 == "ioserver" && $3 == 0 {print $4}' "$CONF")
epochs_before=$(status_json | python3 -c 'import json,sys; print(json.load(sys.stdin).get("cluster_epoch"))')

log "an outsider: no credentials, another cluster's key, a forged ticket, changed and replayed frames"
python3 "$TOP/tests/integration/authattack.py" outsider "$MDS_ADDR" "$IO_ADDR" "$INO" ||
  fail "an outsider got through (above)"

log "the unprivileged user $TEST_USER, proved by MUNGE"
chmod o+rx "$DEPFS_STATE" && chmod o+r "$CONF"
head -c 200000 /dev/urandom >"$REF/mine" && chmod 644 "$REF/mine"
chmod o+rx "$REF"
as_user "'$DEPFS_BIN_DIR/depfs' --config '$CONF' cp '$REF/mine' depfs:/pub/mine" ||
  fail "$TEST_USER could not copy a file in through the CLI"
USER_OUT=$(mktemp -d /tmp/depfs-auth-user.XXXXXX) && chown "$TEST_USER" "$USER_OUT"
as_user "'$DEPFS_BIN_DIR/depfs' --config '$CONF' cp depfs:/pub/mine '$USER_OUT/mine'" ||
  fail "$TEST_USER could not read its file back through the CLI"
cmp "$REF/mine" "$USER_OUT/mine" || fail "$TEST_USER's file came back different"
rm -rf "$USER_OUT"
grep -q "registered client .* (a user, by MUNGE)" "$DEPFS_STATE/logs/mds.log" ||
  fail "the MDS never registered a MUNGE user"
read -r OWN_INO < <(depfs layout get --json /pub/mine | json_get ino)
as_user "DEPFS_CLUSTER_KEY= python3 '$TOP/tests/integration/authattack.py' user '$MDS_ADDR' '$IO_ADDR' '$INO' '$DEPFS_STATE/munge/munge.socket' '$OWN_INO'" ||
  fail "$TEST_USER got through (above)"

log "afterwards: data, server states, epochs and locks as they were"
cmp "$MNT/secret" "$REF/secret" || fail "/secret changed"
depfs cp depfs:/secret "$DEPFS_STATE/secret.out" >/dev/null
cmp "$DEPFS_STATE/secret.out" "$REF/secret" || fail "/secret read through libdepfs differs"
wait_all_up 10
epochs_after=$(status_json | python3 -c 'import json,sys; print(json.load(sys.stdin).get("cluster_epoch"))')
[ "$epochs_before" = "$epochs_after" ] || fail "the cluster epoch moved: $epochs_before -> $epochs_after"
[ "$(locks_held)" = 0 ] || fail "stripe locks held at the end: $(locks_held)"
grep -h "refused\|closing connection" "$DEPFS_STATE"/logs/{mds,ioserver-0}.log | tail -8 || true
scrub_clean
rm -rf "$REF"
echo "PASS: outsiders, forged tickets and changed or replayed frames refused; a MUNGE user works through the CLI and gets no admin operation or foreign lock; data, states and locks unchanged; scrub clean"
