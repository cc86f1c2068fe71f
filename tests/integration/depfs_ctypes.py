"""depfs_ctypes.py - a thin Python (ctypes) client of libdepfs for the
fault-injection tests: a libdepfs client of its own (own client id, own
status vector of failed servers), independent of the FUSE mount, so a test
can kill it without touching the mount, and can read through a client that
never saw the servers die.

  fs = Depfs(lib_path, conf_path)
  fh = fs.open("/dir/file", os.O_RDWR)
  fs.pwrite(fh, data, off); fs.flush(fh); data = fs.pread(fh, n, off)
  fs.close(fh); fs.unlink("/dir/file"); fs.unmount()

Errors raise OSError(errno, depfs_last_error()), like os.pread does."""
import ctypes
import os


class _Options(ctypes.Structure):
    """depfs_options of client/lib/depfs.h, field for field: the library
    reads every one of them."""
    _fields_ = [("config_path", ctypes.c_char_p),
                ("default_n", ctypes.c_uint),
                ("default_k", ctypes.c_uint),
                ("default_su", ctypes.c_uint32),
                ("ignore_locks", ctypes.c_bool),
                ("count_lookups", ctypes.c_bool),
                ("statahead_ms", ctypes.c_uint),
                ("names_moved", ctypes.c_void_p),
                ("names_moved_arg", ctypes.c_void_p)]


def default_lib(top):
    build = os.environ.get("DEPFS_BIN_DIR")
    if build:
        return os.path.join(os.path.dirname(build.rstrip("/")), "lib", "libdepfs.so")
    return os.path.join(top, "build", "lib", "libdepfs.so")


class Depfs:
    def __init__(self, lib_path, conf_path):
        self.lib = lib = ctypes.CDLL(lib_path)
        vp, sz, u64 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64
        lib.depfs_mount.argtypes = [ctypes.POINTER(_Options), ctypes.POINTER(vp)]
        lib.depfs_unmount.argtypes = [vp]
        lib.depfs_last_error.restype = ctypes.c_char_p
        lib.depfs_open.argtypes = [vp, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(vp)]
        lib.depfs_read.argtypes = [vp, ctypes.c_void_p, sz, u64]
        lib.depfs_read.restype = ctypes.c_ssize_t
        lib.depfs_write.argtypes = [vp, ctypes.c_void_p, sz, u64]
        lib.depfs_write.restype = ctypes.c_ssize_t
        for name in ("depfs_flush", "depfs_fsync", "depfs_close"):
            getattr(lib, name).argtypes = [vp]
        lib.depfs_unlink_path.argtypes = [vp, ctypes.c_char_p]
        lib.depfs_fh_ino.argtypes = [vp]
        lib.depfs_fh_ino.restype = u64
        self._conf = conf_path.encode()
        opt = _Options(self._conf, 0, 0, 0, False, False)
        self.fs = vp()
        self._check(lib.depfs_mount(ctypes.byref(opt), ctypes.byref(self.fs)), "depfs_mount")

    def _check(self, rc, what):
        if rc < 0:
            msg = self.lib.depfs_last_error() or b""
            raise OSError(-rc, f"{what}: {os.strerror(-rc)} ({msg.decode(errors='replace')})")
        return rc

    def open(self, path, flags=os.O_RDONLY, mode=0o644):
        fh = ctypes.c_void_p()
        self._check(self.lib.depfs_open(self.fs, path.encode(), flags, mode, ctypes.byref(fh)),
                    f"depfs_open {path}")
        return fh

    def pread(self, fh, n, off):
        buf = ctypes.create_string_buffer(n)
        got = self._check(self.lib.depfs_read(fh, buf, n, off), f"depfs_read off={off} len={n}")
        return buf.raw[:got]

    def pwrite(self, fh, data, off):
        return self._check(self.lib.depfs_write(fh, data, len(data), off),
                           f"depfs_write off={off} len={len(data)}")

    def flush(self, fh):
        return self._check(self.lib.depfs_flush(fh), "depfs_flush")

    def fsync(self, fh):
        return self._check(self.lib.depfs_fsync(fh), "depfs_fsync")

    def close(self, fh):
        return self._check(self.lib.depfs_close(fh), "depfs_close")

    def unlink(self, path):
        return self._check(self.lib.depfs_unlink_path(self.fs, path.encode()), f"depfs_unlink {path}")

    def ino(self, fh):
        return self.lib.depfs_fh_ino(fh)

    def read_file(self, path, chunk=1 << 20):
        fh = self.open(path)
        try:
            out, off = [], 0
            while True:
                b = self.pread(fh, chunk, off)
                if not b:
                    return b"".join(out)
                out.append(b)
                off += len(b)
        finally:
            self.close(fh)

    def unmount(self):
        if self.fs:
            self.lib.depfs_unmount(self.fs)
            self.fs = None
