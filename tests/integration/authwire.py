#!/usr/bin/env python3
"""authwire.py - the connection handshake and frame tags of common/auth.h and
common/rpc_auth.c, in the Python standard library (hashlib's keyed BLAKE2b
is libsodium's generichash; the frame tags' SipHash-2-4-128 of
common/siphash.h is written out below), for the tests that speak the wire
by hand (badwire.py, rawlock.py, ...).

    connect(addr)                    a socket; authenticated when DEPFS_CLUSTER_KEY
                                     names the cluster key (lib.sh exports it)
    connect(addr, key_path=P)        with the cluster key at P (method KEY)
    connect(addr, munge_socket=S)    as the calling user, by MUNGE (method MUNGE)
    connect(addr, method=None)       plain, never authenticated

An authenticated connection is an AuthSocket: sendall() tags every whole
frame it is given (frames it cannot parse, e.g. garbage a test sends on
purpose, go out as they are) and recv() hands back the server's frames with
their tags checked and removed, so callers build and read frames exactly as
on a plain socket. handshake() raises AuthRefused with the server's reason.

    authwire.py check-vector        prints the test vectors test_auth.c and
                                    test_siphash.c hold
"""
import hashlib
import os
import socket
import struct
import subprocess
import sys

HEADER = struct.Struct("<IHHIIIIQ")  # magic version type flags hdr_len bulk_len crc req_id
MAGIC = 0x46506544
VERSION = 1
FLAG_REPLY = 0x1
FLAG_TAG = 0x2
TAG_BYTES = 16
KEY_BYTES = 32
NONCE_BYTES = 32
AUTH_HELLO, AUTH_PROOF = 240, 241
METHOD_KEY, METHOD_MUNGE, METHOD_TICKET = 1, 2, 3
TIMEOUT_S = float(os.environ.get("BADWIRE_TIMEOUT_S", "60"))


class AuthRefused(Exception):
    pass


def mac(key, label, *parts, size=32):
    return hashlib.blake2b(label.encode() + b"\0" + b"".join(parts), key=key,
                           digest_size=size).digest()


def derive(key, label):
    return mac(key, "depfs derive", label.encode())


def proof(secret, side, method, cn, sn):
    return mac(secret, "depfs proof", side.encode(), bytes([method]), cn, sn)


def session_key(secret, cn, sn):
    return mac(secret, "depfs session", cn, sn)


MASK64 = (1 << 64) - 1
FRAME_KEY_BYTES = 16


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & MASK64


