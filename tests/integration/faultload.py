#!/usr/bin/env python3
"""faultload.py - workloads for the fault-injection tests (test_fault_*.sh).
Every file is mirrored in a local reference directory; a write counts as
acknowledged once pwrite, fsync and close all succeeded on the mount, and
only then is it applied to the reference.

  faultload.py populate MNT REF --dirs d1,d2 [--files N] [--seed S]
      create N files in each dir (random sizes, random bytes) on the mount
      and in the reference
  faultload.py run MNT REF --seconds T [--seed S] [--write-dirs d1,..]
                   [--read-dirs d1,..] [--eio-ok-dirs d1,..] [--stop-file F]
      until T seconds pass (or F exists): unaligned pwrites of random sizes
      into files of the write dirs (each must succeed), and reads of random
      ranges of files in the read dirs (must equal the reference) and in the
      eio-ok dirs (must equal the reference or fail with EIO: a file with
      more lost units than parity may refuse, never lie)
  faultload.py verify MNT REF [--eio-ok-dirs d1,..] [--lib SO --conf C]
      every file of the reference compared byte for byte with the mount
      (fresh opens: depfs-fuse sets keep_cache=0, so every open drops the
      kernel's cached pages) and, with --lib, through a libdepfs client of
      its own
  faultload.py eio-check MNT REF --lib SO --conf C --path /P --stripe-bytes B
                   --unit-bytes U --ready F
      with more than n-k of /P's servers down: whole-stripe reads EIO, unit
      reads right or EIO, the mount's whole-file read EIO, a write EIO (its
      range and bytes saved in F)
  faultload.py after-failed-write MNT REF --path /P --ready F
      each byte is the old one or the failed write's; the reference takes them
  faultload.py pause-writer --lib SO --conf C --path /P --offset O --bytes B --ready F
      one libdepfs write of B random bytes at O (range and bytes saved in F
      first), for a writer that DEPFS_TEST_PAUSE stops mid-protocol
  faultload.py race-writer --lib SO --conf C --path /P --bytes B --seconds T --ready F
  faultload.py race-reader --lib SO --conf C --path /P --bytes B --seconds T
      a libdepfs writer rewrites the region [0,B) of /P over and over, each
      8-byte word = (generation << 32 | word index); a second libdepfs client
      reads random ranges meanwhile. Every word read must be a word that was
      written (its index right, its generation <= the last one started): a
      decode that mixed units from before and after a write yields neither.

Exit 0 on success; 1 with a message starting "WRONG" or "FAILED" otherwise."""
import argparse, errno, os, random, struct, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

MAX_FILE = 3 * 1024 * 1024
WRITE_SIZES = [1, 7, 512, 1000, 4096, 4097, 65535, 65536, 100000, 393216, 700001]
READ_SIZES = [1, 100, 4096, 65536, 200000, 1 << 20, 3 << 20]


def csv(s):
    return [x for x in (s or "").split(",") if x]


def files_in(ref, dirs):
    out = []
    for d in dirs:
        for name in sorted(os.listdir(os.path.join(ref, d))):
            out.append(os.path.join(d, name))
    return out


