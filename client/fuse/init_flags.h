/* init_flags.h - depfs-fuse: our own /dev/fuse read/writev under libfuse
 * (fuse_session_custom_io), to grant the kernel FUSE_HANDLE_KILLPRIV_V2,
 * which libfuse 3.14 cannot negotiate, to hand the handlers the
 * kill-suid/sgid flags of the request they serve, which it does not pass on,
 * and to run a hook once the kernel took the INIT reply (libfuse has none).
 * See init_flags.c for why and for when this can go. */
#ifndef DFUSE_INIT_FLAGS_H
#define DFUSE_INIT_FLAGS_H
#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <stdbool.h>

/* Installs the read/writev pair on the session's /dev/fuse descriptor. Call
 * after fuse_session_mount and before the session loop. 0 or -errno. */
int dfuse_io_install(struct fuse_session *se);

/* Calls FN(ARG) once, on the thread that wrote the successful INIT reply,
 * right after that writev returned: the kernel applies an INIT reply inside
 * the write, so the connection's parameters are final then. Set it before
 * the session loop starts. FN must not send anything to this mount that
 * needs an answer (it runs on a loop thread: with -s the only one). */
void dfuse_io_after_init(void (*fn)(void *arg), void *arg);

/* True once the INIT reply granting FUSE_HANDLE_KILLPRIV_V2 was written:
 * from then on set-user-ID/set-group-ID bits are ours to clear. */
bool dfuse_io_killpriv_v2(void);

/* True when the request the calling thread is serving is a write, an
 * O_TRUNC open/create or a truncate by a caller without CAP_FSETID, i.e. the
 * kernel asks us to clear set-user-ID and (group-executable) set-group-ID
 * bits (FUSE_WRITE_KILL_SUIDGID, FUSE_OPEN_KILL_SUIDGID, FATTR_KILL_SUIDGID).
 * Only meaningful inside a request handler. */
bool dfuse_req_kill_suidgid(void);

#endif
