#!/usr/bin/env bash
# test_fault_partition - an I/O server cut off from the network without
# being killed. Server S runs in a network namespace of its own, reached
# over a veth pair with addresses from 10.213.X.0/30 (traffic only between
# this host's namespaces; a blackhole route for 10.213.X.0/24 makes sure
# nothing for that range can ever leave the host). The rest of the cluster
# (MDS, 7 I/O servers, recovery, FUSE mount) runs on 127.0.0.1 from a config
# this test writes; local-cluster's pid/cmd files are kept so its
# kill/restart/down work on this cluster too.
# The cut: the namespace side of the veth goes down, so the host side has no
# carrier and every packet to or from S is silently dropped (S's sockets see
# nothing: a real partition, not a crash). Expect: S detected down within
# t_HB + 2*t_T (measured from the MDS's log), a workload on 8@6 and 4@2
# files goes on, and after the link returns the recovery module takes S
# through rebuilding to up; every byte right, S's units equal decoding,
# scrub clean. Exit 77 (skip) if network namespaces cannot be made here.
source "$(dirname "$0")/lib.sh"
require_recovery
REF="$DEPFS_STATE-ref"
rm -rf "$REF"; mkdir -p "$REF"
SERVERS=8
S=${DEPFS_PARTITION_SERVER:-3}
NET=$(( $$ % 250 + 1 ))
NS="depfs-p$$"
VH="dfp$$h"  # host side
VN="dfp$$n"  # namespace side
HOST_IP="10.213.$NET.1"
NS_IP="10.213.$NET.2"
GUARD="10.213.$NET.0/24"
REBUILD_WAIT_S=180
DETECT_LOG_SLACK_MS=300 # log timestamps vs this shell's clock

net_up=0
net_cleanup() {
  [ "$net_up" -eq 1 ] || return 0
  ip link del "$VH" 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  ip route del blackhole "$GUARD" 2>/dev/null || true
  rm -f "$DEPFS_STATE.err"
  net_up=0
}
trap 'rc=$?; set +e; cluster_down; net_cleanup; (exit $rc); on_exit' EXIT

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "network namespaces need root"
command -v ip >/dev/null || skip "no ip(8) (iproute2)"
ip netns add "$NS" 2>"$DEPFS_STATE.err" || skip "ip netns add failed: $(cat "$DEPFS_STATE.err")"
net_up=1
ip route add blackhole "$GUARD" || fail "cannot add the guard route"
ip link add "$VH" type veth peer name "$VN" || skip "cannot make a veth pair"
ip link set "$VN" netns "$NS"
ip addr add "$HOST_IP/30" dev "$VH"
ip link set "$VH" up
ip netns exec "$NS" ip addr add "$NS_IP/30" dev "$VN"
ip netns exec "$NS" ip link set "$VN" up
ip netns exec "$NS" ip link set lo up
log "namespace $NS: $NS_IP (veth $VN) <-> host $HOST_IP (veth $VH)"

