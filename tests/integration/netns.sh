# netns.sh - sourced after lib.sh: a cluster with one I/O server in a network
# namespace of its own, as test_fault_partition.sh builds it, for tests that
# cut that server off and reconnect it. The namespace is reached over a veth
# pair with addresses from 10.214.X.0/30; a blackhole route for
# 10.214.X.0/24 makes sure nothing for that range can ever leave the host.
# Names carry the "dfr" prefix. The MDS listens on the host side of the
# veth, the one address both the namespace and the host reach (127.0.0.1
# inside the namespace is the namespace's own); the other I/O servers,
# recovery and the FUSE mount run on 127.0.0.1, from a config written
# here; local-cluster's pid/cmd files are kept so its kill/restart/down work
# on this cluster too (all but restarting the MDS, which local-cluster looks
# for on 127.0.0.1).
#
#   netns_setup            make the namespace and the veth pair (exit 77 if
#                          this machine cannot)
#   netns_cluster_up S N   start a cluster of N I/O servers, server S inside
#   netns_cut / netns_heal the namespace side of the veth down / up: every
#                          packet to or from S is silently dropped (S's
#                          sockets see nothing: a partition, not a crash)
#   netns_cleanup          remove the namespace, veth and guard route
NETNS_NET_TRIES=250 # 10.214.1..250: the first free one from the pid on
# netns_pick_net: NETNS_NET := an X whose 10.214.X.0/24 has no route yet (a
# test or campaign running beside this one, or one that crashed, holds the
# others); 1 when every one is taken.
netns_pick_net() {
  local i x
  for ((i = 0; i < NETNS_NET_TRIES; i++)); do
    x=$(( ($$ + i) % NETNS_NET_TRIES + 1 ))
    [ -n "$(ip route show "10.214.$x.0/24" 2>/dev/null)" ] || { NETNS_NET=$x; return 0; }
  done
  return 1
}
NETNS_NET=$(( $$ % NETNS_NET_TRIES + 1 ))
NETNS_NS="dfr-ns$$"
NETNS_VH="dfr$$h" # host side
NETNS_VN="dfr$$n" # namespace side
NETNS_HOST_IP="10.214.$NETNS_NET.1"
NETNS_IP="10.214.$NETNS_NET.2"
NETNS_GUARD="10.214.$NETNS_NET.0/24"
NETNS_UP=0
NETNS_GUARD_OURS=0 # we added the guard route (never delete another's)
NETNS_SERVER=-1

netns_cleanup() {
  [ "$NETNS_UP" -eq 1 ] || return 0
  ip link del "$NETNS_VH" 2>/dev/null || true
  ip netns del "$NETNS_NS" 2>/dev/null || true
  [ "$NETNS_GUARD_OURS" -eq 0 ] || ip route del blackhole "$NETNS_GUARD" 2>/dev/null || true
  NETNS_GUARD_OURS=0
  NETNS_UP=0
}

netns_setup() {
  local err="/tmp/depfs-reg-netns-$$.err"
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: network namespaces need root"; exit 77; }
  command -v ip >/dev/null || { echo "SKIP: no ip(8) (iproute2)"; exit 77; }
  netns_pick_net || fail "every 10.214.X.0/24 already has a route: nowhere to put the namespace"
  NETNS_HOST_IP="10.214.$NETNS_NET.1"
  NETNS_IP="10.214.$NETNS_NET.2"
  NETNS_GUARD="10.214.$NETNS_NET.0/24"
  ip netns add "$NETNS_NS" 2>"$err" || { echo "SKIP: ip netns add failed: $(cat "$err")"; rm -f "$err"; exit 77; }
  rm -f "$err"
  NETNS_UP=1
  ip route add blackhole "$NETNS_GUARD" || fail "cannot add the guard route $NETNS_GUARD"
  NETNS_GUARD_OURS=1
  ip link add "$NETNS_VH" type veth peer name "$NETNS_VN" || { echo "SKIP: cannot make a veth pair"; exit 77; }
  ip link set "$NETNS_VN" netns "$NETNS_NS"
  ip addr add "$NETNS_HOST_IP/30" dev "$NETNS_VH"
  ip link set "$NETNS_VH" up
  ip netns exec "$NETNS_NS" ip addr add "$NETNS_IP/30" dev "$NETNS_VN"
  ip netns exec "$NETNS_NS" ip link set "$NETNS_VN" up
  ip netns exec "$NETNS_NS" ip link set lo up
  log "namespace $NETNS_NS: $NETNS_IP (veth $NETNS_VN) <-> host $NETNS_HOST_IP (veth $NETNS_VH)"
}

netns_cut() { ip netns exec "$NETNS_NS" ip link set "$NETNS_VN" down; }
netns_heal() { ip netns exec "$NETNS_NS" ip link set "$NETNS_VN" up; }

