#!/usr/bin/env python3
"""capattack.py - I/O capabilities (issue 13): a ticket holder reaches a
file's units at the I/O servers only with the MDS's capability for that
file, that client and that access; used by test_capabilities.sh.

    capattack.py register MDS_ADDR MUNGE_SOCKET STATE
        run as the test user: MDS_REGISTER by MUNGE; the ticket, its secret
        and the client id go to STATE (mode 0600); prints the client id
    capattack.py mint KEY_PATH FILE_ID CLIENT_ID RIGHTS EXPIRES_S
        run as root (the cluster key): a capability tagged as the MDS
        tags them (common/auth.c), in hex - how the test makes an expired
        one and one of another client without waiting or a second user
    capattack.py mint-ticket KEY_PATH CLIENT_ID UID EXPIRES_S
        run as root: a ticket tagged as the MDS tags them, in hex (an
        expired one of the test user's client; one of another uid)
    capattack.py owner MDS_ADDR MUNGE_SOCKET STATE OWN_FID PARENT EXPIRED_TICKET ROOT_TICKET
        run as the test user: the MDS makes a capability out only to the
        client of the ticket the request carries (mds/cap_owner.h):
        MDS_OPEN of its own file naming its own client id with its ticket
        (or naming none) gives a capability for that client; naming another
        client id, with its ticket or with none, an MDS_CREATE naming
        another client (PARENT: a directory it may write), a renewal of its
        capability for another client, its client's ticket expired, or a
        ticket of another uid (ROOT_TICKET) are refused with EACCES; no
        ticket and no client id: no capability. MDS_REGISTER renews the
        expired ticket (same client id), and the new ticket works.
    capattack.py attack MDS_ADDR MUNGE_SOCKET STATE IO_ADDRS ROOT_FID OWN_FID EXPIRED OTHER
        run as the test user, with the ticket in STATE, at every I/O server
        of IO_ADDRS (comma-separated): IO_READ of root's file with no
        capability, with the MDS's capability for its own file, an expired
        one (EXPIRED: hex, for root's file and this client), a forged one
        (its own file's with root's file id written in), one of another
        client (OTHER: hex, for root's file); IO_WRITE, IO_TRUNCATE,
        IO_REMOVE, a writing IO_LOCK and IO_FSYNC of root's file; a
        read-only open's capability for its own file reads it but cannot
        write, truncate, remove or take a writing lock; the read-write
        one reads. Every refusal must be EACCES.

ROOT_FID is /secret, OWN_FID /pub/mine and PARENT /pub: MDS requests name
them with the handle tags LOOKUPs from the root gave (handles.py), as a
user must. Each case prints "ok <case>: ..." or "FAIL <case>: ..."; exit 0
when every case went as it should.
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import authwire  # noqa: E402
from authattack import EACCES, _ticket_handshake, note, results, roundtrip  # noqa: E402
from authwire import f_bytes, f_int  # noqa: E402
from handles import Handles  # noqa: E402
from badwire import (HEADER, IO_LOCK, IO_READ, IO_TRUNCATE, IO_WRITE, extent, frame,  # noqa: E402
                     lock, recv_exact)

MDS_REGISTER, MDS_CREATE, MDS_OPEN = 1, 5, 23
IO_REMOVE, IO_FSYNC = 6, 7
F_CLIENT_ID, F_PARENT, F_NAME, F_INO, F_MODE, F_FLAGS = 1, 2, 3, 4, 5, 11
F_RENEW_TICKET, F_RENEW_CAPABILITY, F_TICKET = 31, 32, 34
S_IFREG = 0o100000
TICKET_BODY = struct.Struct("<QIIQ16s")  # client, uid, gid, expires, nonce
TICKET_TAG_BYTES = 16
F_IO_LOCAL_SIZE, F_IO_CAPABILITY = 6, 19
R_ERR, R_MESSAGE, R_CLIENT_ID, R_TICKET, R_TICKET_SECRET, R_CAPABILITY = 1, 17, 9, 19, 20, 22
CAP_READ, CAP_WRITE = 1, 2
CAP_KEY_VERSION, CAP_TAG_BYTES = 1, 16
CAP_BODY = struct.Struct("<QQQII8s")  # file, client, expires, rights, key version, nonce
O_RDONLY, O_RDWR = 0, 2
UNIT = 4096
ROOT_FILE_PATH, OWN_PATH, PUB_PATH = "/secret", "/pub/mine", "/pub"


def handles_of(s, wanted):
    """The handle tags of {ino: path} on connection s, by LOOKUPs from the root."""
    h = Handles(s)
    for ino, path in wanted.items():
        got = h.walk(path)
        if got != ino:
            raise SystemExit("%s is inode %d, not %d" % (path, got, ino))
    return h


def mint(key_path, fid, client, rights, expires):
    with open(key_path, "rb") as f:
        key = authwire.derive(f.read(), "capability")
    body = CAP_BODY.pack(fid, client, expires, rights, CAP_KEY_VERSION, os.urandom(8))
    return body + authwire.mac(key, "depfs capability", body, size=CAP_TAG_BYTES)


def mint_ticket(key_path, client, uid, expires):
    with open(key_path, "rb") as f:
        key = authwire.derive(f.read(), "ticket")
    body = TICKET_BODY.pack(client, uid, uid, expires, os.urandom(16))
    return body + authwire.mac(key, "depfs ticket", body, size=TICKET_TAG_BYTES)


def mds_call(s, op, hdr):
    """The MdsReply's fields of one request."""
    s.sendall(frame(op, hdr))
    raw = recv_exact(s, HEADER.size)
    hlen, blen = HEADER.unpack(raw)[4:6]
    return authwire._parse(recv_exact(s, hlen + blen)[:hlen])


