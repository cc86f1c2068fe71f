#!/usr/bin/env python3
"""badwire.py - sends malformed and hostile requests to a DePFS daemon's port
and checks it answers each one the way the wire protocol says (common/frame.h,
common/rpc.c, ioserver/handlers.c, mds/handlers.c), then still serves a good
request. Used by test_valgrind.sh.

    badwire.py mds|io HOST:PORT
    badwire.py fake-io HOST:PORT

Frame-level abuse (random bytes, a header with a huge length, a bad version,
a reply flag, a bulk crc mismatch, a frame cut short) must make the server
close that connection; a well-framed request with a bad body (undecodable
header, unknown op, out-of-range extents, lock, sizes, names, names with a
NUL, stray mode bits, (uid_t)-1 owners, 64-bit device numbers, writes past
what the data dir's file system holds, epochs past 2^63-1, unknown server
ids) must get a reply with a non-zero err and a message; the MDS must stop
taking xattr names on an inode once they fill one listxattr (ENOSPC) and
still list them; an I/O server must still be UP at the end. Exit 0 when all
held, 1 otherwise, printing one line per case.

fake-io: listens on HOST:PORT in place of an I/O server and answers every
request with garbage, in turn: random bytes, a reply header with a huge
length, an undecodable IoReply, a reply to a request id never sent, a bulk
with a wrong crc32c, half a header. Clients (depfs-recovery, depfs-fuse,
the CLI) must log the error, treat the server as failed and carry on. Runs
until SIGTERM; prints each answer's kind and, at the end, how many.
"""
import os
import signal
import socket
import struct
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import authwire  # noqa: E402

MAGIC = 0x46506544
VERSION = 1
FLAG_REPLY = 0x1
HEADER = struct.Struct("<IHHIIIIQ")  # magic version type flags hdr_len bulk_len crc req_id
TIMEOUT_S = float(os.environ.get("BADWIRE_TIMEOUT_S", "60"))
U64_MAX = (1 << 64) - 1

# errno values the daemons put in replies (Linux)
EINVAL, ENAMETOOLONG, EOPNOTSUPP, ENOENT, EFBIG, ERANGE, ENOSPC = 22, 36, 95, 2, 27, 34, 28
IO_REPLY_STATE = 3  # IoReply.state
MSG_FIELDS = {"io": 2, "mds": 17}  # IoReply.message, MdsReply.message
REPLY_MSG_FIELD = [MSG_FIELDS["mds"]]  # of the daemon this run talks to
SERVER_UP = 0

# IoOp / MdsOp frame types (proto/depfs.proto)
IO_READ, IO_WRITE, IO_LOCK, IO_UNLOCK, IO_TRUNCATE = 1, 2, 3, 4, 5
IO_STAT, IO_DIRTY, IO_SET_STATE = 8, 10, 11
MDS_LOOKUP, MDS_GETATTR, MDS_SETATTR, MDS_CREATE, MDS_MKNOD, MDS_MKDIR = 2, 3, 4, 5, 6, 7
MDS_READDIR, MDS_STATFS, MDS_SETXATTR, MDS_LISTXATTR, MDS_REMOVEXATTR = 11, 15, 16, 18, 19
MDS_EXTEND, MDS_SET_SERVER_STATE = 20, 22
S_IFREG, S_IFDIR, S_IFCHR = 0o100000, 0o40000, 0o20000
O_EXCL, O_APPEND = 0o200, 0o2000
SET_MODE, SET_UID = 1, 2
PAST_EXT4 = 1 << 44  # ext4 (4 KiB blocks) holds files below 16 TiB
NAME_MAX, XATTR_LIST_MAX = 255, 65536
NO_OWNER = 0xFFFFFFFF  # (uid_t)-1
GROUPS_MAX = 64
SU_DEFAULT = 65536
NO_SUCH_SERVER = 99999
UNKNOWN_OP = 200
ROOT_INO = 1


def _crc32c_table():
    poly, table = 0x82F63B78, []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


# ---- protobuf, just enough to build requests and read err/message
varint, f_int, f_bytes = authwire.varint, authwire.f_int, authwire.f_bytes