def siphash128(key, msg):
    """SipHash-2-4 with a 128-bit output (libsodium's siphashx24)."""
    k0, k1 = struct.unpack("<QQ", key)
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D ^ 0xEE,
         k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def rounds(n):
        for _ in range(n):
            v[0] = (v[0] + v[1]) & MASK64; v[1] = _rotl(v[1], 13) ^ v[0]; v[0] = _rotl(v[0], 32)
            v[2] = (v[2] + v[3]) & MASK64; v[3] = _rotl(v[3], 16) ^ v[2]
            v[0] = (v[0] + v[3]) & MASK64; v[3] = _rotl(v[3], 21) ^ v[0]
            v[2] = (v[2] + v[1]) & MASK64; v[1] = _rotl(v[1], 17) ^ v[2]; v[2] = _rotl(v[2], 32)

    whole = len(msg) - len(msg) % 8
    last = msg[whole:] + bytes(7 - len(msg) % 8) + bytes([len(msg) & 0xFF])
    for m in struct.unpack("<%dQ" % (whole // 8 + 1), msg[:whole] + last):
        v[3] ^= m
        rounds(2)
        v[0] ^= m
    v[2] ^= 0xEE
    rounds(4)
    out = struct.pack("<Q", v[0] ^ v[1] ^ v[2] ^ v[3])
    v[1] ^= 0xDD
    rounds(4)
    return out + struct.pack("<Q", v[0] ^ v[1] ^ v[2] ^ v[3])


def frame_key(skey):
    return mac(skey, "depfs frame key", size=FRAME_KEY_BYTES)


def frame_tag(fkey, from_server, seq, fh, hdr):
    return siphash128(fkey, (b"S" if from_server else b"C") + struct.pack("<Q", seq) + fh + hdr)


# ---- protobuf by hand: the one copy the raw-frame tools share
def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def f_int(field, v):
    return varint(field << 3) + varint(v)


def f_bytes(field, b):
    if isinstance(b, str):
        b = b.encode()
    return varint(field << 3 | 2) + varint(len(b)) + b




def _parse(buf):
    """{field: value} of a protobuf message (varints and bytes only)."""
    out, i = {}, 0
    while i < len(buf):
        key, i = _read_varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _read_varint(buf, i)
        elif wt == 2:
            n, i = _read_varint(buf, i)
            v, i = buf[i:i + n], i + n
        else:
            raise ValueError("unexpected wire type %d" % wt)
        out[num] = v
    return out


def _read_varint(buf, i):
    v, shift = 0, 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, i
        shift += 7


def _recv_exact(s, n):
    out = bytearray()
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("connection closed in the handshake")
        out += chunk
    return bytes(out)


def _call(s, type_, body):
    s.sendall(HEADER.pack(MAGIC, VERSION, type_, 0, len(body), 0, 0, 1) + body)
    magic, _v, rtype, flags, hlen, blen, _c, _id = HEADER.unpack(_recv_exact(s, HEADER.size))
    if magic != MAGIC or rtype != type_ or not flags & FLAG_REPLY or blen:
        raise ConnectionError("bad handshake reply")
    return _parse(_recv_exact(s, hlen))


def _refused(reply):
    err = reply.get(1, 0)
    if err:
        raise AuthRefused("%s (errno %d)" % (reply.get(2, b"").decode(errors="replace"), err))


def handshake(s, method, secret=None, munge_socket=None):
    """Runs the handshake on socket s; returns (session key, role)."""
    cn = os.urandom(NONCE_BYTES)
    hello = f_int(1, method) + f_bytes(2, cn)
    if method == METHOD_MUNGE:
        secret = os.urandom(KEY_BYTES)
        cmd = ["munge"] + (["-S", munge_socket] if munge_socket else [])
        cred = subprocess.run(cmd, input=secret + cn, capture_output=True, check=True).stdout
        hello += f_bytes(3, cred.strip())
    ch = _call(s, AUTH_HELLO, hello)
    _refused(ch)
    sn = ch[3]
    if ch.get(4) != proof(secret, "S", method, cn, sn):
        raise AuthRefused("the server does not hold the secret")
    res = _call(s, AUTH_PROOF, f_bytes(1, proof(secret, "C", method, cn, sn)))
    _refused(res)
    return session_key(secret, cn, sn), res.get(3, 0)


class AuthSocket:
    """A socket whose frames carry tags (see the module's docstring)."""

    def __init__(self, sock, skey):
        self.sock, self.skey = sock, skey
        self.fkey = frame_key(skey)
        self.send_seq = self.recv_seq = 0
        self.rbuf = bytearray()  # checked bytes not yet handed out

    def settimeout(self, t):
        self.sock.settimeout(t)

    def close(self):
        self.sock.close()

    def shutdown(self, how):
        self.sock.shutdown(how)

    def fileno(self):
        return self.sock.fileno()

    def _tagged(self, data):
        out, i = bytearray(), 0
        while i + HEADER.size <= len(data):
            f = list(HEADER.unpack_from(data, i))
            end = i + HEADER.size + f[4] + f[5]
            if f[0] != MAGIC or end > len(data):
                break
            f[3] |= FLAG_TAG
            fh = HEADER.pack(*f)
            hdr = data[i + HEADER.size:i + HEADER.size + f[4]]
            out += fh + frame_tag(self.fkey, False, self.send_seq, fh, hdr)
            out += data[i + HEADER.size:end]
            self.send_seq += 1
            i = end
        return bytes(out) + data[i:]

    def sendall(self, data):
        self.sock.sendall(self._tagged(bytes(data)))

    def send(self, data):
        self.sendall(data)
        return len(data)

    def _fill(self):
        """Reads one whole frame from the server and checks its tag."""
        fh = self.sock.recv(HEADER.size, socket.MSG_WAITALL)
        if len(fh) < HEADER.size:
            return False
        f = list(HEADER.unpack(fh))
        if not f[3] & FLAG_TAG:
            raise ConnectionError("untagged frame on an authenticated connection")
        tag = _recv_exact(self.sock, TAG_BYTES)
        body = _recv_exact(self.sock, f[4] + f[5])
        if tag != frame_tag(self.fkey, True, self.recv_seq, fh, body[:f[4]]):
            raise ConnectionError("frame tag mismatch")
        self.recv_seq += 1
        f[3] &= ~FLAG_TAG
        self.rbuf += HEADER.pack(*f) + body
        return True

    def recv(self, n, flags=0):
        if not self.rbuf:
            try:
                if not self._fill():
                    return b""
            except ConnectionError:
                return b""
        out = bytes(self.rbuf[:n])
        del self.rbuf[:n]
        return out


def connect(addr, key_path=None, munge_socket=None, method="auto", timeout=TIMEOUT_S):
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=timeout)
    s.settimeout(timeout)
    if method is None:
        return s
    key_path = key_path or (os.environ.get("DEPFS_CLUSTER_KEY") if munge_socket is None else None)
    if munge_socket is not None:
        skey, _role = handshake(s, METHOD_MUNGE, munge_socket=munge_socket)
    elif key_path:
        with open(key_path, "rb") as f:
            skey, _role = handshake(s, METHOD_KEY, secret=derive(f.read(), "peer"))
    else:
        return s
    return AuthSocket(s, skey)


if __name__ == "__main__":
    if sys.argv[1:] == ["check-vector"]:
        print(mac(bytes(range(32)), "depfs test", b"abc", size=16).hex())
        print(siphash128(bytes(range(16)), bytes(range(15))).hex())
    else:
        print(__doc__)
        sys.exit(2)
