#!/usr/bin/env python3
"""tornload.py - the writer and the checks of test_fault_interrupted_write.sh:
unaligned partial-stripe writes on the mount that a fault interrupts, and
what may be read afterwards.

  tornload.py write FILE REF --pending P [--mode overwrite|extend] [--seed S]
                    [--min B] [--max B] [--max-writes N] [--stop F]
      until a call fails (or F exists, or N writes): one unaligned pwrite of
      MIN..MAX random bytes (overwrite: inside the file; extend: starting a
      little before its end, so the old last stripe is partly rewritten and
      the file grows), then fsync. Before each write its range and bytes go
      to P (atomically); once fsync returned 0 they go to REF (the
      acknowledged bytes) and P is removed. So after a failure P names the
      one write whose outcome is unknown. Exit 0; prints how the writer
      stopped (the errno of the failing call, or "stopped").
  tornload.py check GOT REF [--pending P] [--what TEXT] [--adopt]
      GOT (a copy read from DePFS) against the acknowledged bytes: outside
      P's range every byte must be REF's (and the size REF's, or P's end if
      P extended the file); inside it, each byte the old one (zero past
      REF's end) or P's. --adopt then makes REF what GOT holds and removes
      P (a later check is exact). Exit 1 with "LOST ACKNOWLEDGED BYTES" /
      "WRONG BYTES" lines naming stripes otherwise.
  tornload.py pick N K SU SERVERS STRIPE [--pending P]
      two servers holding data units of STRIPE (of a file with layout N@K@SU
      and server list SERVERS, comma separated): units with acknowledged
      bytes first, so a read with those two down decodes them from parity.
"""
import argparse, errno, os, random, struct, sys, time

UNIT = 65536


def load_pending(path):
    if not path or not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        rec = f.read()
    off, n = struct.unpack_from("<QQ", rec)
    return off, n, rec[16:16 + n]


def save_pending(path, off, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<QQ", off, len(data)) + data)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)


def cmd_write(a):
    r = random.Random(a.seed)
    size = os.path.getsize(a.ref)
    fd = os.open(a.file, os.O_WRONLY)
    t0 = time.monotonic()
    done = 0
    why = "stopped"
    try:
        while not (a.stop and os.path.exists(a.stop)) and done < a.max_writes:
            n = r.randrange(a.min, a.max + 1) | 1
            if a.mode == "extend":
                off = max(0, size - r.randrange(1, 5 * UNIT)) | 1
            else:
                off = r.randrange(1, max(2, size - n)) | 1
            data = r.randbytes(n)
            save_pending(a.pending, off, data)
            phase = "write"
            try:
                got = os.pwrite(fd, data, off)
                if got != n:
                    why = f"short write {got} of {n}"
                    break
                phase = "fsync"
                os.fsync(fd)
            except OSError as e:
                why = (f"{errno.errorcode.get(e.errno, e.errno)} ({e.strerror}) on the "
                       f"{phase} of [{off},{off + n})")
                break
            with open(a.ref, "r+b") as f:
                f.seek(off)
                f.write(data)
            size = max(size, off + n)
            os.remove(a.pending)
            done += 1
    finally:
        try:
            os.close(fd)
        except OSError as e:
            why += f"; close: {errno.errorcode.get(e.errno, e.errno)}"
    p = load_pending(a.pending)
    print(f"writer: {done} writes acknowledged in {int((time.monotonic() - t0) * 1000)} ms, then {why}"
          + (f"; pending [{p[0]},{p[0] + p[1]})" if p else ""), flush=True)
    return 0


def cmd_check(a):
    with open(a.got, "rb") as f:
        got = f.read()
    with open(a.ref, "rb") as f:
        want = f.read()
    p = load_pending(a.pending)
    off, n, new = p if p else (0, 0, b"")
    ok_sizes = {len(want)} | ({max(len(want), off + n)} if p else set())
    lost, neither, stripes = 0, 0, {}
    size_bad = len(got) not in ok_sizes
    for i in range(max(len(got), len(want))):
        g = got[i] if i < len(got) else None
        w = want[i] if i < len(want) else 0
        if off <= i < off + n:
            if g is None or g == w or g == new[i - off]:
                continue
            neither += 1
        else:
            if i >= len(want) or g == w:
                continue
            lost += 1
        s = i // (a.stripe_bytes)
        stripes[s] = stripes.get(s, 0) + 1
    what = a.what or a.got
    pend = f"pending write [{off},{off + n})" if p else "no pending write"
    if size_bad:
        print(f"WRONG SIZE: {what}: {len(got)} bytes, want one of {sorted(ok_sizes)} ({pend})")
    if lost:
        print(f"LOST ACKNOWLEDGED BYTES: {what}: {lost} fsync-acknowledged bytes differ, outside the "
              f"{pend}; bad bytes per stripe: " + " ".join(f"s{s}:{c}" for s, c in sorted(stripes.items())[:16]))
    if neither:
        print(f"WRONG BYTES: {what}: {neither} bytes inside the {pend} are neither old nor new")
    if size_bad or lost or neither:
        return 1
    print(f"check: {what}: every acknowledged byte right ({len(got)} bytes, {pend})")
    if a.adopt:
        with open(a.ref, "wb") as f:
            f.write(got)
        if p:
            os.remove(a.pending)
    return 0


def cmd_pick(a):
    servers = [int(x) for x in a.servers.split(",")]
    n, k, su, s = a.n, a.k, a.su, a.stripe
    p = load_pending(a.pending)
    units = []
    for u in range(k):
        lo = (s * k + u) * su
        inside = p is not None and p[0] <= lo and lo + su <= p[0] + p[1]
        units.append((inside, u))
    units.sort()
    print(" ".join(str(servers[(u + s) % n]) for _, u in units[:2]))
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("file"); w.add_argument("ref")
    w.add_argument("--pending", required=True)
    w.add_argument("--mode", choices=("overwrite", "extend"), default="overwrite")
    w.add_argument("--seed", type=int, default=1)
    w.add_argument("--min", type=int, default=100000)
    w.add_argument("--max", type=int, default=3 << 20)
    w.add_argument("--max-writes", type=int, default=1 << 30)
    w.add_argument("--stop")
    c = sub.add_parser("check")
    c.add_argument("got"); c.add_argument("ref")
    c.add_argument("--pending")
    c.add_argument("--what")
    c.add_argument("--stripe-bytes", type=int, default=6 * UNIT)
    c.add_argument("--adopt", action="store_true")
    p = sub.add_parser("pick")
    for x in ("n", "k", "su"):
        p.add_argument(x, type=int)
    p.add_argument("servers")
    p.add_argument("stripe", type=int)
    p.add_argument("--pending")
    a = ap.parse_args()
    return {"write": cmd_write, "check": cmd_check, "pick": cmd_pick}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