def read_varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def reply_fields(buf, state=None):
    """err (field 1) and the message string (REPLY_MSG_FIELD); with a
    one-element list `state`, IoReply.state (field 3) into it."""
    err, msg, i = None, "", 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = read_varint(buf, i)
            if field == 1:
                err = v - (1 << 64) if v >= 1 << 63 else v
            elif field == IO_REPLY_STATE and state is not None:
                state[0] = v
        elif wt == 2:
            n, i = read_varint(buf, i)
            if field == REPLY_MSG_FIELD[0]:
                msg = buf[i:i + n].decode(errors="replace")
            i += n
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        else:
            raise ValueError("bad wire type %d in reply" % wt)
    return err, msg


# ---- frames
def frame(type_, hdr=b"", bulk=b"", flags=0, version=VERSION, magic=MAGIC, hdr_len=None,
          bulk_len=None, crc=None, req_id=7):
    return HEADER.pack(magic, version, type_, flags,
                       len(hdr) if hdr_len is None else hdr_len,
                       len(bulk) if bulk_len is None else bulk_len,
                       crc32c(bulk) if crc is None else crc, req_id) + hdr + bulk


def connect(addr):
    """A connection to a daemon, authenticated with the cluster key when
    DEPFS_CLUSTER_KEY names it (authwire.py): the hostile frames below come
    from a peer that got in, the worst case."""
    return authwire.connect(addr)


def recv_exact(s, n):
    out = bytearray()
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            return None
        out += chunk
    return bytes(out)


def closed_by_server(addr, data, shut_write=False):
    """Sends data; True when the server closes the connection without a reply."""
    s = connect(addr)
    try:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            return True
        if shut_write:
            s.shutdown(socket.SHUT_WR)
        try:
            return s.recv(1) == b""
        except ConnectionResetError:
            return True
    finally:
        s.close()


def call(addr, type_, hdr, bulk=b"", state=None):
    """One well-framed request; returns (err, message) of the reply (and an
    IoReply's state into `state`, see reply_fields)."""
    s = connect(addr)
    try:
        s.sendall(frame(type_, hdr, bulk))
        raw = recv_exact(s, HEADER.size)
        if raw is None:
            raise ConnectionError("connection closed without a reply")
        magic, _ver, rtype, flags, hlen, blen, _crc, req_id = HEADER.unpack(raw)
        if magic != MAGIC or not flags & FLAG_REPLY or rtype != type_ or req_id != 7:
            raise ConnectionError("bad reply frame: magic %x flags %x type %u req %u" %
                                  (magic, flags, rtype, req_id))
        body = recv_exact(s, hlen + blen)
        if body is None:
            raise ConnectionError("reply cut short")
        return reply_fields(body[:hlen], state)
    finally:
        s.close()


