#!/usr/bin/env python3
"""authattack.py - what a peer without the right credentials can do to a
DePFS cluster over the wire (issue 13), case by case; used by test_auth.sh.

    authattack.py outsider MDS_ADDR IO_ADDR FILE_ID
        no credentials at all, then a wrong cluster key, then a frame
        changed or replayed after someone else's handshake
    authattack.py user MDS_ADDR IO_ADDR FILE_ID MUNGE_SOCKET OWN_FILE_ID
        run as an unprivileged user: proved by MUNGE, with a real ticket
        from MDS_REGISTER, asking for admin operations and for locks in
        another client's name; a lock in its own name on its own file
        (OWN_FILE_ID, with the MDS's capability for it) is served

Each case prints one line, "ok <case>: <what the daemon answered>" when the
attempt was refused, "FAIL <case>: ..." when it got through; exit 0 when
every attempt was refused, 1 otherwise. Nothing here is destructive when
refused; test_auth.sh checks afterwards that data, locks and server states
are as they were.
"""
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import authwire  # noqa: E402
from badwire import (FLAG_REPLY, HEADER, IO_READ, IO_SET_STATE, MAGIC,  # noqa: E402
                     MDS_SET_SERVER_STATE, extent, f_bytes, f_int, frame, lock, recv_exact)
from handles import F_INO, Handles  # noqa: E402

EACCES, EPERM = 13, 1
MDS_REGISTER, MDS_UNLINK, MDS_OPEN, IO_UNLOCK, IO_DIRTY, IO_HEARTBEAT = 1, 8, 23, 4, 10, 9
O_RDWR = 2
MDS_REPLY_CAPABILITY = 22
DIRTY_CLEAR = 2
OTHER_CLIENT = 1  # the first client registered: someone else's id
OWN_PATH = "/pub/mine"  # OWN_FILE_ID's path (test_auth.sh)
MDS_REPLY_MESSAGE, IO_REPLY_MESSAGE = 17, 2


def reply_fields(body):
    """(err, message) of an MdsReply or an IoReply."""
    f = authwire._parse(body)
    msg = f.get(MDS_REPLY_MESSAGE, f.get(IO_REPLY_MESSAGE, b""))
    return f.get(1), msg.decode(errors="replace") if isinstance(msg, bytes) else ""

results = []


def note(ok, case, what):
    results.append(ok)
    print("%s %s: %s" % ("ok" if ok else "FAIL", case, what), flush=True)


def roundtrip(s, type_, hdr, bulk=b""):
    """(err, message) of one request on socket s, or None if it was closed."""
    try:
        s.sendall(frame(type_, hdr, bulk))
        raw = recv_exact(s, HEADER.size)
        if raw is None:
            return None
        magic, _v, rtype, flags, hlen, blen, _c, _id = HEADER.unpack(raw)
        if magic != MAGIC or not flags & FLAG_REPLY or rtype != type_:
            return None
        body = recv_exact(s, hlen + blen)
        return None if body is None else reply_fields(body[:hlen])
    except (ConnectionError, socket.timeout, OSError):
        return None


def refused(case, answer, allowed=(EACCES, EPERM)):
    if answer is None:
        note(True, case, "connection closed")
    elif answer[0] in allowed:
        note(True, case, "err %d %s" % (answer[0], answer[1]))
    else:
        note(False, case, "answered err %s %s" % answer)


def outsider(mds, io, fid):
    # 1. no handshake at all: an I/O server's READ, the MDS's UNLINK
    s = authwire.connect(io, method=None)
    refused("unauthenticated IO_READ", roundtrip(s, IO_READ, f_int(1, fid) + extent(0, 4096)))
    s.close()
    s = authwire.connect(mds, method=None)
    refused("unauthenticated MDS_UNLINK", roundtrip(s, MDS_UNLINK, f_int(2, 1) + f_bytes(3, "f")))
    s.close()
    s = authwire.connect(mds, method=None)
    refused("unauthenticated MDS_SET_SERVER_STATE",
            roundtrip(s, MDS_SET_SERVER_STATE, f_int(24, 0) + f_int(25, 1)))
    s.close()
    # 2. another cluster's key: the server cannot prove it holds ours, nor we its
    for addr in (mds, io):
        s = authwire.connect(addr, method=None)
        try:
            authwire.handshake(s, authwire.METHOD_KEY, secret=os.urandom(32))
            note(False, "wrong cluster key at " + addr, "handshake accepted")
        except (authwire.AuthRefused, ConnectionError, OSError) as e:
            note(True, "wrong cluster key at " + addr, str(e))
        s.close()
    # 3. a forged ticket (made up: no MDS key) at an I/O server
    s = authwire.connect(io, method=None)
    try:
        forged = struct.pack("<QIIQ", OTHER_CLIENT, 0, 0, 2**62) + os.urandom(32)
        _ticket_handshake(s, forged, os.urandom(32))
        note(False, "forged ticket", "handshake accepted")
    except (authwire.AuthRefused, ConnectionError, OSError) as e:
        note(True, "forged ticket", str(e))
    s.close()
    # 4. tampering and replay on an authenticated connection (we hold the
    # key here, as an observer of someone's connection would not: the point
    # is that a frame changed or replayed is refused whoever sends it)
    key = os.environ["DEPFS_CLUSTER_KEY"]
    s = authwire.connect(io, key_path=key)
    good = s._tagged(frame(IO_READ, f_int(1, fid) + extent(0, 4096)))
    s.sock.sendall(good)
    ok = s.recv(HEADER.size)
    s.rbuf.clear()  # the rest of that reply
    changed = bytearray(s._tagged(frame(IO_READ, f_int(1, fid) + extent(0, 4096))))
    changed[HEADER.size + authwire.TAG_BYTES + 3] ^= 1  # one bit of the header
    s.sock.sendall(bytes(changed))
    refused("a tagged frame changed on the way", _next_reply(s) if ok else None)
    s.close()
    s = authwire.connect(io, key_path=key)
    s.sock.sendall(good)  # a frame of the earlier session
    refused("a frame replayed into another session", _next_reply(s))
    s.close()


