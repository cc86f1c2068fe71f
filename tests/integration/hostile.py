#!/usr/bin/env python3
"""hostile.py - hostile load on a DePFS cluster while well-behaved clients
work, for test_load_hostile.sh. Standard library only; traffic only to the
loopback addresses it is given.

    hostile.py --mds HOST:PORT --io HOST:PORT --ino INO --mnt DIR
               --depfs "CMD ..." --work DIR [--seconds S] [--sockets N]
               [--watch NAME=PID ...] [--rss-max-mb MB] [--op-max-s S]

The attack, for S seconds:
  - N sockets to the MDS and N to the I/O server, in turn: idle (connected,
    silent), half a frame header, and a whole header declaring 64 MiB of
    bulk followed by BIG_SENT_BYTES of it (the MDS refuses any bulk); the
    ones the servers close are reopened, at most REOPEN_PER_S a second;
  - a pipeliner: one MDS connection sending MDS_SETATTR (mtime = now) of
    inode INO as fast as the socket takes them and reading no reply, with
    a tiny receive buffer so replies back up at once; when the MDS closes
    it, it connects again (at most PIPE_RECONNECTS_MAX times).
Meanwhile two well-behaved clients: one creates and writes files through
the FUSE mount (DIR/load/m, with fsync), one copies files in with the depfs
CLI (depfs:/load/c). Every operation must complete within --op-max-s; their
latencies (p50, p99, max) are reported. The daemons' VmRSS (/proc/PID/
status) is sampled throughout and must stay below --rss-max-mb. Copies of
what was written go to WORK/m and WORK/c for the read-back check.

Prints a report; exit 0 when every operation completed in time and every
daemon stayed under the RSS bound, 1 otherwise.
"""
import argparse
import os
import resource
import select
import shlex
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import authwire  # noqa: E402

MAGIC = 0x46506544
VERSION = 1
HEADER = struct.Struct("<IHHIIIIQ")  # magic version type flags hdr_len bulk_len crc req_id
MDS_SETATTR = 4
IO_WRITE = 2
SET_MTIME_NOW = 256
BIG_DECLARED_BYTES = 64 << 20
BIG_SENT_BYTES = 256 << 10
HALF_HEADER_BYTES = HEADER.size // 2
REOPEN_PER_S = 100
REOPEN_ROUND_S = 0.5
CONNECT_TIMEOUT_S = 2.0
PIPE_RCVBUF_BYTES = 4096
PIPE_BATCH_FRAMES = 1000
PIPE_RECONNECTS_MAX = 50
PIPE_BLOCKED_PAUSE_S = 0.02
FD_HEADROOM = 512
RSS_PERIOD_S = 0.25
MOUNT_FILE_BYTES = 96 << 10
CLI_FILE_BYTES = 160 << 10
OPS_MAX = 5000  # per client: the loops end on time long before this
CLI_TIMEOUT_S = 60
JOIN_GRACE_S = 30


varint, f_int = authwire.varint, authwire.f_int


def frame(type_, hdr=b"", bulk_len=0, req_id=1):
    return HEADER.pack(MAGIC, VERSION, type_, 0, len(hdr), bulk_len, 0, req_id) + hdr


def split_addr(addr):
    host, port = addr.rsplit(":", 1)
    return host, int(port)


