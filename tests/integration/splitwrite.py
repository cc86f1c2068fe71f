#!/usr/bin/env python3
"""splitwrite.py - a write whose plan goes stale half-way (campaign seed 14:
fsync-acknowledged bytes lost). Drives libdepfs (test build) in one
process: an admin client plays depfs-recovery, a writer thread writes.

    splitwrite.py --lib SO --conf C --path /P --ref REF --servers S0,S1,S2,S3

On a 4@2@4k file whose stripe 0 has unit u on server Su (the caller killed
S1, which holds data unit 1):
  1. the MDS marks S1 and S3 down (pushed to every server);
  2. a writer plans a write of unit 0 with S1 and S3 down (so it decodes
     unit 1 from S0 and S2 and writes S0 and S2), takes its locks and stops
     there (DEPFS_TEST_PAUSE=after_lock, DEPFS_TEST_PAUSE_MS);
  3. meanwhile S3 comes back: the MDS says UP at a new epoch, and the push
     has reached S0 but not yet S2;
  4. the writer goes on: S2 stores its unit at the old epoch, S0 refuses
     it (planned with S3 down): the stripe is torn.
Then the new epoch reaches every server and S3, UP with an old unit under
the survivors' dirty records, is rejoined (what depfs-recovery does with a
server that is up with dirty records): the writer acknowledges only once
that happened (before, a reader could take S3's old unit for the new one).
A reader that decodes unit 1 (S1 is still down) must get the bytes written
before: a writer that released the torn stripe and redid the round decoded
unit 1 from a new and an old unit, and stored parity for garbage.
The model (REF with the write applied) is saved to REF. Exit 0 when the
degraded read is exact; 1 with "WRONG"/"FAILED" otherwise."""
import argparse, ctypes, os, random, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from depfs_ctypes import Depfs  # noqa: E402

DOWN, UP = 1, 0  # DEPFS_SERVER_DOWN, DEPFS_SERVER_UP (depfs.h)
UNIT = 4096


class PushResult(ctypes.Structure):
    _fields_ = [("rc", ctypes.c_int), ("answered", ctypes.c_bool), ("state", ctypes.c_int),
                ("epoch", ctypes.c_uint64)]


def admin_calls(lib):
    vp, u32, u64 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64
    lib.depfs_set_server_state.argtypes = [vp, u32, ctypes.c_int]
    lib.depfs_mds_set_state.argtypes = [vp, u32, ctypes.c_int, ctypes.POINTER(u64)]
    lib.depfs_push_state.argtypes = [vp, ctypes.POINTER(u32), ctypes.c_uint, ctypes.c_int, u64,
                                     ctypes.POINTER(PushResult)]
    lib.depfs_server_rejoin.argtypes = [vp, u32, vp, vp]


def push(adm, ids, epoch):
    arr = (ctypes.c_uint32 * len(ids))(*ids)
    out = (PushResult * len(ids))()
    rc = adm.lib.depfs_push_state(adm.fs, arr, len(ids), -1, epoch, out)
    if rc != len(ids):
        raise SystemExit(f"FAILED: push of epoch {epoch} to {ids}: {rc} took it")


def main():
    ap = argparse.ArgumentParser()
    for o in ("--lib", "--conf", "--path", "--ref", "--servers"):
        ap.add_argument(o, required=True)
    a = ap.parse_args()
    s = [int(x) for x in a.servers.split(",")]
    adm = Depfs(a.lib, a.conf)
    admin_calls(adm.lib)
    for sid in (s[1], s[3]):
        adm._check(adm.lib.depfs_set_server_state(adm.fs, sid, DOWN), f"mark {sid} down")

    w = Depfs(a.lib, a.conf)  # learns S1 and S3 down at its mount
    fh = w.open(a.path, os.O_RDWR)
    data = random.Random(14).randbytes(UNIT)
    outcome = {}

    def writer():
        try:
            w.pwrite(fh, data, 0)
            w.flush(fh)
            w.fsync(fh)
            outcome["ok"] = True
        except OSError as e:
            outcome["err"] = e

    t0 = time.monotonic()
    t = threading.Thread(target=writer)
    t.start()
    time.sleep(1.0)  # the writer holds its locks and sleeps (after_lock)
    epoch = ctypes.c_uint64()
    adm._check(adm.lib.depfs_mds_set_state(adm.fs, s[3], UP, ctypes.byref(epoch)), "S3 up")
    push(adm, [s[0]], epoch.value)  # S0 learns it, S2 not yet
    # the writer wakes at pause_s: S2 still at the old epoch; a moment
    # later the push reaches the others (as depfs-recovery's would)
    pause_s = int(os.environ.get("DEPFS_TEST_PAUSE_MS", "4000")) / 1000.0
    pushed = rejoined = False
    while t.is_alive():
        if not pushed and time.monotonic() - t0 >= pause_s + 0.3:
            push(adm, [s[2], s[3]], epoch.value)
            pushed = True
        elif pushed and not rejoined and time.monotonic() - t0 >= pause_s + 1.0:
            # S3 is up with dirty records on the survivors: rejoin it (the
            # writer, done storing, waits for exactly that)
            adm._check(adm.lib.depfs_server_rejoin(adm.fs, s[3], None, None),
                       f"rejoin of {s[3]}")
            rejoined = True
        # what depfs-recovery's heartbeats do: keep the servers' recovery
        # lease (ioserver/lease.h), which would demote S2 for being behind,
        # and S3, which then would serve no reads: the writer could rightly
        # acknowledge at once, where this case is about a server that serves
        push(adm, [s[0], s[2], s[3]], 0)
        t.join(0.1)
    if "err" in outcome:
        raise SystemExit(f"FAILED: the write failed: {outcome['err']}")
    if not rejoined:
        raise SystemExit("FAILED: the write was acknowledged while S3 served its old unit")

    with open(a.ref, "rb") as f:
        model = bytearray(f.read())
    model[0:UNIT] = data
    with open(a.ref, "wb") as f:
        f.write(model)
    r = Depfs(a.lib, a.conf)  # never saw anything: S1 down per the MDS
    got = r.read_file(a.path)
    if got != bytes(model):
        bad = [i for i in range(min(len(got), len(model))) if got[i] != model[i]]
        first = bad[0] if bad else min(len(got), len(model))
        raise SystemExit(f"WRONG: degraded read of {a.path} differs from what was written: "
                         f"{len(bad)} bytes, first at offset {first} (unit {first // UNIT} "
                         f"of stripe {first // (2 * UNIT)})")
    print(f"splitwrite: torn write finished; degraded read of {len(got)} bytes exact")
    for fs in (r, w, adm):
        fs.unmount()
    return 0


if __name__ == "__main__":
    sys.exit(main())
