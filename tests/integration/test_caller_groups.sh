#!/usr/bin/env bash
# test_caller_groups - depfs-fuse reads a kernel request's caller's groups
# (client/fuse/caller_groups.c) once per request, and gets them right:
#   - a caller that may write a directory only through a supplementary group
#     creates, stats and removes a file there, also with so many groups that
#     its /proc status does not fit the first read (the buffer grows); the
#     same caller without that group is refused.
#   - counted, not timed: while FILES files are created, depfs-fuse opens a
#     /proc/TID/task/TID/status at most once per request that acts for the
#     caller: LOOKUP, CREATE and the directory's GETATTR the kernel sends
#     after each change: REQS_PER_CREATE per file, plus SLACK_PCT for an
#     occasional extra revalidation (a second read of any one of the three
#     would exceed it). libfuse's fuse_req_getgroups opened it twice per
#     request (a 1 KiB read, then the whole file again), and a create read
#     the credentials twice: 8 per file.
source "$(dirname "$0")/lib.sh"

NOBODY_ID=65534
GROUP_ID=4242          # the directory's group; the caller's only way in
MANY_GROUPS=2000       # enough that the Groups line runs past 4 KiB
MANY_BASE=50000        # the extra groups (above GROUP_ID: the kernel sorts them)
FILES=40
REQS_PER_CREATE=3
SLACK_PCT=50           # of FILES: extra requests the kernel may send
TRACE_WAIT_TENTHS=100

command -v setpriv >/dev/null || fail "setpriv (util-linux) is needed"

# as_caller GROUPS CMD...: CMD as uid/gid nobody with supplementary GROUPS
# (comma-separated; empty: none)
as_caller() {
  local groups=$1
  shift
  if [ -n "$groups" ]; then
    setpriv --reuid=$NOBODY_ID --regid=$NOBODY_ID --groups="$groups" "$@"
  else
    setpriv --reuid=$NOBODY_ID --regid=$NOBODY_ID --clear-groups "$@"
  fi
}
# status_opens FILE: the /proc status opens in an strace output
status_opens() { if [ -f "$1" ]; then grep -c 'task/[0-9]*/status' "$1" || true; else echo 0; fi; }

cluster_up --servers 4 --fresh
D="$MNT/gdir"
mkdir "$D"
chown 0:$GROUP_ID "$D"
chmod 0770 "$D"

log "a caller in the directory's group through a supplementary group only"
as_caller "$GROUP_ID" sh -c "echo x > '$D/one' && stat '$D/one' >/dev/null && rm '$D/one'" ||
  fail "a caller with supplementary group $GROUP_ID could not create, stat and remove in $D"
many=$GROUP_ID
for ((i = 1; i < MANY_GROUPS; i++)); do many+=",$((MANY_BASE + i))"; done
as_caller "$many" sh -c "echo x > '$D/many' && rm '$D/many'" ||
  fail "a caller with $MANY_GROUPS groups ($GROUP_ID among them) could not create and remove in $D"
if as_caller "" sh -c "echo x > '$D/none'" 2>/dev/null; then
  fail "a caller without group $GROUP_ID created a file in $D (mode 0770)"
fi
log "  allowed with the group (also among $MANY_GROUPS), refused without it"

log "counting depfs-fuse's /proc status opens over $FILES creates"
TRACE="$DEPFS_STATE/fuse-openat.trace"
fuse_strace "$TRACE" -e trace=openat
mkdir "$MNT/count"
for ((i = 0; i < TRACE_WAIT_TENTHS; i++)); do # attached once a probe's lookup shows
  stat "$MNT/count/probe-$i" >/dev/null 2>&1 || true
  [ "$(status_opens "$TRACE")" -gt 0 ] && break
  sleep 0.1
done
[ "$(status_opens "$TRACE")" -gt 0 ] || fail "strace saw no /proc status open by depfs-fuse"
before=$(status_opens "$TRACE")
python3 - "$MNT/count" "$FILES" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    os.close(os.open(f"{d}/f{i}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
PY
sleep 0.5 # the last release reaches depfs-fuse after close returns
fuse_strace_stop
opens=$(( $(status_opens "$TRACE") - before ))
most=$(( REQS_PER_CREATE * FILES + FILES * SLACK_PCT / 100 ))
log "  $opens opens for $FILES creates (at most $most)"
[ "$opens" -le "$most" ] ||
  fail "depfs-fuse opened a caller's /proc status $opens times for $FILES creates: more than once per request"
[ "$(ls "$MNT/count" | wc -l)" -eq "$FILES" ] || fail "not all $FILES files were created"

scrub_clean
echo "PASS: a caller reaches a directory through a supplementary group only (also among 2000 groups) and is refused without it; depfs-fuse reads /proc status once per request"