# ---- the cluster, as local-cluster would lay it out
cluster_down
rm -rf "$DEPFS_STATE"
mkdir -p "$DEPFS_STATE"/{mds,recovery,logs,pids} "$MNT"
PORTS=()
p=$DEPFS_BASE_PORT
while [ ${#PORTS[@]} -le $SERVERS ]; do
  ss -Htln "sport = :$p" | grep -q . || PORTS+=("$p")
  p=$((p + 1))
done
addr_of() { if [ "$1" -eq "$S" ]; then echo "$NS_IP:${PORTS[$(($1 + 1))]}"; else echo "127.0.0.1:${PORTS[$(($1 + 1))]}"; fi; }
{
  echo "# test_fault_partition: server $S in netns $NS"
  echo "mds_address = 127.0.0.1:${PORTS[0]}"
  echo "mds_data_dir = $DEPFS_STATE/mds"
  for ((i = 0; i < SERVERS; i++)); do
    mkdir -p "$DEPFS_STATE/io/$i"
    echo "ioserver = $i $(addr_of $i) $DEPFS_STATE/io/$i"
  done
  echo "recovery_data_dir = $DEPFS_STATE/recovery"
  echo "transport = tcp"
} >"$CONF"
{ echo "SERVERS=$SERVERS"; printf 'MOUNT=%q\n' "$MNT"; echo "LAYOUT="; echo "PORTS=(${PORTS[*]})"; } >"$DEPFS_STATE/cluster.env"

start() { # start NAME CMD...: like local-cluster (own session, pid = the daemon's)
  local name=$1; shift
  printf '%q ' "$@" >"$DEPFS_STATE/pids/$name.cmd"
  setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$DEPFS_STATE/pids/$name.pid" "$@" \
    </dev/null >>"$DEPFS_STATE/logs/$name.log" 2>&1 &
}
wait_listen() { # wait_listen HOST PORT NAME
  for _ in $(seq 200); do (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && return 0; sleep 0.1; done
  tail -20 "$DEPFS_STATE/logs/$3.log"; fail "$3 not listening on $1:$2"
}
mds_args=(--config "$CONF")
"$DEPFS_BIN_DIR/depfs-mds" --help 2>&1 | grep -q -- --foreground && mds_args+=(--foreground)
start mds "$DEPFS_BIN_DIR/depfs-mds" "${mds_args[@]}"
wait_listen 127.0.0.1 "${PORTS[0]}" mds
for ((i = 0; i < SERVERS; i++)); do
  if [ "$i" -eq "$S" ]; then
    start "ioserver-$i" ip netns exec "$NS" "$DEPFS_BIN_DIR/depfs-ioserver" --config "$CONF" --id "$i"
  else
    start "ioserver-$i" "$DEPFS_BIN_DIR/depfs-ioserver" --config "$CONF" --id "$i"
  fi
done
for ((i = 0; i < SERVERS; i++)); do wait_listen "$(addr_of $i | cut -d: -f1)" "${PORTS[$((i + 1))]}" "ioserver-$i"; done
start recovery "$DEPFS_BIN_DIR/depfs-recovery" --config "$CONF"
start fuse "$DEPFS_BIN_DIR/depfs-fuse" "$MNT" -f -o "config=$CONF"
for _ in $(seq 200); do mountpoint -q "$MNT" && break; sleep 0.1; done
mountpoint -q "$MNT" || fail "not mounted at $MNT"
log "cluster up: MDS 127.0.0.1:${PORTS[0]}, server $S at $(addr_of "$S") inside $NS"
wait_all_up 30

for spec in 8@6 4@2; do
  d="L${spec/@/_}"
  mkdir "$MNT/$d" "$REF/$d"
  setfattr -n user.depfs.layout -v "$spec" "$MNT/$d"
done
python3 "$FAULTLOAD" populate "$MNT" "$REF" --dirs L8_6,L4_2 --files 6 --seed 21 || fail "populate failed"
verify_all "$REF"

# ---- the cut
mds_log="$DEPFS_STATE/logs/mds.log"
before=$(grep -c "ioserver $S .*-> down" "$mds_log" || true)
t_cut=$(now_ms)
ip netns exec "$NS" ip link set "$VN" down
log "cut server $S off (link $VN down inside $NS); the process is alive: $(ps -o pid=,stat= -p "$(cat "$DEPFS_STATE/pids/ioserver-$S.pid")")"
python3 "$FAULTLOAD" run "$MNT" "$REF" --seconds 15 --seed 22 --write-dirs L8_6,L4_2 --read-dirs L8_6,L4_2 \
  >"$DEPFS_STATE/wl.out" 2>&1 &
wl=$!
took=$(wait_state "$S" down 60) || fail "server $S never shown down after the cut"
line=
for _ in $(seq 600); do
  line=$(grep "ioserver $S .*-> down" "$mds_log" | sed -n "$((before + 1))p" || true)
  [ -n "$line" ] && break
  sleep 0.1
done
[ -n "$line" ] || fail "no 'ioserver $S ... -> down' line in the MDS log 60 s after the cut (depfs status called it down: this client cannot reach it)"
t_down=$(( $(date -d "$(echo "$line" | cut -c1-23)" +%s%3N) ))
t_d=$(( t_down - t_cut ))
bound=$(detect_bound_ms)
log "RESULT detection: MDS marked server $S down ${t_d} ms after the cut ($line); depfs status showed it after ${took} ms of polling; t_HB + 2*t_T = ${bound} ms"
[ "$t_d" -le $(( bound + DETECT_LOG_SLACK_MS )) ] || fail "detection took ${t_d} ms > t_HB + 2*t_T = ${bound} ms"
kill -0 "$(cat "$DEPFS_STATE/pids/ioserver-$S.pid")" || fail "server $S died; it was only to be cut off"
wait "$wl" || { cat "$DEPFS_STATE/wl.out"; fail "the workload failed while server $S was cut off"; }
cat "$DEPFS_STATE/wl.out"
verify_all "$REF"

# ---- the link returns
log "link $VN up again"
ip netns exec "$NS" ip link set "$VN" up
wait_all_up "$REBUILD_WAIT_S"
settle_clients
grep "ioserver $S " "$mds_log" | tail -5
sed -n "/ioserver $S .*-> down/,\$p" "$mds_log" | grep "ioserver $S " | grep -q -- "-> rebuilding" ||
  fail "server $S came back without going through 'rebuilding' (MDS log above)"
verify_all "$REF"

# ---- S's units equal decoding: two other servers down, every read decodes through S
O1=$(( (S + 1) % SERVERS )); O2=$(( (S + 4) % SERVERS ))
log "kill servers $O1 and $O2: reads decode through server $S's units"
kill_down "$O1"; kill_down "$O2"
verify_all "$REF"
"$LC" restart "$O1" --rebuild; "$LC" restart "$O2" --rebuild
wait_all_up "$REBUILD_WAIT_S"
settle_clients
verify_all "$REF"
scrub_clean
rm -rf "$REF"
echo "PASS: server $S cut off (not killed): detected in ${t_d} ms (bound ${bound} ms), writes went on, rebuilt through 'rebuilding' to up; data right; scrub clean"
