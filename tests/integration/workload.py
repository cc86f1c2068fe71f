#!/usr/bin/env python3
"""workload.py - a randomized file-system workload run side by side on a
DePFS mount and on a local directory (the reference), comparing every result.

  workload.py run  MOUNT_ROOT LOCAL_ROOT --seed S --ops N [--dirs d1,d2,...]
  workload.py verify MOUNT_ROOT LOCAL_ROOT

`run` applies the same random operations (namespace changes and unaligned
reads/writes of random sizes and offsets) to both trees and fails on the
first difference in outcome (bytes read, errno, stat fields). `verify`
walks both trees and compares names, types, sizes, modes, symlink targets
and every byte. Exit 0 on agreement; 1 with a description otherwise."""
import argparse, errno, os, random, stat, sys

MAX_FILE = 3 * 1024 * 1024

def outcome(fn, *a):
    try:
        return ("ok", fn(*a))
    except OSError as e:
        return ("err", e.errno)

class Pair:
    def __init__(self, mnt, ref):
        self.roots = (mnt, ref)
    def both(self, fn):
        res = [outcome(fn, r) for r in self.roots]
        if res[0] != res[1]:
            raise SystemExit(f"MISMATCH: mount {res[0]!r} vs local {res[1]!r}")
        return res[0]

def pwrite_file(path, off, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        n = os.pwrite(fd, data, off)
    finally:
        os.close(fd)
    return n

def pread_file(path, off, n):
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, n, off)
    finally:
        os.close(fd)

def stat_view(path):
    st = os.lstat(path)
    v = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode))
    if not stat.S_ISDIR(st.st_mode):
        v += (st.st_nlink,)  # directory link counts differ between local file systems
    if stat.S_ISREG(st.st_mode):
        v += (st.st_size,)
    return v

class Workload:
    def __init__(self, pair, rng, dirs):
        self.p, self.r, self.dirs = pair, rng, dirs
        self.files, self.subdirs = [], list(dirs)
        self.counter = 0

    def name(self):
        self.counter += 1
        return f"n{self.counter}"

    def pick_file(self):
        return self.r.choice(self.files) if self.files else None

    def op_create(self):
        rel = os.path.join(self.r.choice(self.subdirs), self.name())
        self.p.both(lambda root: os.close(os.open(os.path.join(root, rel), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)))
        self.files.append(rel)

    def op_write(self):
        rel = self.pick_file()
        if rel is None:
            return self.op_create()
        off = self.r.randrange(0, MAX_FILE - 1)
        size = self.r.choice([1, 7, 512, 1000, 4096, 4097, 65535, 65536, 100000, 393216, 700001])
        size = min(size, MAX_FILE - off)
        data = self.r.randbytes(size)
        self.p.both(lambda root: pwrite_file(os.path.join(root, rel), off, data))

    def op_read(self):
        rel = self.pick_file()
        if rel is None:
            return
        off = self.r.randrange(0, MAX_FILE)
        n = self.r.choice([1, 100, 4096, 65536, 200000, 1 << 20])
        self.p.both(lambda root: pread_file(os.path.join(root, rel), off, n))

    def op_truncate(self):
        rel = self.pick_file()
        if rel is None:
            return
        size = self.r.randrange(0, MAX_FILE)
        self.p.both(lambda root: os.truncate(os.path.join(root, rel), size))

    def op_mkdir(self):
        rel = os.path.join(self.r.choice(self.subdirs), self.name())
        self.p.both(lambda root: os.mkdir(os.path.join(root, rel), 0o755))
        self.subdirs.append(rel)

    def op_rename(self):
        rel = self.pick_file()
        if rel is None:
            return
        dst = os.path.join(self.r.choice(self.subdirs), self.name())
        if self.r.random() < 0.3 and len(self.files) > 1:
            dst = self.r.choice(self.files)  # rename over an existing file
        if dst == rel:
            return
        self.p.both(lambda root: os.rename(os.path.join(root, rel), os.path.join(root, dst)))
        self.files.remove(rel)
        if dst not in self.files:
            self.files.append(dst)

    def op_unlink(self):
        rel = self.pick_file()
        if rel is None:
            return
        self.p.both(lambda root: os.unlink(os.path.join(root, rel)))
        self.files.remove(rel)

    def op_link(self):
        rel = self.pick_file()
        if rel is None:
            return
        dst = os.path.join(self.r.choice(self.subdirs), self.name())
        self.p.both(lambda root: os.link(os.path.join(root, rel), os.path.join(root, dst)))
        self.files.append(dst)

    def op_symlink(self):
        dst = os.path.join(self.r.choice(self.subdirs), self.name())
        target = "../" * self.r.randrange(0, 3) + self.name()
        self.p.both(lambda root: os.symlink(target, os.path.join(root, dst)))
        self.p.both(lambda root: os.readlink(os.path.join(root, dst)))

    def op_chmod(self):
        rel = self.pick_file()
        if rel is None:
            return
        mode = self.r.choice([0o600, 0o644, 0o755, 0o640])
        self.p.both(lambda root: os.chmod(os.path.join(root, rel), mode))

    def op_stat(self):
        rel = self.pick_file()
        if rel is None:
            return
        self.p.both(lambda root: stat_view(os.path.join(root, rel)))

    def op_listdir(self):
        d = self.r.choice(self.subdirs)
        self.p.both(lambda root: sorted(os.listdir(os.path.join(root, d))))

    def run(self, nops):
        ops = [(self.op_write, 30), (self.op_read, 25), (self.op_create, 8), (self.op_truncate, 6),
               (self.op_mkdir, 3), (self.op_rename, 5), (self.op_unlink, 4), (self.op_link, 3),
               (self.op_symlink, 2), (self.op_chmod, 3), (self.op_stat, 8), (self.op_listdir, 3)]
        funcs, weights = zip(*ops)
        for i in range(nops):
            f = self.r.choices(funcs, weights)[0]
            f()
        return 0