def register(mds, sock, state):
    s = authwire.connect(mds, munge_socket=sock)
    rep = mds_call(s, MDS_REGISTER, b"")
    ticket, wrapped = rep[R_TICKET], rep[R_TICKET_SECRET]
    pad = authwire.mac(s.skey, "depfs ticket wrap", ticket)
    s.close()
    fd = os.open(state, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"client_id": rep[R_CLIENT_ID], "ticket": ticket.hex(),
                   "secret": bytes(a ^ b for a, b in zip(wrapped, pad)).hex()}, f)
    print(rep[R_CLIENT_ID])


def open_cap(mds, sock, me, ino, path, flags, ticket):
    """(err, capability) of an MDS_OPEN of ino (at path) for client me, with
    its ticket."""
    s = authwire.connect(mds, munge_socket=sock)
    h = handles_of(s, {ino: path})
    rep = mds_call(s, MDS_OPEN, f_int(F_CLIENT_ID, me) + h.field(F_INO, ino) +
                   f_int(F_FLAGS, flags) + f_bytes(F_TICKET, ticket))
    s.close()
    return rep.get(1, 0), rep.get(R_CAPABILITY)


def cap_client(cap):
    """The client id a capability is made out to (None: no capability)."""
    return CAP_BODY.unpack(cap[:CAP_BODY.size])[1] if cap else None


def mds_answer(s, op, hdr):
    """(err, message, capability, client id) of one MDS request."""
    rep = mds_call(s, op, hdr)
    return (rep.get(R_ERR, 0), rep.get(R_MESSAGE, b"").decode(errors="replace"),
            rep.get(R_CAPABILITY), rep.get(R_CLIENT_ID))


def granted(case, ans, me):
    ok = ans[0] == 0 and cap_client(ans[2]) == me
    note(ok, case, "capability for client %s" % cap_client(ans[2]) if ans[0] == 0
         else "err %d %s" % ans[:2])


def refused_for(case, ans, words):
    ok = ans[0] == EACCES and ans[2] is None and all(w in ans[1] for w in words)
    note(ok, case, "err %d %s" % ans[:2])


