"""campaign_faults.py - the fault campaign's cluster and fault injector.

Cluster: one DePFS cluster run by deploy/local-cluster (its state dir
layout: depfs.conf, pids/NAME.pid + NAME.cmd, logs/NAME.log), optionally with
  * one I/O server inside a network namespace of its own (as in
    test_fault_partition.sh: a veth pair with addresses from 10.214.X.0/30
    and a blackhole route for 10.214.X.0/24 so nothing for that range can
    leave the host); cutting the link is a real partition, not a crash;
  * one I/O server whose data dir is a small tmpfs (a disk that fills up);
  * one I/O server whose data dir is a slow disk: a FUSE passthrough of a
    directory (tests/bench/passthrough_fs, "slowdisk") whose reads, writes
    and fsyncs each wait a set time while it is switched on (SIGUSR1,
    SIGUSR2 off): a disk that stalls while the daemon keeps answering
    heartbeats;
  * a second depfs-fuse mount of the same config (pids/fuse2.*).
Every daemon is started, killed and restarted through local-cluster, except
the namespaced server and, when there is one, the MDS, which then listens on
the host side of the veth so that the namespaced server reaches it too:
local-cluster looks for both on 127.0.0.1, so they are started the same way
(own session, pid file, command file, log) here.

Faults (Injector.run): each is injected, held, healed, and then the cluster
is given a bounded time to show every server up again, and to stay so for
HEALTHY_STABLE_S, before the next one, so at most one I/O server is
unavailable at a time."""
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time

LOG_BAD = ("Assertion", "assertion", "AddressSanitizer", "runtime error", "abort")
# "abort" as in abort(3) and "Aborted"; strerror(ECONNABORTED) ("Software
# caused connection abort") is a peer closing a socket, not a daemon aborting.
LOG_BENIGN = ("connection abort",)
# Healthy this long before the next fault: longer than a write round that
# was planned without a rejoining server can stay in flight (two request
# timeouts) plus recovery's decision period.
HEALTHY_STABLE_S = 5.0


class ClusterError(Exception):
    pass


def now():
    return time.strftime("%H:%M:%S")