def raise_fd_limit(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# ------------------------------------------------------------ the attack
class Flood:
    """N hostile sockets to one server, reopened as the server closes them."""

    def __init__(self, name, addr, n, io):
        self.name, self.addr, self.n, self.io = name, split_addr(addr), n, io
        self.socks = {}  # slot -> socket
        self.opened = self.closed_by_server = self.refused = 0
        self.big = b"\0" * BIG_SENT_BYTES

    def open_slot(self, slot):
        try:
            s = socket.create_connection(self.addr, timeout=CONNECT_TIMEOUT_S)
        except OSError:
            self.refused += 1
            return
        s.setblocking(False)
        kind = slot % 3
        try:
            if kind == 1:
                s.send(frame(IO_WRITE if self.io else MDS_SETATTR)[:HALF_HEADER_BYTES])
            elif kind == 2:
                s.send(frame(IO_WRITE if self.io else MDS_SETATTR, bulk_len=BIG_DECLARED_BYTES))
                s.send(self.big)  # what fits; the rest never comes
        except OSError:
            pass  # closed at once: counted when polled
        self.socks[slot] = s
        self.opened += 1

    def open_all(self):
        for slot in range(self.n):
            self.open_slot(slot)

    def reap(self):
        """Slots whose socket the server closed."""
        gone = []
        p = select.poll()
        fd_slot = {}
        for slot, s in self.socks.items():
            p.register(s.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)
            fd_slot[s.fileno()] = slot
        for fd, _ev in p.poll(0):
            slot = fd_slot[fd]
            s = self.socks[slot]
            try:
                if s.recv(1) != b"":
                    continue  # servers never send these peers anything
            except BlockingIOError:
                continue
            except OSError:
                pass
            s.close()
            del self.socks[slot]
            gone.append(slot)
        self.closed_by_server += len(gone)
        return gone

    def close(self):
        for s in self.socks.values():
            s.close()
        self.socks.clear()


def flood_main(floods, stop, stats):
    for f in floods:
        f.open_all()
    budget = int(REOPEN_PER_S * REOPEN_ROUND_S)
    while not stop.wait(REOPEN_ROUND_S):
        for f in floods:
            for slot in f.reap()[:budget]:
                f.open_slot(slot)
    for f in floods:
        f.reap()
        stats[f.name] = "%d opened, %d closed by the server, %d refused at connect, %d open at the end" % (
            f.opened, f.closed_by_server, f.refused, len(f.socks))
        f.close()


def pipeliner_main(addr, ino, stop, stats):
    """MDS_SETATTR as fast as the MDS takes them, never reading a reply."""
    body = f_int(4, ino) + f_int(13, SET_MTIME_NOW)
    sent = closed = 0
    req_id = 1
    while not stop.is_set() and closed <= PIPE_RECONNECTS_MAX:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, PIPE_RCVBUF_BYTES)
        try:
            s.settimeout(CONNECT_TIMEOUT_S)
            s.connect(split_addr(addr))
            tagger = None  # a client that got in (the worst case): its frames are tagged
            if os.environ.get("DEPFS_CLUSTER_KEY"):
                with open(os.environ["DEPFS_CLUSTER_KEY"], "rb") as kf:
                    skey, _role = authwire.handshake(s, authwire.METHOD_KEY,
                                                     secret=authwire.derive(kf.read(), "peer"))
                tagger = authwire.AuthSocket(s, skey)
        except (OSError, authwire.AuthRefused):
            s.close()
            stop.wait(REOPEN_ROUND_S)
            continue
        s.setblocking(False)
        pending = b""
        while not stop.is_set():
            if not pending:
                pending = b"".join(frame(MDS_SETATTR, body, req_id=req_id + i)
                                   for i in range(PIPE_BATCH_FRAMES))
                if tagger:
                    pending = tagger._tagged(pending)
                req_id += PIPE_BATCH_FRAMES
            try:
                n = s.send(pending)
            except BlockingIOError:
                stop.wait(PIPE_BLOCKED_PAUSE_S)  # the MDS reads no more of us
                continue
            except OSError:
                closed += 1  # the MDS closed us: our replies were not read
                break
            sent += n
            pending = pending[n:]
        s.close()
    frame_bytes = len(frame(MDS_SETATTR, body)) + (authwire.TAG_BYTES if os.environ.get("DEPFS_CLUSTER_KEY") else 0)
    stats["pipeliner"] = "%d SETATTR frames sent (%d bytes), closed by the MDS %d times" % (
        sent // frame_bytes, sent, closed)
    stats["pipeliner_closed"] = closed


# ------------------------------------------------ well-behaved clients
class Client:
    def __init__(self, name):
        self.name, self.lat, self.errors = name, [], []

    def timed(self, what, fn):
        t0 = time.monotonic()
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - every failure is reported
            self.errors.append("%s: %s" % (what, e))
        self.lat.append(time.monotonic() - t0)


def mount_client(c, mnt, work, stop):
    os.makedirs(os.path.join(mnt, "load", "m"), exist_ok=True)
    os.makedirs(os.path.join(work, "m"), exist_ok=True)
    for i in range(OPS_MAX):
        if stop.is_set():
            break
        data = os.urandom(MOUNT_FILE_BYTES)
        name = "f%05d" % i

        def op():
            fd = os.open(os.path.join(mnt, "load", "m", name), os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
        c.timed("create+write+fsync " + name, op)
        with open(os.path.join(work, "m", name), "wb") as f:
            f.write(data)


def cli_client(c, depfs, mnt, work, stop):
    os.makedirs(os.path.join(mnt, "load", "c"), exist_ok=True)
    os.makedirs(os.path.join(work, "c"), exist_ok=True)
    for i in range(OPS_MAX):
        if stop.is_set():
            break
        name = "f%05d" % i
        local = os.path.join(work, "c", name)
        with open(local, "wb") as f:
            f.write(os.urandom(CLI_FILE_BYTES))

        def op():
            r = subprocess.run(depfs + ["cp", local, "depfs:/load/c/" + name], timeout=CLI_TIMEOUT_S,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if r.returncode != 0:
                raise RuntimeError("exit %d: %s" % (r.returncode, r.stderr.strip()[-300:]))
        c.timed("depfs cp " + name, op)


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def rss_main(watch, stop, peak):
    while True:
        for name, pid in watch:
            try:
                peak[name] = max(peak.get(name, 0), rss_kb(pid))
            except OSError:
                peak[name] = -1  # the daemon died
        if stop.wait(RSS_PERIOD_S):
            return


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))] if v else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mds", required=True)
    ap.add_argument("--io", required=True)
    ap.add_argument("--ino", type=int, required=True)
    ap.add_argument("--mnt", required=True)
    ap.add_argument("--depfs", required=True, help="the CLI command line, e.g. 'depfs --config C'")
    ap.add_argument("--work", required=True)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--sockets", type=int, default=2000)
    ap.add_argument("--watch", action="append", default=[], help="NAME=PID of a daemon")
    ap.add_argument("--rss-max-mb", type=int, default=300)
    ap.add_argument("--op-max-s", type=float, default=10)
    a = ap.parse_args()

    for addr in (a.mds, a.io):
        if split_addr(addr)[0] not in ("127.0.0.1", "localhost", "::1"):
            sys.exit("hostile.py: %s is not a loopback address" % addr)
    limit = raise_fd_limit(2 * a.sockets + FD_HEADROOM)
    if limit < 2 * a.sockets + FD_HEADROOM:
        sys.exit("hostile.py: descriptor limit %d is too low for %d sockets" % (limit, 2 * a.sockets))
    watch = [(w.split("=")[0], int(w.split("=")[1])) for w in a.watch]

    stop_attack, stop_clients, stop_rss = threading.Event(), threading.Event(), threading.Event()
    stats, peak = {}, {}
    floods = [Flood("mds", a.mds, a.sockets, False), Flood("io", a.io, a.sockets, True)]
    clients = [Client("mount"), Client("cli")]
    threads = [
        threading.Thread(target=rss_main, args=(watch, stop_rss, peak)),
        threading.Thread(target=flood_main, args=(floods, stop_attack, stats)),
        threading.Thread(target=pipeliner_main, args=(a.mds, a.ino, stop_attack, stats)),
    ]
    workers = [
        threading.Thread(target=mount_client, args=(clients[0], a.mnt, a.work, stop_clients)),
        threading.Thread(target=cli_client, args=(clients[1], shlex.split(a.depfs), a.mnt, a.work, stop_clients)),
    ]
    for t in threads + workers:
        t.start()
    time.sleep(a.seconds)
    stop_clients.set()
    stuck = []
    for t, c in zip(workers, clients):
        t.join(a.op_max_s + JOIN_GRACE_S)
        if t.is_alive():
            stuck.append(c.name)
    stop_attack.set()
    for t in threads[1:]:
        t.join()
    stop_rss.set()
    threads[0].join()

    bad = 0
    for name in ("mds", "io", "pipeliner"):
        print("attack %-9s %s" % (name, stats.get(name, "?")))
    for c in clients:
        slow = [x for x in c.lat if x > a.op_max_s]
        print("client %-6s %4d ops, p50 %.3f s, p99 %.3f s, max %.3f s, %d over %.0f s, %d failed" % (
            c.name, len(c.lat), pct(c.lat, 50), pct(c.lat, 99), max(c.lat or [0]), len(slow),
            a.op_max_s, len(c.errors)))
        for e in c.errors[:5]:
            print("  error: %s" % e)
        bad += len(slow) + len(c.errors) + (len(c.lat) == 0)
    for name in stuck:
        print("client %s: an operation still had not returned at the end" % name)
        bad += 1
    for name, kb in sorted(peak.items()):
        ok = 0 <= kb < a.rss_max_mb * 1024
        print("rss    %-9s peak %.1f MB (bound %d MB)%s" % (name, kb / 1024.0, a.rss_max_mb,
                                                         "" if ok else "   <- OVER" if kb >= 0 else "   <- DIED"))
        bad += not ok
    print("pipeliner closed by the MDS: %d" % stats.get("pipeliner_closed", 0))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
