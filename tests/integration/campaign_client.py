#!/usr/bin/env python3
"""campaign_client.py - one workload client of the fault campaign
(campaign.py starts several: two on FUSE mounts, one or two on libdepfs).

  campaign_client.py --slot N --journal F --seed S --stop-file P
                     (--mnt DIR | --lib SO --conf C) --files FILES.json

Until the stop file exists it runs a seeded sequence of operations:
sequential streams and unaligned partial-stripe writes into its own files,
writes into its own slices of the shared files (campaign_model.owner), fsync
at random points, truncates, renames, creates, removes and `depfs migrate`
of its own files to another stripe unit (same N@K: the verify's degraded
reads stay within each file's tolerance); then it fsyncs and closes
everything. Each operation is journaled (campaign_model's format)
before it is issued and its result after, so a SIGKILL at any moment leaves a
journal from which the model knows exactly what may and must be there.
Errors are expected (faults are being injected): they are journaled, the
file handle is closed and reopened later, never retried blindly."""
import argparse
import ctypes
import errno
import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from campaign_model import NSLOTS, data_for, owner  # noqa: E402

MAX_PRIVATE = 5             # live private files per client
STREAM_MAX = 12 << 20       # bytes of one sequential stream
STREAM_END = 16 << 20       # streams stay below this offset
PRIVATE_MAX = 4 << 20       # where partial writes and truncates land
MIGRATE_SUS = ["32k", "64k", "128k"]  # a migrate's new stripe unit
MIGRATE_TIMEOUT_S = 120     # one `depfs migrate` (it retries a busy file itself)


class MountFs:
    """The file operations on a FUSE mount."""
    def __init__(self, mnt):
        self.mnt = mnt

    def _p(self, path):
        return self.mnt + path

    def create(self, path):
        return os.open(self._p(path), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)

    def open(self, path):
        return os.open(self._p(path), os.O_RDWR)

    def pwrite(self, fh, data, off):
        while data:
            n = os.pwrite(fh, data, off)
            data, off = data[n:], off + n

    def fsync(self, fh):
        os.fsync(fh)

    def truncate(self, fh, size):
        os.ftruncate(fh, size)

    def close(self, fh):
        os.close(fh)

    def rename(self, a, b):
        os.rename(self._p(a), self._p(b))

    def migrate_argv(self, depfs, path, lay):
        return [depfs, "migrate", "-r", lay, self._p(path)]

    def unlink(self, path):
        os.unlink(self._p(path))


class LibFs:
    """The same operations through libdepfs (depfs_ctypes), a client of its own."""
    def __init__(self, lib, conf):
        from depfs_ctypes import Depfs
        self.conf = conf
        self.d = d = Depfs(lib, conf)
        L, vp, u64 = d.lib, ctypes.c_void_p, ctypes.c_uint64
        L.depfs_ftruncate.argtypes = [vp, u64]
        L.depfs_unlink_path.argtypes = [vp, ctypes.c_char_p]
        L.depfs_resolve.argtypes = [vp, ctypes.c_char_p, ctypes.POINTER(u64), vp]
        L.depfs_rename.argtypes = [vp, u64, ctypes.c_char_p, u64, ctypes.c_char_p, ctypes.c_uint]

    def create(self, path):
        return self.d.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL)

    def open(self, path):
        return self.d.open(path, os.O_RDWR)

    def pwrite(self, fh, data, off):
        self.d.pwrite(fh, data, off)

    def fsync(self, fh):
        self.d.fsync(fh)

    def truncate(self, fh, size):
        self.d._check(self.d.lib.depfs_ftruncate(fh, size), "depfs_ftruncate")

    def close(self, fh):
        self.d.close(fh)

    def _ino(self, path):
        ino, st = ctypes.c_uint64(), ctypes.create_string_buffer(256)
        self.d._check(self.d.lib.depfs_resolve(self.d.fs, path.encode(), ctypes.byref(ino), st),
                      f"depfs_resolve {path}")
        return ino.value

    def rename(self, a, b):
        da, na = a.rsplit("/", 1)
        db, nb = b.rsplit("/", 1)
        self.d._check(self.d.lib.depfs_rename(self.d.fs, self._ino(da or "/"), na.encode(),
                                              self._ino(db or "/"), nb.encode(), 0), "depfs_rename")

    def migrate_argv(self, depfs, path, lay):
        return [depfs, "--config", self.conf, "migrate", "-r", lay, path]

    def unlink(self, path):
        self.d._check(self.d.lib.depfs_unlink_path(self.d.fs, path.encode()), "depfs_unlink")