class Cluster:
    def __init__(self, top, state, base_port, bin_dir, say):
        self.top, self.state, self.bin = top, state, bin_dir
        self.lc = os.path.join(top, "deploy", "local-cluster")
        self.conf = os.path.join(state, "depfs.conf")
        self.mnt = os.path.join(state, "mnt")
        self.mnt2 = os.path.join(state, "mnt2")
        self.say = say
        self.env = dict(os.environ, DEPFS_STATE=state, DEPFS_BASE_PORT=str(base_port),
                        DEPFS_BIN_DIR=bin_dir)
        self.ns = self.ns_server = self.vh = self.vn = self.guard = None
        self.guard_ours = False  # we added the guard route (never delete another's)
        self.ns_ip = None
        self.link_cut = False
        self.tmpfs_server = None
        self.slow_server = None
        self.slow_on = False
        self.addrs = {}
        self.nservers = 8

    # ---- helpers
    def lcrun(self, *args, timeout=120, check=True):
        p = subprocess.run([self.lc, *args], env=self.env, capture_output=True, text=True,
                           timeout=timeout)
        if check and p.returncode:
            raise ClusterError(f"local-cluster {' '.join(args)}: rc {p.returncode}: "
                               f"{(p.stderr or p.stdout).strip()[-1500:]}")
        return p

    def depfs(self, *args, timeout=60):
        return subprocess.run([os.path.join(self.bin, "depfs"), "--config", self.conf, *args],
                              capture_output=True, text=True, timeout=timeout)

    # helpers of the campaign's own, not daemons of the cluster: their pid
    # files stay out of pids/, where local-cluster would take them for a
    # cluster already running
    AUX = ("slowdisk",)

    def piddir(self, name):
        return os.path.join(self.state, "aux-pids" if name in self.AUX else "pids")

    def pidfile(self, name):
        return os.path.join(self.piddir(name), name + ".pid")

    def pid(self, name):
        try:
            with open(self.pidfile(name)) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def alive(self, name):
        """NAME's pid file names a live process of this cluster: not a zombie,
        and its command line names the state dir (as every daemon's does), so
        a pid reused by another cluster's daemon is not taken for ours."""
        p = self.pid(name)
        if p is None:
            return False
        try:
            with open(f"/proc/{p}/stat") as f:
                st = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            return st != "Z" and self.state.rstrip("/") + "/" in cmd
        except OSError:
            return False

    def names(self):
        return ["mds"] + [f"ioserver-{i}" for i in range(self.nservers)] + ["recovery", "fuse", "fuse2"]

    def _read_conf(self):
        self.addrs = {}
        with open(self.conf) as f:
            for line in f:
                w = line.split()
                if len(w) >= 5 and w[0] == "ioserver" and w[1] == "=":
                    h, p = w[3].rsplit(":", 1)
                    self.addrs[int(w[2])] = (h, int(p), w[4])
                elif len(w) >= 3 and w[0] == "mds_address":
                    h, p = w[2].rsplit(":", 1)
                    self.mds_addr = (h, int(p))
        self.nservers = len(self.addrs)

    @staticmethod
    def wait_port(host, port, secs=20):
        end = time.monotonic() + secs
        while time.monotonic() < end:
            try:
                socket.create_connection((host, port), timeout=1).close()
                return True
            except OSError:
                time.sleep(0.1)
        return False

    def _sh(self, *cmd, check=True):
        p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=60)
        if check and p.returncode:
            raise ClusterError(f"{' '.join(cmd)}: {p.stderr.strip()}")
        return p

    # ---- up / down
    def up(self, ns_server=None, tmpfs_server=None, tmpfs_mb=128, tag="dfc", slow_server=None,
           slow_us=0):
        os.makedirs(os.path.join(self.state, "logs"), exist_ok=True)
        if slow_server is not None:
            self.start_slow_disk(slow_server, slow_us)
        if tmpfs_server is not None:
            d = os.path.join(self.state, "io", str(tmpfs_server))
            os.makedirs(d, exist_ok=True)
            self._sh("mount", "-t", "tmpfs", "-o", f"size={tmpfs_mb}m", "tmpfs", d)
            self.tmpfs_server, self.tmpfs_mb = tmpfs_server, tmpfs_mb
        if ns_server is None:
            self.lcrun("up", timeout=180)
            self._read_conf()
        else:
            self._up_with_netns(ns_server, tag)
        self.start_mount2()

    NETS = 250  # 10.214.1..250

    def _free_net(self):
        """An X whose 10.214.X.0/24 has no route yet (another test or campaign
        beside us, or one that crashed, holds the others)."""
        for i in range(self.NETS):
            x = (os.getpid() + i) % self.NETS + 1
            if not subprocess.run(["ip", "route", "show", f"10.214.{x}.0/24"],
                                  capture_output=True, text=True).stdout.strip():
                return x
        raise ClusterError("every 10.214.X.0/24 already has a route: nowhere for the namespace")

    def _up_with_netns(self, s, tag):
        """local-cluster lays the cluster out (ports, config, command files);
        then server s moves into a namespace: its address in the config
        becomes the namespace side of a veth pair, and every daemon starts
        afresh from that config."""
        self.lcrun("up", "--no-mount", timeout=180)
        self.lcrun("down", timeout=120)
        self._read_conf()
        x = self._free_net()
        self.ns, self.vh, self.vn = f"{tag}-ns{os.getpid()}", f"{tag}{os.getpid()}h", f"{tag}{os.getpid()}n"
        host_ip, self.ns_ip, self.guard = f"10.214.{x}.1", f"10.214.{x}.2", f"10.214.{x}.0/24"
        self._sh("ip", "netns", "add", self.ns)
        self.ns_server = s
        self._sh("ip", "route", "add", "blackhole", self.guard)
        self.guard_ours = True
        self._sh("ip", "link", "add", self.vh, "type", "veth", "peer", "name", self.vn)
        self._sh("ip", "link", "set", self.vn, "netns", self.ns)
        self._sh("ip", "addr", "add", host_ip + "/30", "dev", self.vh)
        self._sh("ip", "link", "set", self.vh, "up")
        self._sh("ip", "netns", "exec", self.ns, "ip", "addr", "add", self.ns_ip + "/30", "dev", self.vn)
        self._sh("ip", "netns", "exec", self.ns, "ip", "link", "set", self.vn, "up")
        self._sh("ip", "netns", "exec", self.ns, "ip", "link", "set", "lo", "up")
        # the first start's data is from the old config: start empty
        for sub in ("mds", "recovery"):
            self._empty(os.path.join(self.state, sub))
        for i in range(self.nservers):
            self._empty(self.addrs[i][2])
        lines = []
        with open(self.conf) as f:
            for line in f:
                w = line.split()
                if len(w) >= 5 and w[0] == "ioserver" and w[2] == str(s):
                    line = f"ioserver = {s} {self.ns_ip}:{self.addrs[s][1]} {w[4]}\n"
                elif len(w) >= 3 and w[0] == "mds_address":
                    line = f"mds_address = {host_ip}:{self.mds_addr[1]}\n"
                lines.append(line)
        lines.insert(1, f"# campaign: I/O server {s} inside network namespace {self.ns}\n")
        with open(self.conf, "w") as f:
            f.writelines(lines)
        self._read_conf()
        with open(os.path.join(self.state, "pids", f"ioserver-{s}.cmd")) as f:
            self.ns_cmd = "ip netns exec " + shlex.quote(self.ns) + " " + f.read().strip()
        with open(os.path.join(self.state, "pids", "mds.cmd")) as f:
            self.mds_cmd = f.read().strip()
        self.start_mds()
        for i in range(self.nservers):
            if i == s:
                self.start_ns_server()
            else:
                self.lcrun("restart", str(i))
        self.lcrun("restart", "recovery")
        os.makedirs(self.mnt, exist_ok=True)
        self._start("fuse", [os.path.join(self.bin, "depfs-fuse"), self.mnt, "-f", "-o", f"config={self.conf}"])
        self._wait_mount(self.mnt, "fuse")

    @staticmethod
    def _empty(d):
        for name in os.listdir(d) if os.path.isdir(d) else []:
            p = os.path.join(d, name)
            subprocess.run(["rm", "-rf", p], check=False)

    def _start(self, name, argv=None, cmdline=None):
        """Starts NAME like local-cluster's start_daemon: own session, the pid
        file written by the process itself before exec, output to its log, the
        command line in pids/NAME.cmd."""
        pids = self.piddir(name)
        os.makedirs(pids, exist_ok=True)
        cmdline = cmdline or " ".join(shlex.quote(a) for a in argv)
        with open(os.path.join(pids, name + ".cmd"), "w") as f:
            f.write(cmdline + " ")
        pf = self.pidfile(name)
        if os.path.exists(pf):
            os.unlink(pf)
        logp = os.path.join(self.state, "logs", name + ".log")
        with open(logp, "ab") as logf:
            logf.write(f"=== {time.strftime('%F %T')} starting (campaign): {cmdline}\n".encode())
        # backgrounded by a shell that exits at once: the daemon is not our
        # child, so it never lingers as our zombie (local-cluster's kill -0
        # would wait for a zombie forever)
        inner = 'echo $$ >"$1"; eval "exec $2"'
        subprocess.run(["bash", "-c", 'setsid bash -c "$0" _ "$1" "$2" </dev/null >>"$3" 2>&1 &',
                        inner, pf, cmdline, logp], stdin=subprocess.DEVNULL, check=True, timeout=30)
        for _ in range(100):
            if self.pid(name):
                return
            time.sleep(0.05)
        raise ClusterError(f"{name} did not start")

    def start_mds(self):
        """With a namespaced server the MDS listens on the host side of the
        veth (the namespace's 127.0.0.1 is its own), where local-cluster
        does not look for it."""
        self._start("mds", cmdline=self.mds_cmd)
        h, p = self.mds_addr
        if not self.wait_port(h, p, 20):
            raise ClusterError(f"mds not listening on {h}:{p}")

    def start_ns_server(self, rebuild=False):
        s = self.ns_server
        self._start(f"ioserver-{s}", cmdline=self.ns_cmd + (" --rebuild" if rebuild else ""))
        if not self.wait_port(self.ns_ip, self.addrs[s][1], 20):
            raise ClusterError(f"ioserver-{s} (in {self.ns}) not listening on {self.ns_ip}:{self.addrs[s][1]}")

    def _wait_mount(self, mnt, name, secs=20):
        end = time.monotonic() + secs
        while time.monotonic() < end:
            if os.path.ismount(mnt):
                return
            if not self.alive(name) and time.monotonic() > end - secs + 2:
                break
            time.sleep(0.1)
        raise ClusterError(f"{mnt} not mounted by {name}")

    def slow_disk_bin(self):
        return os.path.join(os.path.dirname(self.bin.rstrip("/")), "bench", "passthrough_fs")

    def start_slow_disk(self, server, us):
        """Server's data dir becomes a passthrough FUSE mount of a directory
        beside it, slow (us per I/O) while switched on."""
        d = os.path.join(self.state, "io", str(server))
        backing = os.path.join(self.state, "io-slowdisk", str(server))
        os.makedirs(d, exist_ok=True)
        os.makedirs(backing, exist_ok=True)
        self._start("slowdisk", cmdline=f"env PT_SLOW_US={int(us)} " + " ".join(
            shlex.quote(a) for a in (self.slow_disk_bin(), backing, d, "-f")))
        self._wait_mount(d, "slowdisk")
        self.slow_server = server

    def slow(self, on):
        self.sig("slowdisk", signal.SIGUSR1 if on else signal.SIGUSR2)
        self.slow_on = on

    def start_mount2(self):
        os.makedirs(self.mnt2, exist_ok=True)
        self._start("fuse2", [os.path.join(self.bin, "depfs-fuse"), self.mnt2, "-f", "-o", f"config={self.conf}"])
        self._wait_mount(self.mnt2, "fuse2")

    def down(self, keep_tmpfs=False):
        """Everything this cluster made goes: mounts, daemons, namespace, tmpfs
        (with keep_tmpfs, the tmpfs data dir is copied to disk first, for a
        post-mortem of a failed round)."""
        for m, name in ((self.mnt2, "fuse2"), (self.mnt, "fuse")):
            if os.path.ismount(m):
                if subprocess.run(["fusermount3", "-u", m], capture_output=True).returncode:
                    subprocess.run(["umount", "-l", m], capture_output=True)
        if self.ns_server is not None:
            try:
                self.link(True)  # a namespaced daemon must be reachable to stop cleanly
            except ClusterError as e:  # set-up failed half way: clean up the rest
                print(f"campaign: {e}", flush=True)
        for name in self.names():
            if self.alive(name):
                try:
                    os.kill(self.pid(name), signal.SIGCONT)
                except OSError:
                    pass
        try:
            self.lcrun("down", timeout=180, check=False)
        except subprocess.TimeoutExpired:
            pass
        for name in self.names():  # anything local-cluster left (it never knew fuse2's mount)
            p = self.pid(name) if self.alive(name) else None
            if p:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
        if self.ns:
            subprocess.run(["ip", "link", "del", self.vh], capture_output=True)
            subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
            if self.guard_ours:  # never another's route
                subprocess.run(["ip", "route", "del", "blackhole", self.guard], capture_output=True)
            self.guard_ours = False
            self.ns = self.ns_server = None
        if self.slow_server is not None:
            d = os.path.join(self.state, "io", str(self.slow_server))
            if self.alive("slowdisk"):
                self.slow(False)
            for _ in range(20):
                if subprocess.run(["fusermount3", "-u", d], capture_output=True).returncode == 0 \
                        or not os.path.ismount(d):
                    break
                time.sleep(0.5)
            if os.path.ismount(d):
                subprocess.run(["umount", "-l", d], capture_output=True)
            if self.alive("slowdisk"):
                os.kill(self.pid("slowdisk"), signal.SIGKILL)
            self.slow_server = None
        if self.tmpfs_server is not None:
            d = os.path.join(self.state, "io", str(self.tmpfs_server))
            if keep_tmpfs:
                subprocess.run(["cp", "-a", d, d + ".tmpfs-copy"], capture_output=True, timeout=300)
            for _ in range(20):
                if subprocess.run(["umount", d], capture_output=True).returncode == 0 or not os.path.ismount(d):
                    break
                time.sleep(0.5)
            self.tmpfs_server = None

    # ---- daemon control
    def sig(self, name, sig):
        p = self.pid(name)
        if p is None:
            raise ClusterError(f"no pid for {name}")
        os.kill(p, sig)

    def kill(self, name):
        if name.startswith("ioserver-"):
            self.lcrun("kill", name.split("-")[1])
        else:
            self.lcrun("kill", name)

    def restart(self, name, rebuild=False):
        if name == f"ioserver-{self.ns_server}":
            return self.start_ns_server(rebuild)
        if name == "mds" and self.ns is not None:
            return self.start_mds()
        if name == "fuse2":
            return self.start_mount2()
        args = ["restart", name.split("-")[1] if name.startswith("ioserver-") else name]
        if rebuild:
            args.append("--rebuild")
        self.lcrun(*args)

    def link(self, up):
        if self.ns is None:
            return
        self._sh("ip", "netns", "exec", self.ns, "ip", "link", "set", self.vn, "up" if up else "down")
        self.link_cut = not up

    def ballast_path(self):
        return os.path.join(self.state, "io", str(self.tmpfs_server), "campaign-ballast")

    def fill(self):
        """Fills the tmpfs data dir to the last byte (ENOSPC)."""
        n = 0
        chunk = bytes(1 << 20)
        with open(self.ballast_path(), "wb", buffering=0) as f:
            try:
                for _ in range(self.tmpfs_mb + 1):
                    n += f.write(chunk)
                small = bytes(4096)
                for _ in range(256):
                    n += f.write(small)
            except OSError:
                pass
            try:
                for _ in range(4096):
                    n += f.write(b"x")
            except OSError:
                pass
        return n

    def unfill(self):
        try:
            os.unlink(self.ballast_path())
        except FileNotFoundError:
            pass

    # ---- status
    def status(self):
        try:
            p = self.depfs("status", "--json", timeout=30)
        except subprocess.TimeoutExpired:
            return None
        if p.returncode not in (0, 1):
            return None
        try:
            return json.loads(p.stdout)
        except ValueError:
            return None

    @staticmethod
    def healthy(st):
        if not st or not st.get("servers"):
            return False
        t = st.get("totals", {})
        return all(s.get("state") == "up" and s.get("mds_state") == "up" and s.get("reachable")
                   and not s.get("degraded_files") for s in st["servers"]) and \
            not t.get("rebuilding") and not t.get("reconstructing") and not t.get("down")

    @staticmethod
    def states_line(st):
        if not st:
            return "status unavailable"
        return " ".join(f"{s['id']}={s.get('state')}/{s.get('mds_state')}"
                        + ("" if s.get("reachable") else "!") +
                        (f"(dirty {s['degraded_files']})" if s.get("degraded_files") else "")
                        for s in st["servers"])

    def wait_healthy(self, secs, stable_s=0.0):
        """Waits (at most secs) until the cluster is healthy, and has stayed
        so for stable_s: (True, states) or (False, the last states)."""
        end = time.monotonic() + secs
        last = None
        since = None
        while True:
            st = self.status()
            if self.healthy(st):
                since = since if since is not None else time.monotonic()
                if time.monotonic() - since >= stable_s:
                    return True, self.states_line(st)
            else:
                since = None
            last = st
            if time.monotonic() >= end:
                return False, self.states_line(last)
            time.sleep(0.5)

    def serve_order_findings(self):
        """What serve_order.py finds in the daemons' logs: the MDS called a
        server out of service while that server still served reads."""
        p = subprocess.run([sys.executable, os.path.join(self.top, "tests", "integration", "serve_order.py"),
                            "--logs", os.path.join(self.state, "logs")],
                           capture_output=True, text=True, timeout=120)
        if p.returncode not in (0, 1):
            return [f"serve_order.py exited {p.returncode}: {p.stderr.strip()[-300:]}"]
        return [line for line in p.stdout.splitlines() if line.startswith("WRONG")]

    def log_findings(self, offsets=None):
        """Lines with assertion failures / sanitizer reports / aborts in the
        daemons' logs, past the given per-file offsets; returns (lines, offsets)."""
        found, offs = [], {}
        d = os.path.join(self.state, "logs")
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            p = os.path.join(d, name)
            start = (offsets or {}).get(name, 0)
            with open(p, "rb") as f:
                f.seek(start)
                data = f.read()
            offs[name] = start + len(data)
            for line in data.decode(errors="replace").splitlines():
                if any(b in line for b in LOG_BAD) and not any(b in line for b in LOG_BENIGN):
                    found.append(f"{name}: {line.strip()[:300]}")
        return found, offs


