/* init_flags.c - depfs-fuse: the /dev/fuse read and writev that libfuse
 * calls instead of its own (fuse_session_custom_io, libfuse >= 3.14).
 *
 * Why it exists. Before every write(2) to a file the kernel asks whether
 * privileges must be dropped (file_remove_privs -> cap_inode_need_killpriv):
 * a FUSE getxattr("security.capability"), one extra round trip to this
 * daemon per write, unless the inode is marked S_NOSEC. The kernel marks
 * inodes S_NOSEC only on a superblock with SB_NOSEC, and FUSE sets SB_NOSEC
 * only when the daemon answers INIT with FUSE_HANDLE_KILLPRIV_V2: the file
 * system then promises to clear set-user-ID/set-group-ID bits itself, told
 * by the kernel through FUSE_WRITE_KILL_SUIDGID (write), FUSE_OPEN_KILL_SUIDGID
 * (O_TRUNC open/create) and FATTR_KILL_SUIDGID (truncate). libfuse 3.14
 * (Debian 12) knows neither the capability (no FUSE_CAP_HANDLE_KILLPRIV_V2)
 * nor passes those write/open flags to the handlers. So:
 *   read    notes, per thread, whether the request just read carries one of
 *           the kill flags (libfuse processes a request on the thread that
 *           read it, before that thread reads again: fuse_session_loop and
 *           fuse_do_work in fuse_loop_mt.c, with or without clone_fd), and
 *           the INIT request's unique and whether the kernel offers
 *           FUSE_HANDLE_KILLPRIV_V2;
 *   writev  adds FUSE_HANDLE_KILLPRIV_V2 to that INIT's successful reply
 *           when it was offered. Nothing else in the reply changes. Once
 *           the reply is written it runs the dfuse_io_after_init hook.
 * Checked against libfuse 3.14.0 lib/fuse_lowlevel.c: custom_io only sets
 * se->io and se->fd (we pass the descriptor fuse_session_mount opened, so
 * unmount and destroy close it as before); every reply goes through
 * fuse_send_msg -> se->io->writev (on the clone_fd channel's descriptor when
 * there is one); every request through fuse_session_receive_buf_int ->
 * se->io->read, because without splice_receive/splice_send libfuse offers
 * no splice (and ops.c turns splicing off anyway). The INIT reply is the
 * iovec pair {fuse_out_header, fuse_init_out} built by send_reply_ok.
 * With the bit granted, ops.c/setid.c clear the bits as the kernel asks.
 *
 * This file can go once the distribution's libfuse has
 * FUSE_CAP_HANDLE_KILLPRIV_V2 (later 3.x releases; not Debian 12's 3.14)
 * and hands the handlers the kill flags; op_init would then just want that
 * capability. */
#define FUSE_USE_VERSION 312
#include "init_flags.h"

#include <errno.h>
#include <linux/fuse.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log.h"

#define DFUSE_INIT_REPLY_IOVS 2 /* {fuse_out_header, fuse_init_out} */

typedef struct dfuse_io_state {
    _Atomic uint64_t init_unique;  /* INIT request being answered, 0: none */
    _Atomic uint32_t init_offered; /* fuse_init_in.flags of that INIT */
    _Atomic bool killpriv_v2;      /* granted in the INIT reply written */
    void (*after_init)(void *);    /* dfuse_io_after_init; set before the loop */
    void *after_init_arg;
} dfuse_io_state;

static dfuse_io_state io_state;

/* Kill flags of the request this thread is serving (set by io_read). */
static _Thread_local bool req_kill_suidgid;

void dfuse_io_after_init(void (*fn)(void *arg), void *arg)
{
    io_state.after_init = fn;
    io_state.after_init_arg = arg;
}

bool dfuse_io_killpriv_v2(void)
{
    return io_state.killpriv_v2;
}

bool dfuse_req_kill_suidgid(void)
{
    return req_kill_suidgid;
}

/* The request's argument when the read holds at least `need` bytes of it. */
static const void *req_arg(const void *buf, size_t n, size_t need)
{
    if (n < sizeof(struct fuse_in_header) + need)
        return NULL;
    return (const char *)buf + sizeof(struct fuse_in_header);
}

static void note_init(const struct fuse_in_header *h, const void *buf, size_t n)
{
    const struct fuse_init_in *in = req_arg(buf, n, offsetof(struct fuse_init_in, flags) +
                                                        sizeof(in->flags));
    if (!in)
        return;
    io_state.init_offered = in->flags;
    io_state.init_unique = h->unique;
}

