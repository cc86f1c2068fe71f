#!/usr/bin/env python3
"""rawwrite.py - stores bytes in one I/O server's strip file through a
hand-built IO_WRITE (ignore_locks, the server's current epoch), as a buggy
client or a misdirected write would: the server checksums what it is given,
so the unit reads back without a checksum error while it no longer agrees
with the rest of its stripe (scrub's "parity mismatch with good
checksums").

    rawwrite.py HOST:PORT FILE_ID LOCAL_OFFSET --xor-from STRIP_FILE LEN
        stores the LEN bytes at LOCAL_OFFSET of STRIP_FILE (read from disk)
        XOR 0xA5 back at the same place

Exit 0 when the server stored them (err 0), 1 otherwise."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from badwire import IO_STAT, IO_WRITE, call, extent, f_int  # noqa: E402
from rawlock import IOREPLY_CLUSTER_EPOCH, IOREQ_CLUSTER_EPOCH, call_raw, varint_field  # noqa: E402

IOREQ_IGNORE_LOCKS = 7


def main():
    if len(sys.argv) != 7 or sys.argv[4] != "--xor-from":
        sys.exit(__doc__)
    addr, file_id, off = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    strip, n = sys.argv[5], int(sys.argv[6])
    with open(strip, "rb") as f:
        f.seek(off)
        old = f.read(n)
    if len(old) != n:
        sys.exit(f"rawwrite: {strip} has {len(old)} bytes at {off}, want {n}")
    data = bytes(b ^ 0xA5 for b in old)
    epoch = varint_field(call_raw(addr, IO_STAT, f_int(1, 0)), IOREPLY_CLUSTER_EPOCH)
    hdr = f_int(1, file_id) + extent(off, n) + f_int(IOREQ_IGNORE_LOCKS, 1)
    if epoch is not None:
        hdr += f_int(IOREQ_CLUSTER_EPOCH, epoch)
    err, msg = call(addr, IO_WRITE, hdr, data)
    print(f"IO_WRITE file {file_id} [{off},+{n}) at {addr}: err {err}{' (' + msg + ')' if msg else ''}",
          flush=True)
    return 0 if err == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