def verify(mnt, ref):
    bad = 0
    for dirpath, dirnames, filenames in os.walk(ref):
        rel = os.path.relpath(dirpath, ref)
        m = os.path.join(mnt, rel)
        want = sorted(dirnames + filenames)
        got = sorted(os.listdir(m))
        if want != got:
            print(f"DIFF dir {rel}: local {want} mount {got}"); bad += 1; continue
        for name in want:
            lp, mp = os.path.join(dirpath, name), os.path.join(m, name)
            if stat_view(lp) != stat_view(mp):
                print(f"DIFF stat {rel}/{name}: local {stat_view(lp)} mount {stat_view(mp)}"); bad += 1; continue
            if os.path.islink(lp):
                if os.readlink(lp) != os.readlink(mp):
                    print(f"DIFF link {rel}/{name}"); bad += 1
            elif os.path.isfile(lp):
                with open(lp, "rb") as a, open(mp, "rb") as b:
                    while True:
                        x, y = a.read(1 << 20), b.read(1 << 20)
                        if x != y:
                            print(f"DIFF bytes {rel}/{name} near offset {a.tell()}"); bad += 1; break
                        if not x:
                            break
    print(f"verify: {'OK' if bad == 0 else f'{bad} differences'}")
    return 1 if bad else 0

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["run", "verify"])
    ap.add_argument("mnt"); ap.add_argument("ref")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ops", type=int, default=500)
    ap.add_argument("--dirs", default=".")
    a = ap.parse_args()
    if a.cmd == "verify":
        return verify(a.mnt, a.ref)
    w = Workload(Pair(a.mnt, a.ref), random.Random(a.seed), a.dirs.split(","))
    rc = w.run(a.ops)
    print(f"workload: {a.ops} operations agreed (seed {a.seed})")
    return rc

if __name__ == "__main__":
    sys.exit(main())