def owner(mds, sock, state, own_fid, parent, expired, root_ticket):
    with open(state) as f:
        st = json.load(f)
    me, ticket = st["client_id"], bytes.fromhex(st["ticket"])
    other = me + 1000
    s = authwire.connect(mds, munge_socket=sock)
    h = handles_of(s, {own_fid: OWN_PATH, parent: PUB_PATH})
    open_own = h.field(F_INO, own_fid) + f_int(F_FLAGS, O_RDWR)
    granted("MDS_OPEN naming its own client id, with its ticket",
            mds_answer(s, MDS_OPEN, f_int(F_CLIENT_ID, me) + open_own + f_bytes(F_TICKET, ticket)),
            me)
    ans = mds_answer(s, MDS_OPEN, open_own + f_bytes(F_TICKET, ticket))
    granted("MDS_OPEN naming no client id, with its ticket: the ticket's client", ans, me)
    own_cap = ans[2] or b""
    refused_for("MDS_OPEN naming another client id, with its own ticket",
                mds_answer(s, MDS_OPEN, f_int(F_CLIENT_ID, other) + open_own +
                           f_bytes(F_TICKET, ticket)), ("ticket of client %d" % me,))
    refused_for("MDS_OPEN naming another client id, no ticket",
                mds_answer(s, MDS_OPEN, f_int(F_CLIENT_ID, other) + open_own),
                ("needs that client's ticket",))
    ans = mds_answer(s, MDS_OPEN, open_own)
    note(ans[0] == 0 and ans[2] is None, "MDS_OPEN with no ticket and no client id: no capability",
         "err %d, capability %s" % (ans[0], "given" if ans[2] else "none"))
    refused_for("MDS_CREATE naming another client id",
                mds_answer(s, MDS_CREATE, f_int(F_CLIENT_ID, other) + h.field(F_PARENT, parent) +
                           f_bytes(F_NAME, "for-another") + f_int(F_MODE, S_IFREG | 0o644) +
                           f_int(F_FLAGS, O_RDWR) + f_bytes(F_TICKET, ticket)),
                ("ticket of client %d" % me,))
    refused_for("MDS_OPEN renewing its capability for another client id",
                mds_answer(s, MDS_OPEN, f_int(F_CLIENT_ID, other) + h.field(F_INO, own_fid) +
                           f_bytes(F_RENEW_CAPABILITY, own_cap) + f_bytes(F_TICKET, ticket)),
                ("ticket of client %d" % me,))
    refused_for("MDS_OPEN with its client's ticket expired",
                mds_answer(s, MDS_OPEN, open_own + f_bytes(F_TICKET, expired)), ("expired",))
    refused_for("MDS_OPEN with root's ticket", mds_answer(s, MDS_OPEN, open_own +
                f_bytes(F_TICKET, root_ticket)), ("uid 0's",))
    rep = mds_call(s, MDS_REGISTER, f_bytes(F_RENEW_TICKET, expired))
    fresh = rep.get(R_TICKET)
    note(rep.get(R_ERR, 0) == 0 and rep.get(R_CLIENT_ID) == me and fresh,
         "MDS_REGISTER renews its client's expired ticket, same client id",
         "err %d client %s" % (rep.get(R_ERR, 0), rep.get(R_CLIENT_ID)))
    granted("MDS_OPEN with the renewed ticket",
            mds_answer(s, MDS_OPEN, open_own + f_bytes(F_TICKET, fresh or b"")), me)
    refused_for("MDS_REGISTER renewing root's ticket",
                mds_answer(s, MDS_REGISTER, f_bytes(F_RENEW_TICKET, root_ticket)),
                ("not this user's",))
    s.close()


def cap_field(cap):
    return f_bytes(F_IO_CAPABILITY, cap) if cap is not None else b""


def expect(case, answer, words=()):
    """Refused with EACCES, the message naming each of words."""
    ok = answer is not None and answer[0] == EACCES and all(w in answer[1] for w in words)
    note(ok, case, ("err %s %s" % answer) if answer else "connection closed")


def served(case, answer):
    ok = answer is not None and answer[0] == 0
    note(ok, case, "served" if ok else ("err %s %s" % answer if answer else "connection closed"))


def root_file_cases(t, where, fid, caps):
    read = f_int(1, fid) + extent(0, UNIT)
    expect(where + "IO_READ of root's file, no capability", roundtrip(t, IO_READ, read),
           ("no capability",))
    expect(where + "IO_READ of root's file, its own file's capability",
           roundtrip(t, IO_READ, read + cap_field(caps["own_rw"])), ("capability for file",))
    expect(where + "IO_READ of root's file, an expired capability",
           roundtrip(t, IO_READ, read + cap_field(caps["expired"])), ("expired",))
    expect(where + "IO_READ of root's file, a forged capability",
           roundtrip(t, IO_READ, read + cap_field(caps["forged"])), ("forged",))
    expect(where + "IO_READ of root's file, another client's capability",
           roundtrip(t, IO_READ, read + cap_field(caps["other"])), ("of client",))
    own = cap_field(caps["own_rw"])
    expect(where + "IO_WRITE of root's file",
           roundtrip(t, IO_WRITE, f_int(1, fid) + extent(0, UNIT) + own, b"\xee" * UNIT))
    expect(where + "IO_TRUNCATE of root's file",
           roundtrip(t, IO_TRUNCATE, f_int(1, fid) + f_int(F_IO_LOCAL_SIZE, 0) + own))
    expect(where + "IO_REMOVE of root's file", roundtrip(t, IO_REMOVE, f_int(1, fid) + own))
    expect(where + "IO_LOCK (writing) of root's file",
           roundtrip(t, IO_LOCK, f_int(1, fid) + lock(0, 1, owner=caps["me"]) + own))
    expect(where + "IO_FSYNC of root's file", roundtrip(t, IO_FSYNC, f_int(1, fid)))