# ---- the cases
def frame_cases():
    big = 0xFFFFFFFF
    return [
        ("random bytes", os.urandom(4096), False),
        ("huge header length", frame(1, hdr_len=big), False),
        ("huge bulk length", frame(1, bulk_len=big), False),
        ("unknown frame version", frame(1, version=9), False),
        ("unknown flags", frame(1, flags=0x80), False),
        ("frame type 0", frame(0), False),
        ("reply frame to a server", frame(1, flags=FLAG_REPLY), False),
        ("bulk crc mismatch", frame(1, b"", b"0123456789abcdef", crc=0x1234), False),
        ("frame cut short", frame(1, hdr_len=1000)[:HEADER.size + 10], True),
        ("header cut short", frame(1)[:HEADER.size // 2], True),
    ]


def extent(off, length):
    return f_bytes(2, f_int(1, off) + f_int(2, length))


def lock(first, count, owner=99, op=1):
    return f_bytes(3, f_int(1, first) + f_int(2, count) + f_int(3, owner) + f_int(4, op))


BAD_PROTO = b"\x0a\xff\xff\xff\xff\x0f"  # field 1, length-delimited, length past the end
FID = f_int(1, 0xBAD0BAD0)


def attr(ino=ROOT_INO, mode=0, uid=0):
    """An Attr message (all its fields are required)."""
    nlink, rest = f_int(3, 0), b"".join(f_int(i, 0) for i in range(5, 11))
    return f_bytes(14, f_int(1, ino) + f_int(2, mode) + nlink + f_int(4, uid) + rest)


def io_cases():
    many = b"".join(extent(i * 8, 8) for i in range(4097))
    return [
        ("undecodable IoRequest", IO_READ, BAD_PROTO, b""),
        ("IoRequest without file_id", IO_READ, b"", b""),
        ("unknown I/O op", UNKNOWN_OP, FID, b""),
        ("read of 2^63 bytes", IO_READ, FID + extent(0, 1 << 63), b""),
        ("read at offset 2^64-1", IO_READ, FID + extent(U64_MAX, 1), b""),
        ("read over max bulk", IO_READ, FID + extent(0, 40 << 20) + extent(40 << 20, 40 << 20), b""),
        ("4097 extents", IO_READ, FID + many, b""),
        ("lock of 0 stripes", IO_LOCK, FID + lock(0, 0), b""),
        ("lock stripes overflow", IO_LOCK, FID + lock(U64_MAX, 2), b""),
        ("read with an overflowing lock", IO_READ, FID + extent(0, 8) + lock(U64_MAX, 2), b""),
        ("write bulk != extents", IO_WRITE, FID + extent(0, 100), b"x" * 10),
        ("write without lock but unlock", IO_WRITE, FID + extent(0, 4) + f_int(4, 1), b"abcd"),
        ("write naming 300 down servers", IO_WRITE,
         FID + extent(0, 4) + b"".join(f_int(8, i) for i in range(300)), b"abcd"),
        ("truncate to 2^63", IO_TRUNCATE, FID + f_int(6, 1 << 63), b""),
        ("truncate without size", IO_TRUNCATE, FID, b""),
        ("stat with bulk", IO_STAT, FID, b"unexpected"),
        ("set state DOWN", IO_SET_STATE, FID + f_int(11, 1), b""),
        ("set state 77", IO_SET_STATE, FID + f_int(11, 77), b""),
        # a write the data dir's file system cannot hold: refused (EFBIG),
        # and the server stays UP (it used to demote itself)
        ("write past 16 TiB (ext4)", IO_WRITE, FID + extent(PAST_EXT4 - 8, 16), b"x" * 16),
        ("truncate past 16 TiB (ext4)", IO_TRUNCATE, FID + f_int(6, PAST_EXT4), b""),
        ("read of file id 0", IO_READ, f_int(1, 0) + extent(0, 8), b""),
        ("lock starting past the last stripe", IO_LOCK, FID + lock(1 << 50, 1), b""),
        ("write with stripe unit 1", IO_WRITE, FID + extent(0, 4) + f_int(14, 1), b"abcd"),
        ("epoch 2^64-1", IO_SET_STATE, FID + f_int(9, U64_MAX), b""),
        ("write naming an unknown server down", IO_WRITE,
         FID + extent(0, 4) + f_int(8, NO_SUCH_SERVER), b"abcd"),
        ("dirty records of an unknown server", IO_DIRTY, FID + f_int(6, NO_SUCH_SERVER), b""),
    ]


def mds_cases():
    return [
        ("undecodable MdsRequest", MDS_GETATTR, BAD_PROTO),
        ("unknown MDS op", UNKNOWN_OP, b""),
        ("getattr of ino 2^64-1", MDS_GETATTR, f_int(4, U64_MAX)),
        ("lookup of a 100000-byte name", MDS_LOOKUP, f_int(2, ROOT_INO) + f_bytes(3, "n" * 100000)),
        ("lookup of a name with '/'", MDS_LOOKUP, f_int(2, ROOT_INO) + f_bytes(3, "a/b")),
        ("create with layout 1000@999", MDS_CREATE,
         f_int(2, ROOT_INO) + f_bytes(3, "badwire-create") + f_int(5, 0o100644) +
         f_int(15, 1000) + f_int(16, 999)),
        ("create with k > n", MDS_CREATE,
         f_int(2, ROOT_INO) + f_bytes(3, "badwire-create") + f_int(5, 0o100644) +
         f_int(15, 4) + f_int(16, 5)),
        ("setxattr of 900 KiB", MDS_SETXATTR,
         f_int(4, ROOT_INO) + f_bytes(20, "user.badwire") + f_bytes(21, b"v" * (900 << 10))),
        ("setxattr with unknown flags", MDS_SETXATTR,
         f_int(4, ROOT_INO) + f_bytes(20, "user.badwire") + f_bytes(21, b"v") + f_int(11, 0xF0)),
        ("extend of ino 2^64-1", MDS_EXTEND, f_int(4, U64_MAX) + f_int(22, 1 << 63)),
        ("set state of server 99999", MDS_SET_SERVER_STATE, f_int(24, 99999) + f_int(25, 1)),
        ("set state 77", MDS_SET_SERVER_STATE, f_int(24, 0) + f_int(25, 77)),
        # protobuf-c cuts a string at a NUL: the name would be "badwire-nul"
        ("create with a NUL in the name", MDS_CREATE,
         f_int(2, ROOT_INO) + f_bytes(3, b"badwire-nul\0tail") + f_int(5, S_IFREG | 0o644)),
        ("create with mode bit 2^31", MDS_CREATE,
         f_int(2, ROOT_INO) + f_bytes(3, "badwire-m31") + f_int(5, 1 << 31 | 0o644)),
        ("create owned by (uid_t)-1", MDS_CREATE,
         f_int(2, ROOT_INO) + f_bytes(3, "badwire-uid") + f_int(5, S_IFREG | 0o644) +
         f_int(6, NO_OWNER)),
        ("create with O_APPEND (not a create flag)", MDS_CREATE,
         f_int(2, ROOT_INO) + f_bytes(3, "badwire-append") + f_int(5, S_IFREG | 0o644) +
         f_int(11, O_EXCL | O_APPEND)),
        ("mknod with a 64-bit device", MDS_MKNOD,
         f_int(2, ROOT_INO) + f_bytes(3, "badwire-dev") + f_int(5, S_IFCHR | 0o600) +
         f_int(8, U64_MAX)),
        ("mkdir with a file's type", MDS_MKDIR,
         f_int(2, ROOT_INO) + f_bytes(3, "badwire-dir") + f_int(5, S_IFREG | 0o755)),
        ("setattr with unknown mask bits", MDS_SETATTR,
         f_int(4, ROOT_INO) + f_int(13, 1 << 30) + attr()),
        ("setattr making the root a file", MDS_SETATTR,
         f_int(4, ROOT_INO) + f_int(13, SET_MODE) + attr(mode=S_IFREG | 0o755)),
        ("setattr to owner (uid_t)-1", MDS_SETATTR,
         f_int(4, ROOT_INO) + f_int(13, SET_UID) + attr(uid=NO_OWNER)),
        ("lookup naming 65 groups", MDS_LOOKUP,
         f_int(2, ROOT_INO) + f_bytes(3, "x") + b"".join(f_int(26, g) for g in range(GROUPS_MAX + 1))),
    ]


def locked_write_outside(addr):
    """Takes the lock of stripe 0, writes stripe 5 under it (refused: the
    lock would not cover what the write changes), lets go. True when the
    write was refused."""
    spec = lock(0, 1)
    err_lock, _ = call(addr, IO_LOCK, FID + spec)
    err, msg = call(addr, IO_WRITE, FID + extent(5 * SU_DEFAULT, 4) + spec + f_int(14, SU_DEFAULT),
                    b"abcd")
    call(addr, IO_UNLOCK, FID + spec)
    print("%-34s err %s: %s%s" % ("locked write outside its stripes", err, msg,
                                  "" if err and err_lock == 0 else "   <- expected an error"))
    return err_lock == 0 and bool(err) and bool(msg)


XATTR_FILL_NAME_BYTES = 200
XATTR_FILL_TRIES = XATTR_LIST_MAX // (XATTR_FILL_NAME_BYTES + 1) + 2


def xattr_fill(addr):
    """Sets xattrs with long names on the root until the MDS says ENOSPC
    (one inode's names fit in one listxattr), checks they still list, then
    removes them. True when it went so."""
    names, err, msg = [], 0, ""
    for i in range(XATTR_FILL_TRIES):
        name = ("user.badwire-%04d-" % i).ljust(XATTR_FILL_NAME_BYTES, "x")
        err, msg = call(addr, MDS_SETXATTR, f_int(4, ROOT_INO) + f_bytes(20, name) + f_bytes(21, b"v"))
        if err:
            break
        names.append(name)
    listed, _ = call(addr, MDS_LISTXATTR, f_int(4, ROOT_INO))
    for name in names:
        call(addr, MDS_REMOVEXATTR, f_int(4, ROOT_INO) + f_bytes(20, name))
    print("%-34s err %s after %d names: %s; listxattr err %s" %
          ("xattr names past one listxattr", err, len(names), msg, listed))
    return err == ENOSPC and bool(msg) and listed == 0


# ---- fake-io: a server that answers garbage
FAKE_MODES = ("random bytes", "huge reply header", "undecodable IoReply", "unknown request id",
              "bulk crc mismatch", "half a header")
UNKNOWN_ID_OFFSET = 1 << 40


def fake_reply(mode, type_, req_id):
    """The bytes to answer one request with; None after them: close."""
    def reply(hdr=b"", bulk=b"", **kw):
        kw.setdefault("req_id", req_id)
        return frame(type_, hdr, bulk, flags=FLAG_REPLY, **kw)
    if mode == 0:
        return os.urandom(64)
    if mode == 1:
        return reply(hdr_len=0xFFFFFFFF)
    if mode == 2:
        return reply(BAD_PROTO)
    if mode == 3:
        return reply(f_int(1, 0), req_id=req_id + UNKNOWN_ID_OFFSET)
    if mode == 4:
        return reply(f_int(1, 0), b"0123456789abcdef", crc=0x1234)
    return reply(f_int(1, 0))[:HEADER.size // 2]


class FakeIo:
    def __init__(self):
        self.lock = threading.Lock()
        self.answered = 0

    def next_mode(self):
        with self.lock:
            n = self.answered
            self.answered += 1
        return n % len(FAKE_MODES)

    def serve(self, conn):
        with conn:
            while True:
                raw = recv_exact(conn, HEADER.size)
                if raw is None:
                    return
                _m, _v, type_, _f, hlen, blen, _c, req_id = HEADER.unpack(raw)
                if hlen + blen > 64 << 20 or recv_exact(conn, hlen + blen) is None:
                    return
                mode = self.next_mode()
                print("fake-io: %s" % FAKE_MODES[mode], flush=True)
                try:
                    conn.sendall(fake_reply(mode, type_, req_id))
                except OSError:
                    return
                if mode in (0, 1, 5):  # the stream is broken now
                    return


def fake_io(addr):
    host, port = addr.rsplit(":", 1)
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, int(port)))
    srv.listen(64)
    fake = FakeIo()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while True:
            conn, _ = srv.accept()
            conn.settimeout(None)
            threading.Thread(target=fake.serve, args=(conn,), daemon=True).start()
    finally:
        print("fake-io answered %d requests with garbage" % fake.answered, flush=True)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("mds", "io", "fake-io"):
        sys.exit("usage: badwire.py mds|io|fake-io HOST:PORT")
    kind, addr = sys.argv[1], sys.argv[2]
    if kind == "fake-io":
        return fake_io(addr)
    REPLY_MSG_FIELD[0] = MSG_FIELDS[kind]
    bad = 0
    for name, data, shut in frame_cases():
        ok = closed_by_server(addr, data, shut)
        print("%-34s %s" % (name, "closed" if ok else "NOT CLOSED"))
        bad += not ok
    if kind == "io":
        cases = io_cases()
        good = (IO_STAT, f_int(1, 0), b"")
    else:
        cases = [(n, t, h, b"") for n, t, h in mds_cases()]
        good = (MDS_STATFS, b"", b"")
    for name, type_, hdr, bulk in cases:
        err, msg = call(addr, type_, hdr, bulk)
        ok = bool(err) and bool(msg)
        print("%-34s err %s: %s%s" % (name, err, msg, "" if ok else "   <- expected an error"))
        bad += not ok
    if kind == "mds":
        bad += not xattr_fill(addr)
    else:
        bad += not locked_write_outside(addr)
    state = [None]
    err, msg = call(addr, *good, state=state)
    up = kind != "io" or state[0] == SERVER_UP
    print("%-34s err %s %s%s" % ("a good request afterwards", err, msg,
                                 "" if up else "   <- server state %s, not UP" % state[0]))
    bad += err != 0 or not up
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
