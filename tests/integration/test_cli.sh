#!/usr/bin/env bash
# test_cli - the depfs CLI: cp with resiliency labels in both directions,
# layout get/set, stat, status, clear errors for bad labels. The files the
# CLI writes are the files the mount shows. status --prometheus passes a
# strict OpenMetrics checker (openmetrics_check.py, shown to refuse text
# without # EOF or with a sample before its # TYPE) and its values are the
# cluster's, also with a server killed.
source "$(dirname "$0")/lib.sh"
cluster_up --servers 8
W="$DEPFS_STATE/work"; mkdir -p "$W"
head -c 2345678 /dev/urandom > "$W/src"

depfs mkdir /c 2>/dev/null || mkdir "$MNT/c"
depfs cp "$W/src" depfs@8@6:/c/f86 || fail "cp to depfs@8@6"
depfs cp "$W/src" depfs@4@2@128k:/c/f42 || fail "cp to depfs@4@2@128k"
depfs cp "$W/src" depfs:/c/fdef || fail "cp to depfs:"
lay=$(file_layout /c/f86); [[ "$lay" == 8@6@* ]] || fail "f86 layout: $lay"
lay=$(file_layout /c/f42); [ "$lay" = 4@2@131072 ] || fail "f42 layout: $lay"
# the text form, for people, says the same
depfs layout get /c/f86 | grep -q "n=8 k=6" || fail "f86 layout text: $(depfs layout get /c/f86)"
cmp "$W/src" "$MNT/c/f86" || fail "mount shows different bytes for f86"
cmp "$W/src" "$MNT/c/f42" || fail "mount shows different bytes for f42"
depfs cp depfs:/c/f42 "$W/back" && cmp "$W/src" "$W/back" || fail "cp back out"
depfs cp depfs:/c/f86 depfs@8@4:/c/f84 && cmp "$W/src" "$MNT/c/f84" || fail "depfs to depfs copy"

