#!/usr/bin/env python3
"""rawlock.py - takes a stripe lock on one I/O server with a hand-built
IO_LOCK request (the frame helpers of badwire.py), as a client would on the
pre-read of a write, and then goes away without unlocking: the lock is an
orphan once it is older than lock_lease_ms. The request carries the cluster
epoch the server reports (an IO_STAT first), as a live client's would.

    rawlock.py HOST:PORT FILE_ID FIRST_STRIPE COUNT OWNER_CLIENT OWNER_OP

Prints the server's answer; exit 0 when the lock was granted (err 0), 1
otherwise."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from badwire import (FLAG_REPLY, HEADER, IO_LOCK, IO_STAT, MAGIC, connect,  # noqa: E402
                     f_int, frame, lock, read_varint, recv_exact, reply_fields)

IOREPLY_CLUSTER_EPOCH = 14
IOREQ_CLUSTER_EPOCH = 9


def call_raw(addr, type_, hdr):
    """One request; the reply's protobuf header bytes."""
    s = connect(addr)
    try:
        s.sendall(frame(type_, hdr))
        raw = recv_exact(s, HEADER.size)
        if raw is None:
            raise ConnectionError("connection closed without a reply")
        magic, _v, rtype, flags, hlen, blen, _c, _id = HEADER.unpack(raw)
        if magic != MAGIC or not flags & FLAG_REPLY or rtype != type_:
            raise ConnectionError("bad reply frame")
        body = recv_exact(s, hlen + blen)
        if body is None:
            raise ConnectionError("reply cut short")
        return body[:hlen]
    finally:
        s.close()


def varint_field(buf, want):
    i = 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = read_varint(buf, i)
            if field == want:
                return v
        elif wt == 2:
            n, i = read_varint(buf, i)
            i += n
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        else:
            raise ValueError("bad wire type %d" % wt)
    return None


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    addr = sys.argv[1]
    file_id, first, count, owner, op = (int(x) for x in sys.argv[2:])
    epoch = varint_field(call_raw(addr, IO_STAT, f_int(1, 0)), IOREPLY_CLUSTER_EPOCH)
    hdr = f_int(1, file_id) + lock(first, count, owner=owner, op=op)
    if epoch is not None:
        hdr += f_int(IOREQ_CLUSTER_EPOCH, epoch)
    err, msg = reply_fields(call_raw(addr, IO_LOCK, hdr))
    print(f"IO_LOCK file {file_id} stripes [{first},{first + count}) owner client {owner} op {op} "
          f"epoch {epoch} at {addr}: err {err}{' (' + msg + ')' if msg else ''}", flush=True)
    return 0 if err == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