class Injector:
    """Runs one round's fault schedule (a list of dicts made by
    campaign.plan_round) against a cluster; counts faults by kind; logs each
    with the round and time."""

    def __init__(self, cluster, rnd, say, clients, settle_s=120):
        self.c, self.round, self.say = cluster, rnd, say
        self.clients = clients        # object with kill_client(slot_hint) -> str
        self.settle_s = settle_s
        self.counts = {}
        self.problems = []            # things that did not heal: reported as failures
        self.stopped = set()          # names currently SIGSTOPped (for heal)

    def log(self, msg):
        self.say(f"round {self.round} {now()} FAULT {msg}")

    def sleep(self, s):
        time.sleep(max(0.0, s))

    def run(self, schedule, deadline):
        for f in schedule:
            if time.monotonic() > deadline:
                self.log(f"schedule cut short at the round's time limit ({len(schedule)} planned)")
                break
            self.sleep(f["gap"])
            getattr(self, "f_" + f["kind"])(f)
            self.counts[f["kind"]] = self.counts.get(f["kind"], 0) + 1
            if f["kind"] not in ("kill_client",):
                # stable: a write planned without a server that was in
                # flight across its rejoin demotes it again moments later
                # (the write names it dirty), and a fault meanwhile would make
                # two servers of an n-k=1 layout unavailable (seed 1109)
                ok, line = self.c.wait_healthy(self.settle_s, stable_s=HEALTHY_STABLE_S)
                self.log(f"{f['kind']} healed: {'all servers up' if ok else 'NOT healthy after %d s' % self.settle_s}: {line}")
                if not ok:
                    self.problems.append(f"after fault {f['kind']} ({f.get('target')}) the cluster was not "
                                         f"healthy within {self.settle_s} s: {line}")
                    break

    # ---- the faults
    def f_stop(self, f):
        name = f"ioserver-{f['target']}"
        self.log(f"SIGSTOP {name} for {f['hold']:.1f} s ({f['kind']})")
        self.c.sig(name, signal.SIGSTOP)
        self.stopped.add(name)
        self.sleep(f["hold"])
        self.c.sig(name, signal.SIGCONT)
        self.stopped.discard(name)
        self.log(f"SIGCONT {name}")

    f_stop_short = f_stop_long = f_stop

    def f_kill_restart(self, f):
        name = f"ioserver-{f['target']}"
        self.log(f"SIGKILL {name}, restart{' --rebuild' if f['rebuild'] else ''} after {f['hold']:.1f} s")
        self.c.kill(name)
        self.sleep(f["hold"])
        self.c.restart(name, rebuild=f["rebuild"])
        self.log(f"restarted {name}")

    def f_kill_recovery(self, f):
        self.log(f"SIGKILL recovery, restart after {f['hold']:.1f} s")
        self.c.kill("recovery")
        self.sleep(f["hold"])
        self.c.restart("recovery")
        self.log("restarted recovery")

    def f_kill_mds(self, f):
        self.log(f"SIGKILL mds, restart after {f['hold']:.1f} s")
        self.c.kill("mds")
        self.sleep(f["hold"])
        self.c.restart("mds")
        self.log("restarted mds")

    def f_stop_long_recovery(self, f):
        """A long SIGSTOP of a server, with the recovery daemon killed and
        restarted while the server is frozen or rejoining."""
        name = f"ioserver-{f['target']}"
        self.log(f"SIGSTOP {name} for {f['hold']:.1f} s; recovery killed {f['rec_at']:.1f} s in")
        self.c.sig(name, signal.SIGSTOP)
        self.stopped.add(name)
        self.sleep(f["rec_at"])
        self.c.kill("recovery")
        self.sleep(f["hold"] - f["rec_at"])
        self.c.sig(name, signal.SIGCONT)
        self.stopped.discard(name)
        self.sleep(f["rec_down"])
        self.c.restart("recovery")
        self.log(f"SIGCONT {name}; recovery restarted {f['rec_down']:.1f} s later")

    def f_partition(self, f):
        s = self.c.ns_server
        self.log(f"cut ioserver-{s} off (link down in {self.c.ns}) for {f['hold']:.1f} s")
        self.c.link(False)
        self.sleep(f["hold"])
        self.c.link(True)
        self.log(f"reconnected ioserver-{s}")

    def f_fill(self, f):
        s = self.c.tmpfs_server
        n = self.c.fill()
        self.log(f"filled ioserver-{s}'s data dir (tmpfs) with {n >> 20} MiB of ballast for {f['hold']:.1f} s")
        self.sleep(f["hold"])
        self.c.unfill()
        self.log(f"removed the ballast of ioserver-{s}")

    def f_slow(self, f):
        s = self.c.slow_server
        self.log(f"ioserver-{s}'s disk slow ({f['us'] // 1000} ms per read, write and fsync) "
                 f"for {f['hold']:.1f} s")
        self.c.slow(True)
        self.sleep(f["hold"])
        self.c.slow(False)
        self.log(f"ioserver-{s}'s disk fast again")

    def f_kill_client(self, f):
        self.log(self.clients.kill_client(f["target"]))

    def heal(self):
        """Undoes anything a fault (or an aborted schedule) left behind."""
        for name in list(self.stopped):
            try:
                self.c.sig(name, signal.SIGCONT)
            except (OSError, ClusterError):
                pass
            self.stopped.discard(name)
        if self.c.link_cut:
            self.c.link(True)
        if self.c.tmpfs_server is not None:
            self.c.unfill()
        if self.c.slow_on:
            self.c.slow(False)