log "bad labels are refused with the bad part named"
for bad in "depfs@8@9:/c/x|k" "depfs@0@0:/c/x|n" "depfs@9@6:/c/x|servers" "depfs@8@x:/c/x|x" "depfs@8:/c/x|" "depfsx:/c/x|"; do
  label=${bad%|*}; word=${bad#*|}
  if depfs cp "$W/src" "$label" 2> "$W/err"; then fail "label $label was accepted"; fi
  grep -qi -- "$word" "$W/err" || fail "error for $label does not mention '$word': $(cat "$W/err")"
done

log "layout set on a directory is inherited; getfattr shows it"
mkdir "$MNT/c/sub"
depfs layout set /c/sub 4@3 || fail "layout set"
getfattr --only-values -n user.depfs.layout "$MNT/c/sub" | grep -q '^4@3' || fail "getfattr on dir"
echo x > "$MNT/c/sub/new"
lay=$(file_layout /c/sub/new); [[ "$lay" == 4@3@* ]] || fail "not inherited: $lay"
if depfs layout set /c/f86 4@2 2>/dev/null; then fail "layout set on a non-empty file accepted"; fi
touch "$MNT/c/empty"; depfs layout set /c/empty 6@4 || fail "layout set on an empty file"
lay=$(file_layout /c/empty); [[ "$lay" == 6@4@* ]] || fail "empty file layout: $lay"

depfs stat /c/f86 | grep -q 2345678 || fail "depfs stat size (text)"
size=$(depfs stat --json /c/f86 | json_get size); [ "$size" = 2345678 ] || fail "stat --json size: $size"
depfs status || fail "depfs status"
up=$(depfs status --json | json_get totals.up); [ "$up" = 8 ] || fail "status --json: $up of 8 servers up"
depfs --help >/dev/null || fail "--help"

log "mount paths, absolute and relative, without --config: the cluster comes from the mount"
bare() { env -u DEPFS_CONF "$DEPFS_BIN_DIR/depfs" "$@"; }
(cd "$MNT/c" && bare status >/dev/null) || fail "depfs status inside the mount without --config"
lay=$(bare layout get "$MNT/c/sub/new") || fail "layout get of an absolute mount path"
[[ "$lay" == *"n=4 k=3"* ]] || fail "layout get $MNT/c/sub/new: $lay"
(cd "$MNT/c/sub" && bare layout get new | grep -q "n=4 k=3") || fail "layout get of a relative mount path"
(cd "$MNT/c" && bare stat f86 | grep -q 2345678) || fail "stat of a relative mount path"
(cd "$MNT" && bare ls c | grep -q f86) || fail "ls of a relative mount path"
bare cp "$W/src" "$MNT/c/sub/" >/dev/null || fail "cp into a mount directory"
cmp "$W/src" "$MNT/c/sub/src" || fail "cp into a mount directory: bytes differ"
lay=$(file_layout /c/sub/src); [[ "$lay" == 4@3@* ]] || fail "cp into a mount dir: layout $lay, not the dir's"
(cd "$MNT/c" && bare cp f86 "$W/back" >/dev/null) || fail "cp from a relative mount path"
cmp "$W/src" "$W/back" || fail "cp from a mount path: bytes differ"
(cd "$MNT/c/sub" && bare rm src) || fail "rm of a relative mount path"
if bare stat "$MNT/c/sub/src" >/dev/null 2>&1; then fail "rm of a mount path left the file"; fi
# the CLI is another client: the mount's kernel may keep its entry for
# entry_timeout (1 s by default) before it asks again
gone=
for _ in 1 2 3 4 5 6; do [ -e "$MNT/c/sub/src" ] || { gone=1; break; }; sleep 0.5; done
[ -n "$gone" ] || fail "the mount still shows a file the CLI removed after 3 s"
if (cd "$W" && bare layout get src 2>"$W/err"); then fail "a local relative path was taken"; fi
grep -q "not a DePFS path" "$W/err" || fail "local relative path: $(cat "$W/err")"
log "status --prometheus: strict OpenMetrics whose values are the cluster's"
OMCHECK="$TOP/tests/integration/openmetrics_check.py"
metric() { python3 "$OMCHECK" "$W/metrics" "$@"; }
depfs status --prometheus >"$W/metrics" || fail "depfs status --prometheus"
python3 "$OMCHECK" "$W/metrics" || fail "status --prometheus is not valid OpenMetrics"
{ grep -v '^# EOF$' "$W/metrics"; } >"$W/metrics.noeof"
if python3 "$OMCHECK" "$W/metrics.noeof" >/dev/null; then fail "the checker took text without # EOF"; fi
{ echo 'depfs_early{id="0"} 1'; cat "$W/metrics"; } >"$W/metrics.early"
if python3 "$OMCHECK" "$W/metrics.early" >/dev/null; then fail "the checker took a sample before its # TYPE"; fi
[ "$(metric depfs_cluster_servers state=up)" = 8 ] || fail "metrics: $(metric depfs_cluster_servers state=up) servers up, not 8"
addr=$(depfs status --json | json_get servers.id=0.address)
[ "$(metric depfs_server_up id=0 address="$addr")" = 1 ] || fail "metrics: server 0 at $addr is not up"
rate=$(depfs status --json | json_get servers.id=0.scrub.rate)
[ "$(metric depfs_server_scrub_rate_bytes_per_second id=0)" = "$rate" ] ||
  fail "metrics: scrub rate $(metric depfs_server_scrub_rate_bytes_per_second id=0), status --json says $rate"
[ "$(metric depfs_server_used_bytes id=0)" -gt 0 ] || fail "metrics: server 0 uses no bytes"
[ "$(metric depfs_server_locks_granted_total id=0)" -gt 0 ] || fail "metrics: no lock granted at server 0"
[ "$(metric depfs_server_locks_waiting id=0)" = "$(depfs status --json | json_get servers.id=0.locks_waiting)" ] ||
  fail "metrics: lock requests waiting at server 0 $(metric depfs_server_locks_waiting id=0), status --json says otherwise"
kill_down 5
depfs status --prometheus >"$W/metrics" || fail "depfs status --prometheus with a server down"
python3 "$OMCHECK" "$W/metrics" || fail "status --prometheus with a server down is not valid OpenMetrics"
[ "$(metric depfs_server_up id=5)" = 0 ] || fail "metrics: server 5 down but depfs_server_up $(metric depfs_server_up id=5)"
[ "$(metric depfs_server_state id=5 state=down)" = 1 ] || fail "metrics: server 5 not in state down"
[ "$(metric depfs_server_state id=5 state=up)" = 0 ] || fail "metrics: server 5 still in state up"
[ "$(metric depfs_server_reachable id=5)" = 0 ] || fail "metrics: server 5 down but reachable"
[ "$(metric depfs_server_up id=4)" = 1 ] || fail "metrics: server 4 not up"
[ "$(metric depfs_cluster_servers state=down)" = 1 ] || fail "metrics: $(metric depfs_cluster_servers state=down) servers down, not 1"
restart_rejoined 5 60

scrub_clean
echo "PASS: CLI labels, layouts and copies; mount paths (absolute, relative) without --config; status --prometheus"