def own_file_cases(t, where, fid, caps):
    ro, rw = cap_field(caps["own_ro"]), cap_field(caps["own_rw"])
    served(where + "IO_READ of its own file, read-only capability",
           roundtrip(t, IO_READ, f_int(1, fid) + extent(0, UNIT) + ro))
    served(where + "IO_READ of its own file, read-write capability",
           roundtrip(t, IO_READ, f_int(1, fid) + extent(0, UNIT) + rw))
    expect(where + "IO_WRITE of its own file with a read-only capability",
           roundtrip(t, IO_WRITE, f_int(1, fid) + extent(0, UNIT) + ro, b"\xee" * UNIT),
           ("grants read",))
    expect(where + "IO_TRUNCATE of its own file with a read-only capability",
           roundtrip(t, IO_TRUNCATE, f_int(1, fid) + f_int(F_IO_LOCAL_SIZE, 0) + ro))
    expect(where + "IO_REMOVE of its own file with a read-only capability",
           roundtrip(t, IO_REMOVE, f_int(1, fid) + ro))
    expect(where + "IO_READ under a writing lock with a read-only capability",
           roundtrip(t, IO_READ, f_int(1, fid) + extent(0, UNIT) + ro +
                     lock(0, 1, owner=caps["me"])))


def attack(mds, sock, state, io_addrs, root_fid, own_fid, expired, other):
    with open(state) as f:
        st = json.load(f)
    me, ticket, secret = st["client_id"], bytes.fromhex(st["ticket"]), bytes.fromhex(st["secret"])
    err, _ = open_cap(mds, sock, me, root_fid, ROOT_FILE_PATH, O_RDONLY, ticket)
    note(err == EACCES, "MDS_OPEN of root's 0600 file gives no capability", "err %d" % err)
    err_ro, own_ro = open_cap(mds, sock, me, own_fid, OWN_PATH, O_RDONLY, ticket)
    err_rw, own_rw = open_cap(mds, sock, me, own_fid, OWN_PATH, O_RDWR, ticket)
    note(err_ro == 0 and err_rw == 0 and own_ro and own_rw,
         "MDS_OPEN of its own file gives capabilities", "err %d/%d" % (err_ro, err_rw))
    own_ro, own_rw = own_ro or b"", own_rw or b""  # (none: go on, the servers must refuse)
    forged = bytearray(own_rw)
    forged[0:8] = struct.pack("<Q", root_fid)  # its own capability, root's file id
    caps = {"me": me, "own_ro": own_ro, "own_rw": own_rw, "forged": bytes(forged),
            "expired": bytes.fromhex(expired), "other": bytes.fromhex(other)}
    for addr in io_addrs.split(","):
        t = _ticket_handshake(authwire.connect(addr, method=None), ticket, secret)
        root_file_cases(t, addr + " ", root_fid, caps)
        own_file_cases(t, addr + " ", own_fid, caps)
        t.close()


def main():
    a = sys.argv[1:]
    if len(a) == 4 and a[0] == "register":
        register(a[1], a[2], a[3])
        return 0
    if len(a) == 6 and a[0] == "mint":
        print(mint(a[1], int(a[2]), int(a[3]), int(a[4]), int(a[5])).hex())
        return 0
    if len(a) == 5 and a[0] == "mint-ticket":
        print(mint_ticket(a[1], int(a[2]), int(a[3]), int(a[4])).hex())
        return 0
    if len(a) == 8 and a[0] == "owner":
        owner(a[1], a[2], a[3], int(a[4]), int(a[5]), bytes.fromhex(a[6]), bytes.fromhex(a[7]))
        return 0 if results and all(results) else 1
    if len(a) == 9 and a[0] == "attack":
        attack(a[1], a[2], a[3], a[4], int(a[5]), int(a[6]), a[7], a[8])
        return 0 if results and all(results) else 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