_netns_start() { # NAME CMD...: like local-cluster (own session, pid = the daemon's)
  local name=$1; shift
  printf '%q ' "$@" >"$DEPFS_STATE/pids/$name.cmd"
  setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$DEPFS_STATE/pids/$name.pid" "$@" \
    </dev/null >>"$DEPFS_STATE/logs/$name.log" 2>&1 &
}
_netns_wait_listen() { # HOST PORT NAME
  local _i
  for _i in $(seq 200); do (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && return 0; sleep 0.1; done
  tail -20 "$DEPFS_STATE/logs/$3.log"; fail "$3 not listening on $1:$2"
}

netns_cluster_up() {
  local s=$1 servers=$2 p i addr
  NETNS_SERVER=$s
  cluster_down || true
  rm -rf "$DEPFS_STATE"
  CLUSTER_STARTED=1
  mkdir -p "$DEPFS_STATE"/{mds,recovery,logs,pids} "$MNT"
  NETNS_PORTS=()
  p=$DEPFS_BASE_PORT
  while [ ${#NETNS_PORTS[@]} -le "$servers" ]; do
    ss -Htln "sport = :$p" | grep -q . || NETNS_PORTS+=("$p")
    p=$((p + 1))
  done
  {
    echo "# netns.sh: server $s in netns $NETNS_NS"
    echo "mds_address = $NETNS_HOST_IP:${NETNS_PORTS[0]}"
    echo "mds_data_dir = $DEPFS_STATE/mds"
    for ((i = 0; i < servers; i++)); do
      mkdir -p "$DEPFS_STATE/io/$i"
      addr=127.0.0.1; [ "$i" -ne "$s" ] || addr=$NETNS_IP
      echo "ioserver = $i $addr:${NETNS_PORTS[$((i + 1))]} $DEPFS_STATE/io/$i"
    done
    echo "recovery_data_dir = $DEPFS_STATE/recovery"
    echo "transport = tcp"
    echo "cluster_key = $DEPFS_STATE/cluster.key"
  } >"$CONF"
  (umask 077 && head -c 32 /dev/urandom >"$DEPFS_STATE/cluster.key") # common/auth.h AUTH_KEY_BYTES
  { echo "SERVERS=$servers"; printf 'MOUNT=%q\n' "$MNT"; echo "LAYOUT="; echo "PORTS=(${NETNS_PORTS[*]})"; } >"$DEPFS_STATE/cluster.env"
  local -a mds_args=(--config "$CONF")
  "$DEPFS_BIN_DIR/depfs-mds" --help 2>&1 | grep -q -- --foreground && mds_args+=(--foreground)
  _netns_start mds "$DEPFS_BIN_DIR/depfs-mds" "${mds_args[@]}"
  _netns_wait_listen "$NETNS_HOST_IP" "${NETNS_PORTS[0]}" mds
  for ((i = 0; i < servers; i++)); do
    if [ "$i" -eq "$s" ]; then
      _netns_start "ioserver-$i" ip netns exec "$NETNS_NS" "$DEPFS_BIN_DIR/depfs-ioserver" --config "$CONF" --id "$i"
    else
      _netns_start "ioserver-$i" "$DEPFS_BIN_DIR/depfs-ioserver" --config "$CONF" --id "$i"
    fi
  done
  for ((i = 0; i < servers; i++)); do
    addr=127.0.0.1; [ "$i" -ne "$s" ] || addr=$NETNS_IP
    _netns_wait_listen "$addr" "${NETNS_PORTS[$((i + 1))]}" "ioserver-$i"
  done
  _netns_start recovery "$DEPFS_BIN_DIR/depfs-recovery" --config "$CONF"
  _netns_start fuse "$DEPFS_BIN_DIR/depfs-fuse" "$MNT" -f -o "config=$CONF"
  for i in $(seq 200); do mountpoint -q "$MNT" && break; sleep 0.1; done
  mountpoint -q "$MNT" || fail "not mounted at $MNT"
  log "cluster up: MDS $NETNS_HOST_IP:${NETNS_PORTS[0]}, server $s at $NETNS_IP:${NETNS_PORTS[$((s + 1))]} inside $NETNS_NS"
  wait_all_up 30
}

# netns_restart ID: start I/O server ID again with its recorded command line
# (local-cluster restart refuses a command that starts with ip(8)).
netns_restart() {
  local name="ioserver-$1" cmd
  cmd=$(cat "$DEPFS_STATE/pids/$name.cmd") || fail "no recorded command for $name"
  eval "local -a argv=($cmd)"
  echo "=== $(date '+%F %T') starting: ${argv[*]}" >>"$DEPFS_STATE/logs/$name.log"
  _netns_start "$name" "${argv[@]}"
  local _i
  for _i in $(seq 200); do [ -s "$DEPFS_STATE/pids/$name.pid" ] && break; sleep 0.05; done
}