def _next_reply(s):
    try:
        raw = s.recv(HEADER.size)
        return None if len(raw) < HEADER.size else (0, "a reply came")
    except OSError:
        return None


def _ticket_handshake(s, ticket, secret):
    cn = os.urandom(authwire.NONCE_BYTES)
    hello = (authwire.f_int(1, authwire.METHOD_TICKET) + authwire.f_bytes(2, cn) +
             authwire.f_bytes(4, ticket))
    ch = authwire._call(s, authwire.AUTH_HELLO, hello)
    authwire._refused(ch)
    sn = ch[3]
    if ch.get(4) != authwire.proof(secret, "S", authwire.METHOD_TICKET, cn, sn):
        raise authwire.AuthRefused("the server does not hold the secret")
    res = authwire._call(s, authwire.AUTH_PROOF, authwire.f_bytes(
        1, authwire.proof(secret, "C", authwire.METHOD_TICKET, cn, sn)))
    authwire._refused(res)
    return authwire.AuthSocket(s, authwire.session_key(secret, cn, sn))


def _own_capability(mds, munge_socket, me, own, ticket):
    """The MDS's read-write capability (MdsReply field 22) for file own
    (OWN_PATH), made out to client me, whose ticket the request shows (field
    34); the request names own with the handle tag a walk from the root
    gave (handles.py)."""
    s = authwire.connect(mds, munge_socket=munge_socket)
    h = Handles(s)
    if h.walk(OWN_PATH) != own:
        raise SystemExit("%s is not inode %d" % (OWN_PATH, own))
    s.sendall(frame(MDS_OPEN, f_int(1, me) + h.field(F_INO, own) + f_int(11, O_RDWR) +
                    f_bytes(34, ticket)))
    hlen = HEADER.unpack(recv_exact(s, HEADER.size))[4]
    rep = authwire._parse(recv_exact(s, hlen))
    s.close()
    return rep.get(MDS_REPLY_CAPABILITY, b"")


def user(mds, io, fid, munge_socket, own):
    # proved by MUNGE: the MDS registers us and gives a ticket
    s = authwire.connect(mds, munge_socket=munge_socket)
    refused("MDS_SET_SERVER_STATE by a user",
            roundtrip(s, MDS_SET_SERVER_STATE, f_int(24, 0) + f_int(25, 1)))
    s.sendall(frame(MDS_REGISTER, b""))
    raw = recv_exact(s, HEADER.size)
    hlen = HEADER.unpack(raw)[4]
    rep = authwire._parse(recv_exact(s, hlen))
    me, ticket, wrapped = rep[9], rep[19], rep[20]
    pad = authwire.mac(s.skey, "depfs ticket wrap", ticket)
    secret = bytes(a ^ b for a, b in zip(wrapped, pad))
    s.close()
    # at an I/O server with that ticket: admin operations and others' locks
    t = _ticket_handshake(authwire.connect(io, method=None), ticket, secret)
    refused("IO_SET_STATE by a ticket holder",
            roundtrip(t, IO_SET_STATE, f_int(1, 0) + f_int(11, 2) + f_int(9, 2**64 - 1)))
    refused("IO_DIRTY clear by a ticket holder",
            roundtrip(t, IO_DIRTY, f_int(1, fid) + f_int(12, DIRTY_CLEAR) + f_int(6, 0)))
    refused("IO_HEARTBEAT by a ticket holder", roundtrip(t, IO_HEARTBEAT, f_int(1, 0)))
    refused("IO_UNLOCK of client %d's lock by client %d" % (OTHER_CLIENT, me),
            roundtrip(t, IO_UNLOCK, f_int(1, fid) + lock(0, 1, owner=OTHER_CLIENT)))
    refused("IO_READ under client %d's name" % OTHER_CLIENT,
            roundtrip(t, IO_READ, f_int(1, fid) + extent(0, 4096) + lock(0, 1, owner=OTHER_CLIENT)))
    cap = f_bytes(19, _own_capability(mds, munge_socket, me, own, ticket))
    ans = roundtrip(t, IO_READ, f_int(1, own) + extent(0, 4096) + lock(0, 1, owner=me, op=5) + cap)
    note(ans is not None and ans[0] == 0, "IO_READ of its own file locked in its own name (allowed)",
         "err %s %s" % ans if ans else "connection closed")
    roundtrip(t, IO_UNLOCK, f_int(1, own) + lock(0, 1, owner=me, op=5) + cap)
    t.close()


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "outsider":
        outsider(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif len(sys.argv) == 7 and sys.argv[1] == "user":
        user(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], int(sys.argv[6]))
    else:
        print(__doc__)
        return 2
    return 0 if results and all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