/* Whether the request asks for the set-id bits to be cleared. */
static bool wants_kill(const struct fuse_in_header *h, const void *buf, size_t n)
{
    switch (h->opcode) {
    case FUSE_WRITE: {
        const struct fuse_write_in *w = req_arg(buf, n, offsetof(struct fuse_write_in, write_flags) +
                                                            sizeof(w->write_flags));
        return w && (w->write_flags & FUSE_WRITE_KILL_SUIDGID);
    }
    case FUSE_OPEN: {
        const struct fuse_open_in *o = req_arg(buf, n, sizeof(*o));
        return o && (o->open_flags & FUSE_OPEN_KILL_SUIDGID);
    }
    case FUSE_CREATE: {
        const struct fuse_create_in *c = req_arg(buf, n, sizeof(*c));
        return c && (c->open_flags & FUSE_OPEN_KILL_SUIDGID);
    }
    case FUSE_SETATTR: {
        const struct fuse_setattr_in *s = req_arg(buf, n, sizeof(s->valid));
        return s && (s->valid & FATTR_KILL_SUIDGID);
    }
    default:
        return false;
    }
}

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
    (void)userdata;
    ssize_t n = read(fd, buf, len);
    int saved = errno; /* libfuse looks at errno after we return */
    req_kill_suidgid = false;
    if (n >= (ssize_t)sizeof(struct fuse_in_header)) {
        const struct fuse_in_header *h = buf;
        if (h->opcode == FUSE_INIT)
            note_init(h, buf, (size_t)n);
        else
            req_kill_suidgid = wants_kill(h, buf, (size_t)n);
    }
    errno = saved;
    return n;
}

/* The INIT reply we are waiting for, with a fuse_init_out we can patch? */
static bool is_init_reply(const struct iovec *iov, int count)
{
    uint64_t unique = io_state.init_unique;
    if (unique == 0 || count != DFUSE_INIT_REPLY_IOVS)
        return false;
    if (iov[0].iov_len != sizeof(struct fuse_out_header))
        return false;
    const struct fuse_out_header *out = iov[0].iov_base;
    return out->unique == unique && out->error == 0 &&
           iov[1].iov_len >= offsetof(struct fuse_init_out, flags) + sizeof(uint32_t) &&
           iov[1].iov_len <= sizeof(struct fuse_init_out);
}

/* Writes the INIT reply, with FUSE_HANDLE_KILLPRIV_V2 when offered. */
static ssize_t write_init_reply(int fd, const struct iovec *iov)
{
    struct fuse_init_out init;
    memset(&init, 0, sizeof(init));
    memcpy(&init, iov[1].iov_base, iov[1].iov_len);
    bool grant = (io_state.init_offered & FUSE_HANDLE_KILLPRIV_V2) != 0;
    if (grant)
        init.flags |= FUSE_HANDLE_KILLPRIV_V2;
    struct iovec patched[DFUSE_INIT_REPLY_IOVS] = {iov[0], {.iov_base = &init, .iov_len = iov[1].iov_len}};
    ssize_t n = writev(fd, patched, DFUSE_INIT_REPLY_IOVS);
    int saved = errno;
    io_state.init_unique = 0;
    if (n >= 0 && grant)
        io_state.killpriv_v2 = true;
    if (n >= 0)
        log_info("kernel %s FUSE_HANDLE_KILLPRIV_V2%s", grant ? "offered" : "did not offer",
                 grant ? ": granted (set-id bits are cleared here, no per-write "
                         "security.capability lookups)"
                       : ": the kernel clears set-id bits itself");
    if (n >= 0 && io_state.after_init != NULL)
        io_state.after_init(io_state.after_init_arg); /* one INIT per session */
    errno = saved;
    return n;
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
    (void)userdata;
    if (is_init_reply(iov, count))
        return write_init_reply(fd, iov);
    return writev(fd, iov, count);
}

int dfuse_io_install(struct fuse_session *se)
{
    static const struct fuse_custom_io io = {.read = io_read, .writev = io_writev};
    int fd = fuse_session_fd(se);
    int rc = fuse_session_custom_io(se, &io, fd);
    if (rc != 0)
        log_err("cannot install our /dev/fuse I/O: %s", strerror(rc < 0 ? -rc : rc));
    return rc;
}