class Client:
    def __init__(self, a):
        self.a = a
        self.slot = a.slot
        self.r = random.Random(f"{a.seed}/client/{a.slot}")
        self.fs = MountFs(a.mnt) if a.mnt else LibFs(a.lib, a.conf)
        self.jfd = os.open(a.journal, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        with open(a.files) as f:
            spec = json.load(f)
        self.shared = spec["shared"]    # [{fid, path, layout, width, max}]
        self.dirs = spec["dirs"]        # {layout: "/L8_6", ...}
        self.stream_layouts = spec["stream_layouts"]
        self.private = {}               # fid -> {"path", "layout", "size"}: files this client may use
        self.fh = {}                    # fid -> open handle
        self.dirty = set()              # fids with writes/truncates since their last fsync
        self.nfile = 0
        self.ops = self.errors = 0
        self.stop_file = a.stop_file
        self.depfs = a.depfs

    # ---- journal
    def j(self, rec):
        os.write(self.jfd, (json.dumps(rec, separators=(",", ":")) + "\n").encode())

    def do(self, rec, fn):
        """Journals the intent, runs fn, journals the result. True if it worked."""
        rec["ts"] = round(time.time(), 3)
        self.j(rec)
        try:
            fn()
        except OSError as e:
            self.j({"t": "r", "e": e.errno or errno.EIO, "m": str(e)[:200]})
            self.errors += 1
            return False
        self.j({"t": "r", "ok": 1})
        self.ops += 1
        return True

    def stopping(self):
        return os.path.exists(self.stop_file)

    def nap(self, lo_ms, hi_ms):
        time.sleep(self.r.uniform(lo_ms, hi_ms) / 1000)

    # ---- handles
    def path_of(self, fid):
        if fid in self.private:
            return self.private[fid]["path"]
        return next(s["path"] for s in self.shared if s["fid"] == fid)

    def handle(self, fid):
        if fid in self.fh:
            return self.fh[fid]
        box = []
        if self.do({"t": "open", "f": fid}, lambda: box.append(self.fs.open(self.path_of(fid)))):
            self.fh[fid] = box[0]
            return box[0]
        return None

    def fail_handle(self, fid):
        """After an error: the handle's pending ops are uncertain (close says so)."""
        fh = self.fh.pop(fid, None)
        self.dirty.discard(fid)
        if fh is not None:
            self.do({"t": "close", "f": fid}, lambda: self.fs.close(fh))
        time.sleep(0.1)

    def fsync(self, fid):
        fh = self.fh.get(fid)
        if fh is None:
            return True
        if self.do({"t": "fsync", "f": fid}, lambda: self.fs.fsync(fh)):
            self.dirty.discard(fid)
            return True
        self.fail_handle(fid)
        return False

    def close(self, fid):
        """fsync, then close: close after fsync acknowledges nothing new."""
        if fid not in self.fh:
            return True
        ok = self.fsync(fid)
        fh = self.fh.pop(fid, None)
        if fh is not None:
            ok = self.do({"t": "close", "f": fid}, lambda: self.fs.close(fh)) and ok
        return ok

    def write(self, fid, off, n):
        fh = self.handle(fid)
        if fh is None:
            return False
        ds = self.r.getrandbits(62)
        data = data_for(ds, n)
        if self.do({"t": "w", "f": fid, "o": off, "n": n, "d": ds}, lambda: self.fs.pwrite(fh, data, off)):
            self.dirty.add(fid)
            if fid in self.private:
                self.private[fid]["size"] = max(self.private[fid]["size"], off + n)
            return True
        self.fail_handle(fid)
        return False

    def maybe_fsync(self, fid, p):
        if self.r.random() < p:
            return self.fsync(fid)
        return True

    # ---- operations
    def new_file(self, layout):
        self.nfile += 1
        fid = f"s{self.slot}f{self.nfile}"
        path = f"{self.dirs[layout]}/{fid}.g0"
        box = []
        if not self.do({"t": "create", "f": fid, "p": path, "l": layout},
                       lambda: box.append(self.fs.create(path))):
            return None  # never used again: it may or may not exist
        self.private[fid] = {"path": path, "layout": layout, "size": 0, "gen": 0}
        self.fh[fid] = box[0]
        return fid

    def op_stream(self):
        """Sequential writes into a private file (a new one, an append to one,
        or a rewrite from 0), fsync every few MiB and at the end: the pattern
        of the issue's reproduction (write-behind sends multi-stripe lock
        rounds), which a long SIGSTOP must not corrupt."""
        layout = self.r.choice(self.stream_layouts)
        fids = [f for f, p in self.private.items() if p["layout"] == layout]
        how = self.r.random()
        if fids and (how < 0.3 or len(self.private) >= MAX_PRIVATE):
            fid = self.r.choice(sorted(fids))
            off = self.private[fid]["size"] if how < 0.2 else 0
            if off >= STREAM_END:
                off = 0
        else:
            if len(self.private) >= MAX_PRIVATE:
                self.op_remove()
            fid = self.new_file(layout)
            if fid is None:
                return
            off = 0
        total = min(self.r.randrange(2 << 20, STREAM_MAX), STREAM_END - off)
        chunk = self.r.choice([256 << 10, 256 << 10, 256 << 10, 131072 + 1000, 65536 * 6, 1 << 20])
        every = self.r.choice([2 << 20, 4 << 20, 6 << 20, 10 << 20])
        end, since = off + total, 0
        while off < end and not self.stopping():
            n = min(chunk, end - off)
            if not self.write(fid, off, n):
                return
            off += n
            since += n
            if since >= every:
                since = 0
                if not self.fsync(fid):
                    return
            self.nap(10, 50)
        self.fsync(fid)

    def op_shared(self):
        """Writes into this slot's slices of a shared file: unaligned pieces,
        whole slices, or a run of this slot's consecutive slices."""
        s = self.r.choice(self.shared)
        w, top = s["width"], s["max"]
        nslices = top // w
        mine = [j for j in range(nslices) if owner(j * w, w) == self.slot]
        if not mine:
            return
        for _ in range(self.r.randrange(1, 7)):
            j = self.r.choice(mine)
            a = j * w
            how = self.r.random()
            if how < 0.5:  # an unaligned piece of the slice
                off = a + self.r.randrange(0, w)
                n = self.r.randrange(1, a + w - off + 1)
            else:          # the whole slice
                off, n = a, w
            if not self.write(s["fid"], off, n):
                return
            self.nap(0, 20)
        self.maybe_fsync(s["fid"], 0.5)

    def pick_private(self):
        return self.r.choice(sorted(self.private)) if self.private else None

    def op_partial(self):
        fid = self.pick_private()
        if fid is None:
            return self.op_stream()
        for _ in range(self.r.randrange(1, 6)):
            off = self.r.randrange(0, PRIVATE_MAX)
            n = self.r.choice([1, 17, 512, 4095, 4096, 65537, 100000, 200003, 393216])
            if not self.write(fid, off, n):
                return
        self.maybe_fsync(fid, 0.6)

    def op_truncate(self):
        fid = self.pick_private()
        if fid is None:
            return
        fh = self.handle(fid)
        if fh is None:
            return
        cur = self.private[fid]["size"]
        size = self.r.choice([0, self.r.randrange(0, cur + 1), cur + self.r.randrange(1, 300000)])
        if self.do({"t": "trunc", "f": fid, "s": size}, lambda: self.fs.truncate(fh, size)):
            self.dirty.add(fid)
            self.private[fid]["size"] = size
            self.maybe_fsync(fid, 0.7)
        else:
            self.fail_handle(fid)

    def op_rename(self):
        fid = self.pick_private()
        if fid is None:
            return
        self.close(fid)
        p = self.private[fid]
        p["gen"] += 1
        d = self.dirs[self.r.choice(sorted(self.dirs))]
        new = f"{d}/{fid}.g{p['gen']}"
        if self.do({"t": "rename", "f": fid, "p": new}, lambda: self.fs.rename(p["path"], new)):
            p["path"] = new
        else:
            del self.private[fid]  # where it is now is uncertain: never touched again

    def op_remove(self):
        fid = self.pick_private()
        if fid is None:
            return
        self.close(fid)
        path = self.private.pop(fid)["path"]
        self.do({"t": "unlink", "f": fid}, lambda: self.fs.unlink(path))

    def op_migrate(self):
        """`depfs migrate` of a private file, closed first (all of it
        acknowledged), to another stripe unit: its bytes must not change,
        whether the migrate succeeds, fails (busy, a fault) or is cut off."""
        fid = self.pick_private()
        if fid is None or not self.depfs:
            return
        if not self.close(fid):
            return
        p = self.private[fid]
        lay = f"{p['layout']}@{self.r.choice(MIGRATE_SUS)}"
        argv = self.fs.migrate_argv(self.depfs, p["path"], lay)

        def run():
            try:
                cp = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    timeout=MIGRATE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise OSError(errno.ETIMEDOUT, f"depfs migrate of {p['path']} timed out")
            if cp.returncode != 0:
                raise OSError(errno.EIO, cp.stderr.decode(errors="replace").strip()[-200:])
        self.do({"t": "migrate", "f": fid, "l": lay}, run)

    def op_fsync(self):
        if self.dirty:
            self.fsync(self.r.choice(sorted(self.dirty)))

    def op_close(self):
        if self.fh:
            self.close(self.r.choice(sorted(self.fh)))

    def run(self):
        ops = [(self.op_stream, 25), (self.op_shared, 30), (self.op_partial, 15), (self.op_truncate, 5),
               (self.op_rename, 5), (self.op_remove, 1), (self.op_fsync, 10), (self.op_close, 7),
               (self.op_migrate, 2)]
        fns, weights = zip(*ops)
        t0 = time.monotonic()
        while not self.stopping():
            self.r.choices(fns, weights)[0]()
            self.nap(0, 30)
        for fid in sorted(self.fh):
            self.close(fid)
        os.close(self.jfd)
        print(f"client slot {self.slot}: {self.ops} operations done, {self.errors} failed, "
              f"{time.monotonic() - t0:.0f} s", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--slot", type=int, required=True)
    ap.add_argument("--journal", required=True)
    ap.add_argument("--seed", required=True)
    ap.add_argument("--stop-file", required=True)
    ap.add_argument("--files", required=True)
    ap.add_argument("--mnt")
    ap.add_argument("--lib")
    ap.add_argument("--conf")
    ap.add_argument("--depfs", help="the depfs CLI, for migrates (none: no migrates)")
    a = ap.parse_args()
    if a.slot >= NSLOTS:
        sys.exit(f"slot {a.slot} >= {NSLOTS}")
    Client(a).run()


if __name__ == "__main__":
    main()