def mount_pwrite(path, off, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        n = os.pwrite(fd, data, off)
        if n != len(data):
            raise SystemExit(f"FAILED: short write {n} of {len(data)} at {off} in {path}")
        os.fsync(fd)
    finally:
        os.close(fd)


def mount_pread(path, off, n):
    fd = os.open(path, os.O_RDONLY)
    try:
        out = []
        while n > 0:
            b = os.pread(fd, n, off)
            if not b:
                break
            out.append(b); off += len(b); n -= len(b)
        return b"".join(out)
    finally:
        os.close(fd)


def ref_pwrite(path, off, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, data, off)
    finally:
        os.close(fd)


def first_diff(a, b):
    for i in range(min(len(a), len(b))):
        if a[i] != b[i]:
            return i
    return min(len(a), len(b))


def cmd_populate(a):
    r = random.Random(a.seed)
    for d in csv(a.dirs):
        for i in range(a.files):
            rel = os.path.join(d, f"f{i}")
            size = r.randrange(1, MAX_FILE)
            data = r.randbytes(size)
            mount_pwrite(os.path.join(a.mnt, rel), 0, data)
            ref_pwrite(os.path.join(a.ref, rel), 0, data)
    print(f"populate: {a.files} files in each of {a.dirs}")
    return 0


def check_read(a, rel, off, n, eio_ok):
    want = mount_pread(os.path.join(a.ref, rel), off, n)
    try:
        got = mount_pread(os.path.join(a.mnt, rel), off, n)
    except OSError as e:
        if eio_ok and e.errno == errno.EIO:
            return "eio"
        raise SystemExit(f"FAILED: read {rel} off={off} len={n}: {e}")
    if got != want:
        i = first_diff(got, want)
        raise SystemExit(f"WRONG BYTES: {rel} off={off} len={n}: got {len(got)} bytes, want "
                         f"{len(want)}; first difference at file offset {off + i}")
    return "ok"


def cmd_run(a):
    r = random.Random(a.seed)
    wdirs, rdirs, edirs = csv(a.write_dirs), csv(a.read_dirs), csv(a.eio_ok_dirs)
    wfiles, rfiles, efiles = files_in(a.ref, wdirs), files_in(a.ref, rdirs), files_in(a.ref, edirs)
    stats = {"writes": 0, "reads": 0, "eio": 0}
    end = time.monotonic() + a.seconds
    while time.monotonic() < end and not (a.stop_file and os.path.exists(a.stop_file)):
        if wfiles and r.random() < 0.5:
            rel = r.choice(wfiles)
            off = r.randrange(0, MAX_FILE - 1)
            size = min(r.choice(WRITE_SIZES), MAX_FILE - off)
            data = r.randbytes(size)
            try:
                mount_pwrite(os.path.join(a.mnt, rel), off, data)
            except OSError as e:
                raise SystemExit(f"FAILED: write {rel} off={off} len={size}: {e} "
                                 f"(the file's layout tolerates the servers now down)")
            ref_pwrite(os.path.join(a.ref, rel), off, data)
            stats["writes"] += 1
            continue
        pool = [(f, False) for f in rfiles] + [(f, True) for f in efiles]
        if not pool:
            time.sleep(0.01)
            continue
        rel, eio_ok = r.choice(pool)
        off = r.randrange(0, MAX_FILE)
        res = check_read(a, rel, off, r.choice(READ_SIZES), eio_ok)
        stats["reads"] += 1
        stats["eio"] += res == "eio"
    print(f"run: {stats['writes']} acknowledged writes, {stats['reads']} reads checked "
          f"({stats['eio']} EIO in eio-ok dirs), seed {a.seed}", flush=True)
    return 0


def compare_file(rel, want, read_fn, eio_ok, label):
    try:
        got = read_fn()
    except OSError as e:
        if eio_ok and e.errno == errno.EIO:
            return "eio"
        print(f"FAILED: {label} read of {rel}: {e}")
        return "bad"
    if got != want:
        print(f"WRONG BYTES: {label} {rel}: {len(got)} bytes, want {len(want)}, "
              f"first difference at offset {first_diff(got, want)}")
        return "bad"
    return "ok"


def cmd_verify(a):
    edirs = set(csv(a.eio_ok_dirs))
    lib = None
    if a.lib:
        from depfs_ctypes import Depfs
        lib = Depfs(a.lib, a.conf)
    counts = {"ok": 0, "eio": 0, "bad": 0}
    for dirpath, _dirs, names in os.walk(a.ref):
        for name in sorted(names):
            rel = os.path.relpath(os.path.join(dirpath, name), a.ref)
            eio_ok = rel.split(os.sep)[0] in edirs
            with open(os.path.join(a.ref, rel), "rb") as f:
                want = f.read()
            counts[compare_file(rel, want, lambda: mount_pread(os.path.join(a.mnt, rel), 0, len(want) + 1),
                                eio_ok, "mount")] += 1
            if lib:
                counts[compare_file(rel, want, lambda: lib.read_file("/" + rel), eio_ok, "libdepfs")] += 1
    if lib:
        lib.unmount()
    print(f"verify: {counts['ok']} reads right, {counts['eio']} EIO (allowed), {counts['bad']} wrong or failed")
    return 1 if counts["bad"] else 0


def cmd_eio_check(a):
    """With more than n-k of the file's servers down: every read of a whole
    stripe fails with EIO; reads of single units are right or EIO (some
    must be EIO); the mount's whole-file read fails with EIO; never a wrong
    byte anywhere. Then a write must fail with EIO (recorded in --ready so
    the test can check the bytes later)."""
    from depfs_ctypes import Depfs
    with open(os.path.join(a.ref, a.path.lstrip("/")), "rb") as f:
        want = f.read()
    fs = Depfs(a.lib, a.conf)
    fh = fs.open(a.path, os.O_RDWR)
    counts = {"stripe_eio": 0, "unit_ok": 0, "unit_eio": 0}
    sb, ub = a.stripe_bytes, a.unit_bytes
    for off in range(0, len(want), sb):
        n = min(sb, len(want) - off)
        try:
            got = fs.pread(fh, n, off)
            if n < sb and got == want[off:off + n]:
                continue  # a short last stripe: its few data units may all be alive
            raise SystemExit(f"WRONG: whole-stripe read at {off} ({n} bytes) succeeded with more than n-k "
                             f"servers down (bytes {'right' if got == want[off:off + n] else 'WRONG'})")
        except OSError as e:
            if e.errno != errno.EIO:
                raise SystemExit(f"FAILED: whole-stripe read at {off}: {e} (want EIO)")
            counts["stripe_eio"] += 1
            if counts["stripe_eio"] == 1:
                print(f"eio-check: stripe read at {off}: {e}")
    for off in range(0, len(want), ub):
        n = min(ub, len(want) - off)
        try:
            got = fs.pread(fh, n, off)
        except OSError as e:
            if e.errno != errno.EIO:
                raise SystemExit(f"FAILED: unit read at {off}: {e} (want right bytes or EIO)")
            counts["unit_eio"] += 1
            continue
        if got != want[off:off + n]:
            raise SystemExit(f"WRONG BYTES: unit read at {off} ({n} bytes) returned wrong data")
        counts["unit_ok"] += 1
    if counts["unit_eio"] == 0:
        raise SystemExit("WRONG: no unit read failed, yet more than n-k servers are down")
    try:
        mount_pread(os.path.join(a.mnt, a.path.lstrip("/")), 0, len(want))
        raise SystemExit("WRONG: whole-file read through the mount succeeded")
    except OSError as e:
        if e.errno != errno.EIO:
            raise SystemExit(f"FAILED: whole-file read through the mount: {e} (want EIO)")
    woff, wlen = sb // 3, ub
    data = random.Random(a.seed).randbytes(wlen)
    with open(a.ready, "wb") as f:
        f.write(struct.pack("<QQ", woff, wlen) + data)
    try:
        fs.pwrite(fh, data, woff)
        fs.fsync(fh)
        raise SystemExit(f"WRONG: a write at {woff} ({wlen} bytes) succeeded with more than n-k servers down")
    except OSError as e:
        if e.errno != errno.EIO:
            raise SystemExit(f"FAILED: write with more than n-k servers down: {e} (want EIO)")
        print(f"eio-check: write at {woff}: {e}")
    try:
        fs.close(fh)
    except OSError:
        pass
    fs.unmount()
    print(f"eio-check {a.path}: {counts['stripe_eio']} whole-stripe reads EIO, unit reads "
          f"{counts['unit_ok']} right and {counts['unit_eio']} EIO, mount read EIO, write EIO")
    return 0


def cmd_after_failed_write(a):
    """After the servers return: each byte of the file is the reference's or,
    inside the failed write's range, the failed write's (never anything else).
    Then the reference takes the file's bytes (they are what it now holds)."""
    with open(a.ready, "rb") as f:
        rec = f.read()
    woff, wlen = struct.unpack_from("<QQ", rec)
    new = rec[16:16 + wlen]
    refp = os.path.join(a.ref, a.path.lstrip("/"))
    with open(refp, "rb") as f:
        want = f.read()
    got = mount_pread(os.path.join(a.mnt, a.path.lstrip("/")), 0, len(want) + wlen + 1)
    if len(got) != len(want):
        raise SystemExit(f"WRONG: size {len(got)} after the failed write, want {len(want)}")
    took = 0
    for i in range(len(want)):
        if got[i] == want[i]:
            continue
        if woff <= i < woff + wlen and got[i] == new[i - woff]:
            took += 1
            continue
        raise SystemExit(f"WRONG BYTES: offset {i} is neither the old byte nor the failed write's")
    with open(refp, "wb") as f:
        f.write(got)
    print(f"after-failed-write: {took} bytes of the failed write are visible, none wrong")
    return 0


def cmd_pause_writer(a):
    """One unaligned partial-stripe write through libdepfs, for a writer that
    DEPFS_TEST_PAUSE stops mid-protocol: the range and bytes go to --ready
    first (for after-failed-write), then write + flush. Reaching the end
    means the pause point never came."""
    from depfs_ctypes import Depfs
    fs = Depfs(a.lib, a.conf)
    fh = fs.open(a.path, os.O_RDWR)
    data = random.Random(a.seed).randbytes(a.bytes)
    with open(a.ready, "wb") as f:
        f.write(struct.pack("<QQ", a.offset, a.bytes) + data)
    fs.pwrite(fh, data, a.offset)
    fs.flush(fh)
    print("pause-writer: the write completed: the pause point was never reached", flush=True)
    return 3


WORD = struct.Struct("<Q")


def pattern(gen, nbytes):
    words = nbytes // 8
    return b"".join(WORD.pack((gen << 32) | i) for i in range(words))


def cmd_race_writer(a):
    from depfs_ctypes import Depfs
    fs = Depfs(a.lib, a.conf)
    fh = fs.open(a.path, os.O_RDWR | os.O_CREAT)
    gen, end = 0, None
    while end is None or time.monotonic() < end:
        with open(a.ready + ".gen.tmp", "w") as f:
            f.write(str(gen))  # the highest generation a reader may see
        os.replace(a.ready + ".gen.tmp", a.ready + ".gen")
        fs.pwrite(fh, pattern(gen, a.bytes), 0)
        fs.flush(fh)
        if end is None:
            open(a.ready, "w").close()
            end = time.monotonic() + a.seconds
        gen += 1
    fs.close(fh)
    fs.unmount()
    print(f"race-writer: {gen} generations of {a.bytes} bytes written", flush=True)
    return 0


def cmd_race_reader(a):
    from depfs_ctypes import Depfs
    fs = Depfs(a.lib, a.conf)
    fh = fs.open(a.path, os.O_RDONLY)
    r = random.Random(a.seed)
    reads = mixed = 0
    end = time.monotonic() + a.seconds
    words = a.bytes // 8
    while time.monotonic() < end:
        w0 = r.randrange(0, words)
        nw = r.randrange(1, words - w0 + 1)
        got = fs.pread(fh, nw * 8, w0 * 8)
        with open(a.ready + ".gen") as f:
            newest = int(f.read())  # written before each generation starts
        if len(got) != nw * 8:
            raise SystemExit(f"FAILED: short read {len(got)} of {nw * 8} at {w0 * 8}")
        gens = set()
        for i in range(nw):
            (v,) = WORD.unpack_from(got, i * 8)
            if v & 0xffffffff != w0 + i or (v >> 32) > newest:
                raise SystemExit(f"WRONG BYTES: word at offset {(w0 + i) * 8} reads {v:#018x}: "
                                 f"not a word any write put there (index {w0 + i}, generation <= {newest})")
            gens.add(v >> 32)
        reads += 1
        mixed += len(gens) > 1
    fs.close(fh)
    fs.unmount()
    print(f"race-reader: {reads} reads, every word one that a write put there "
          f"({mixed} reads spanned stripes of different generations)", flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["populate", "run", "verify", "race-writer", "race-reader",
                                    "eio-check", "after-failed-write", "pause-writer"])
    ap.add_argument("mnt", nargs="?"); ap.add_argument("ref", nargs="?")
    ap.add_argument("--dirs"); ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--write-dirs"); ap.add_argument("--read-dirs"); ap.add_argument("--eio-ok-dirs")
    ap.add_argument("--stop-file")
    ap.add_argument("--lib"); ap.add_argument("--conf")
    ap.add_argument("--path"); ap.add_argument("--bytes", type=int, default=8 * 393216)
    ap.add_argument("--ready")
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--stripe-bytes", type=int); ap.add_argument("--unit-bytes", type=int)
    a = ap.parse_args()
    fn = {"populate": cmd_populate, "run": cmd_run, "verify": cmd_verify,
          "race-writer": cmd_race_writer, "race-reader": cmd_race_reader,
          "eio-check": cmd_eio_check, "after-failed-write": cmd_after_failed_write,
          "pause-writer": cmd_pause_writer}[a.cmd]
    return fn(a)


if __name__ == "__main__":
    sys.exit(main())
