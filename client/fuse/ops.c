/* ops.c - depfs-fuse: every FUSE low-level handler, mapped onto libdepfs.
 *
 * Owns: the ino/attr translation (st_blksize = one stripe of data; st_blocks
 * is libdepfs's: the data's share of the strip files' allocation), caller
 * credentials, read once per request (their groups: caller_groups.c),
 * open-file handles in fi->fh, readdir by library cookie, the xattr
 * pass-through, fallocate modes, the connection capabilities negotiated in
 * init, and when set-id bits are cleared (setid.c does the clearing,
 * init_flags.c tells us when the kernel asks). No server state lives here: inode numbers are MDS ids;
 * the kernel's lookup counts are libdepfs's (depfs_options.count_lookups),
 * which keeps the handle tag of every inode the kernel holds until its
 * FORGET (depfs_forget): the kernel names inodes by number ever after. */
#define FUSE_USE_VERSION 312
#include "ops.h"

#include <assert.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "caller_groups.h"
#include "init_flags.h"
#include "kernel_names.h"
#include "log.h"
#include "setid.h"

#define DFUSE_FALLBACK_BLKSIZE (64u * 1024u)
#define DFUSE_MAX_READDIR_BYTES (1024u * 1024u)
#define DFUSE_MAX_XATTR_BYTES (64u * 1024u)     /* XATTR_SIZE_MAX */
#define DFUSE_MAX_XATTR_LIST_BYTES (64u * 1024u)
#define DFUSE_MAX_ERRNO 4095
/* Attributes a reply brought (a directory's from this client's own change
 * in it, a file's from its open) answer the kernel's question that follows
 * (the caller's next operation), not a later one. */
#define DFUSE_KEPT_ATTR_MAX_AGE_MS 100u
#define DFUSE_CAPS_XATTR "security.capability"
#define DFUSE_INVAL_ATTR_ONLY (-1) /* notify_inval_inode offset: attributes, no pages */
/* Kernel read-ahead and async direct I/O requests in flight at once (the
 * kernel default is 12); the library fans each out to n servers. */
#define DFUSE_MAX_BACKGROUND 64u
/* Open flags the library understands; the rest (O_LARGEFILE, O_NOFOLLOW,
 * O_CLOEXEC, O_CREAT/O_EXCL already acted on by the kernel...) stay here. */
#define DFUSE_OPEN_FLAGS_MASK (O_ACCMODE | O_TRUNC | O_APPEND | O_DIRECT | O_SYNC | O_DSYNC)

static pthread_key_t read_buf_key;
static pthread_once_t read_buf_once = PTHREAD_ONCE_INIT;

/* ---------------------------------------------------------------- helpers */

static dfuse_ctx *req_ctx(fuse_req_t req)
{
    dfuse_ctx *ctx = fuse_req_userdata(req);
    assert(ctx != NULL && ctx->fs != NULL);
    return ctx;
}

static depfs_fh_t *fi_fh(const struct fuse_file_info *fi)
{
    return fi ? (depfs_fh_t *)(uintptr_t)fi->fh : NULL;
}

/* Library result (negative errno) -> positive errno for the kernel. */
static int to_errno(long long ret)
{
    if (ret >= 0)
        return 0;
    if (ret < -DFUSE_MAX_ERRNO)
        return EIO;
    return (int)-ret;
}

static void reply_status(fuse_req_t req, long long ret)
{
    fuse_reply_err(req, to_errno(ret));
}

/* A request by inode number for an inode that is gone, or replaced at its
 * name (unlinked or renamed over elsewhere, `depfs migrate`: ESTALE from
 * the MDS), came through a name the kernel still caches: ESTALE makes the
 * kernel look the name up again and retry (open, opendir, stat, chmod and
 * the other setattrs, readlink, xattrs), as on NFS. (A request naming a
 * parent directory that is gone gets ESTALE from the MDS itself: there
 * ENOENT means the name.) */
static long long stale_if_gone(long long rc)
{
    return rc == -ENOENT ? -ESTALE : rc;
}

static uint32_t layout_blksize(const depfs_layout_info *li)
{
    uint64_t bytes = (uint64_t)li->k * li->stripe_unit;
    if (bytes == 0 || bytes > INT32_MAX)
        return 0;
    return (uint32_t)bytes;
}

/* Fills the fields the kernel relies on that the library leaves to us. */
static void fix_stat(dfuse_ctx *ctx, struct stat *st)
{
    /* libdepfs fills st_blksize = k * su from the layout that comes with
     * every attr reply of a regular file; the rest get the mount default.
     * (The kernel rounds st_blksize down to a power of two.) */
    if (!S_ISREG(st->st_mode) || st->st_blksize <= 0)
        st->st_blksize = (blksize_t)ctx->default_blksize;
    /* every mode the kernel learns passes here: writes clear set-id bits by it */
    dfuse_setid_note((uint64_t)st->st_ino, st->st_mode);
}

static void reply_attr(fuse_req_t req, struct stat *st)
{
    dfuse_ctx *ctx = req_ctx(req);
    fix_stat(ctx, st);
    fuse_reply_attr(req, st, ctx->attr_timeout_s);
}

static void fill_entry(dfuse_ctx *ctx, struct fuse_entry_param *e, struct stat *st)
{
    memset(e, 0, sizeof(*e));
    fix_stat(ctx, st);
    e->ino = (fuse_ino_t)st->st_ino;
    e->generation = 0;
    e->attr = *st;
    e->attr_timeout = ctx->attr_timeout_s;
    e->entry_timeout = ctx->entry_timeout_s;
}

/* The library counted a lookup of ino for a reply the kernel did not
 * take (the caller was interrupted): it holds none for it. */
static void entry_not_taken(fuse_req_t req, uint64_t ino)
{
    depfs_forget(req_ctx(req)->fs, ino, 1);
}

/* An entry whose attributes are age_ms old already (libdepfs's statahead):
 * the kernel keeps it that much less long, never longer than its timeouts
 * from when the MDS answered. */
static void reply_entry_aged(fuse_req_t req, struct stat *st, unsigned age_ms)
{
    struct fuse_entry_param e;
    fill_entry(req_ctx(req), &e, st);
    if (e.ino == 0) {
        /* a zero ino would mean "negative entry" to the kernel */
        log_err("library returned inode 0 for a new entry");
        fuse_reply_err(req, EIO);
        return;
    }
    double age_s = age_ms / DFUSE_MS_PER_S;
    e.attr_timeout = e.attr_timeout > age_s ? e.attr_timeout - age_s : 0;
    e.entry_timeout = e.entry_timeout > age_s ? e.entry_timeout - age_s : 0;
    if (fuse_reply_entry(req, &e) != 0)
        entry_not_taken(req, e.ino);
}

static void reply_entry(fuse_req_t req, struct stat *st)
{
    reply_entry_aged(req, st, 0);
}

/* The caller of a kernel request: it owns what it creates, and the MDS
 * checks its permissions (mds/caller.h says when it trusts us to say). */
static void req_cred(fuse_req_t req, depfs_cred *cr)
{
    const struct fuse_ctx *fc = fuse_req_ctx(req);
    memset(cr, 0, sizeof(*cr));
    cr->uid = fc->uid;
    cr->gid = fc->gid;
    int n = dfuse_caller_groups(fc->pid, (int)DEPFS_MAX_GROUPS, cr->groups);
    if (n < 0)
        n = 0; /* unsupported or the caller is gone: primary gid only */
    cr->ngroups = (unsigned)n > DEPFS_MAX_GROUPS ? DEPFS_MAX_GROUPS : (unsigned)n;
}

/* Every op that reaches the MDS other than through an open handle acts for
 * its kernel caller: this thread's library calls carry its credentials
 * until the next op on this thread sets them again (handles act for their
 * opener: depfs.h depfs_act_as). cr: the credentials, for an op that also
 * names the owner of what it makes (read once per request). */
static void act_for_cred(fuse_req_t req, depfs_cred *cr)
{
    req_cred(req, cr);
    if (depfs_act_as(cr) < 0)
        log_warn("cannot act for uid %u: %s", (unsigned)cr->uid, depfs_last_error());
    /* the kernel thread: after a names refusal only it goes on through the
     * moved directory (depfs.h depfs_act_caller) */
    depfs_act_caller((uint64_t)fuse_req_ctx(req)->pid);
}

static void act_for(fuse_req_t req)
{
    depfs_cred cr;
    act_for_cred(req, &cr);
}

static int lib_open_flags(int fuse_flags)
{
    return fuse_flags & DFUSE_OPEN_FLAGS_MASK;
}

static void set_open_info(struct fuse_file_info *fi, depfs_fh_t *fh)
{
    fi->fh = (uint64_t)(uintptr_t)fh;
    /* O_DIRECT bypasses the page cache; otherwise the cache is dropped on
     * every open so another client's writes are seen (close-to-open). */
    fi->direct_io = (fi->flags & O_DIRECT) ? 1 : 0;
    fi->keep_cache = 0;
}

static void read_buf_free(void *p)
{
    free(p);
}

static void read_buf_key_init(void)
{
    if (pthread_key_create(&read_buf_key, read_buf_free) != 0)
        abort(); /* only at start-up, out of keys: nothing sensible left */
}

/* A per-thread DFUSE_MAX_IO_BYTES buffer, so reads do not malloc 1 MiB each. */
static char *thread_read_buf(void)
{
    pthread_once(&read_buf_once, read_buf_key_init);
    char *buf = pthread_getspecific(read_buf_key);
    if (buf)
        return buf;
    buf = malloc(DFUSE_MAX_IO_BYTES);
    if (buf && pthread_setspecific(read_buf_key, buf) != 0) {
        free(buf);
        buf = NULL;
    }
    return buf;
}

/* ----------------------------------------------------------- life cycle */

void dfuse_ctx_init(dfuse_ctx *ctx)
{
    assert(ctx->fs != NULL);
    depfs_layout_info li;
    memset(&li, 0, sizeof(li));
    /* the root's layout is the cluster default unless set on the root */
    if (depfs_get_layout(ctx->fs, DEPFS_ROOT_INO, &li) < 0)
        log_warn("no layout for the root: %s", depfs_last_error());
    if (ctx->layout_k)
        li.k = ctx->layout_k;
    if (ctx->layout_su)
        li.stripe_unit = ctx->layout_su;
    ctx->default_blksize = layout_blksize(&li);
    if (ctx->default_blksize == 0)
        ctx->default_blksize = DFUSE_FALLBACK_BLKSIZE;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
    (void)userdata;
    conn->max_write = DFUSE_MAX_IO_BYTES;
    conn->max_read = DFUSE_MAX_IO_BYTES;
    if (conn->max_readahead > DFUSE_MAX_IO_BYTES)
        conn->max_readahead = DFUSE_MAX_IO_BYTES;
    conn->max_background = DFUSE_MAX_BACKGROUND;
    /* Writeback caching would hold dirty pages past close and break
     * close-to-open for other clients; splicing buys nothing here. */
    conn->want &= ~(unsigned)(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_SPLICE_READ |
                              FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
    /* Not the old FUSE_HANDLE_KILLPRIV (libfuse's default): with it the
     * kernel leaves write/truncate/chown set-id clearing to us without
     * saying when. init_flags.c grants FUSE_HANDLE_KILLPRIV_V2 instead when
     * the kernel offers it (it then says when); otherwise the kernel clears
     * the bits itself. */
    conn->want &= ~(unsigned)FUSE_CAP_HANDLE_KILLPRIV;
    if (conn->capable & FUSE_CAP_ASYNC_READ)
        conn->want |= FUSE_CAP_ASYNC_READ;
    if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
        conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
    if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
        conn->want |= FUSE_CAP_PARALLEL_DIROPS;
    /* READDIRPLUS (op_readdirplus) for a listing's first page, and for the
     * next ones once its names are looked at (ls -l, find, du): the
     * kernel's adaptive mode, so a plain ls does not load attributes */
    if (conn->capable & FUSE_CAP_READDIRPLUS)
        conn->want |= FUSE_CAP_READDIRPLUS;
    if (conn->capable & FUSE_CAP_READDIRPLUS_AUTO)
        conn->want |= FUSE_CAP_READDIRPLUS_AUTO;
    log_info("fuse connection: protocol %u.%u, max_write %u, max_readahead %u, readdirplus %s",
             conn->proto_major, conn->proto_minor, conn->max_write, conn->max_readahead,
             !(conn->want & FUSE_CAP_READDIRPLUS) ? "off"
             : (conn->want & FUSE_CAP_READDIRPLUS_AUTO) ? "adaptive" : "always");
}

/* ------------------------------------------------------------- namespace */

/* The kernel is given name in parent for st's inode: a regular file's or
 * a directory's is kept, to be dropped from the kernel once the file's
 * names move or the directory is gone (kernel_names.h). */
static void note_name(fuse_req_t req, fuse_ino_t parent, const char *name, const struct stat *st)
{
    if (S_ISREG(st->st_mode) || S_ISDIR(st->st_mode))
        dfuse_names_given(req_ctx(req)->names, (uint64_t)st->st_ino, (uint64_t)parent, name);
}

/* The result of a request naming parent as the directory of a name:
 * ESTALE says the directory is gone, or it or a directory above it was
 * moved by another client (the MDS), and the kernel's names of it are
 * dropped before the caller hears (kernel_names.h): its next walk looks
 * the directory up. Returns rc. */
static int parent_checked(fuse_req_t req, fuse_ino_t parent, int rc)
{
    if (rc == -ESTALE)
        dfuse_names_gone(req_ctx(req)->names, (uint64_t)parent, NULL);
    return rc;
}

/* Whether name may be in directory dir now (a lookup that is not the
 * kernel's): false only when the MDS says it is not, or dir is gone. */
static bool may_be_in(depfs_t *fs, uint64_t dir, const char *name)
{
    struct stat st;
    int rc = depfs_lookup_probe(fs, dir, name, &st);
    return rc != -ENOENT && rc != -ESTALE;
}

/* A lookup of name in directory parent, which is gone or moved (ESTALE):
 * its names are dropped from the kernel first (kernel_names.h). The kernel
 * walks the path again on ESTALE, but not when this lookup is a mkdir's,
 * mknod's or symlink's of its new name: that call would fail. So when name
 * is in neither the directory (still there under another name: a process
 * in it goes on there) nor the one the kernel's path to it names now, the
 * answer is ENOENT, true for either, and such a call goes on to its own
 * request through the old directory: the MDS refuses that (ESTALE; this
 * caller's pass is taken back, depfs.h depfs_names_unpass) and the kernel
 * retries it, walking the path again. Otherwise, or when the path is not
 * known, ESTALE. */
static int lookup_in_stale(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    dfuse_ctx *ctx = req_ctx(req);
    dfuse_name had[DFUSE_NAMES_PER_INODE];
    unsigned n = dfuse_names_gone(ctx->names, (uint64_t)parent, had);
    if (n == 0 || may_be_in(ctx->fs, (uint64_t)parent, name))
        return -ESTALE;
    for (unsigned i = 0; i < n; i++) {
        struct stat dir;
        int rc = depfs_lookup_probe(ctx->fs, had[i].parent, had[i].name, &dir);
        if (rc == -ESTALE) /* moved too: the kernel walks (ESTALE), no pass through it */
            depfs_names_unpass(ctx->fs, had[i].parent);
        if (rc == -ENOENT || (rc == 0 && !S_ISDIR(dir.st_mode)))
            continue; /* the path ends there now */
        if (rc < 0 || may_be_in(ctx->fs, (uint64_t)dir.st_ino, name))
            return -ESTALE;
    }
    depfs_names_unpass(ctx->fs, (uint64_t)parent);
    log_debug("lookup of '%s' in gone or moved directory %llu: in neither it nor where its "
              "path leads now: ENOENT", name, (unsigned long long)parent);
    return -ENOENT;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    act_for(req);
    struct stat st;
    unsigned age_ms = 0;
    int rc = depfs_lookup_aged(req_ctx(req)->fs, parent, name, &st, &age_ms);
    if (rc == -ESTALE)
        rc = lookup_in_stale(req, parent, name);
    if (rc < 0) {
        reply_status(req, rc); /* no negative caching: other clients create */
        return;
    }
    note_name(req, parent, name, &st);
    reply_entry_aged(req, &st, age_ms);
}

/* The kernel gives lookups back: libdepfs may drop the inode's handle
 * tag once it holds none (and no handle of it is open). */
static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    depfs_forget(req_ctx(req)->fs, (uint64_t)ino, nlookup);
    fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
    depfs_t *fs = req_ctx(req)->fs;
    for (size_t i = 0; i < count; i++)
        depfs_forget(fs, (uint64_t)forgets[i].ino, forgets[i].nlookup);
    fuse_reply_none(req);
}

/* How old attributes a reply brought may be when the kernel asks for them
 * right after (a directory's from this client's own change in it,
 * depfs_dir_attr_take; a file's from its open, depfs_open_attr_take):
 * the mount's attr_timeout (0: never), at most DFUSE_KEPT_ATTR_MAX_AGE_MS. */
static unsigned kept_attr_max_age_ms(const dfuse_ctx *ctx)
{
    double ms = ctx->attr_timeout_s * DFUSE_MS_PER_S;
    return ms < DFUSE_KEPT_ATTR_MAX_AGE_MS ? (unsigned)ms : DFUSE_KEPT_ATTR_MAX_AGE_MS;
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    dfuse_ctx *ctx = req_ctx(req);
    struct stat st;
    depfs_fh_t *fh = fi_fh(fi);
    /* right after a create or remove in a directory the kernel asks for it
     * again (default_permissions): that change's reply brought it; right
     * after an open (op_open) the open's reply did */
    if (!fh && depfs_dir_attr_take(ctx->fs, ino, kept_attr_max_age_ms(ctx), &st) == 0) {
        reply_attr(req, &st);
        return;
    }
    if (depfs_open_attr_take(ctx->fs, ino, kept_attr_max_age_ms(ctx), &st) == 0) {
        reply_attr(req, &st);
        return;
    }
    act_for(req);
    /* an open handle knows about data still held for write-behind */
    int rc = fh ? depfs_fstat(fh, &st) : stale_if_gone(depfs_getattr(req_ctx(req)->fs, ino, &st));
    if (rc < 0) {
        reply_status(req, rc);
        return;
    }
    reply_attr(req, &st);
}

static unsigned setattr_bits(int to_set)
{
    static const struct { int fuse_bit; unsigned depfs_bit; } map[] = {
        {FUSE_SET_ATTR_MODE, DEPFS_SET_MODE},
        {FUSE_SET_ATTR_UID, DEPFS_SET_UID},
        {FUSE_SET_ATTR_GID, DEPFS_SET_GID},
        {FUSE_SET_ATTR_SIZE, DEPFS_SET_SIZE},
        {FUSE_SET_ATTR_ATIME, DEPFS_SET_ATIME},
        {FUSE_SET_ATTR_MTIME, DEPFS_SET_MTIME},
        {FUSE_SET_ATTR_ATIME_NOW, DEPFS_SET_ATIME_NOW},
        {FUSE_SET_ATTR_MTIME_NOW, DEPFS_SET_MTIME_NOW},
        {FUSE_SET_ATTR_CTIME, DEPFS_SET_CTIME},
    };
    unsigned out = 0;
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (to_set & map[i].fuse_bit)
            out |= map[i].depfs_bit;
    /* *_NOW implies the field is being set */
    if (out & DEPFS_SET_ATIME_NOW)
        out |= DEPFS_SET_ATIME;
    if (out & DEPFS_SET_MTIME_NOW)
        out |= DEPFS_SET_MTIME;
    return out;
}

/* Whether this setattr clears set-id bits (setid.c says which): a truncate
 * the kernel flags (FATTR_KILL_SUIDGID: caller without CAP_FSETID), and a
 * chown, always, as on Linux, unless the mode is being set with it (then
 * the kernel chose the bits). */
static bool setattr_kills(int to_set)
{
    if ((to_set & FUSE_SET_ATTR_SIZE) && dfuse_req_kill_suidgid())
        return true;
    return (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) && !(to_set & FUSE_SET_ATTR_MODE);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi)
{
    act_for(req);
    dfuse_ctx *ctx = req_ctx(req);
    depfs_fh_t *fh = fi_fh(fi);
    unsigned bits = setattr_bits(to_set);
    struct stat st;
    int rc = 0;

    if ((bits & DEPFS_SET_SIZE) && attr->st_size < 0) {
        rc = -EINVAL;
        goto out;
    }
    if ((bits & DEPFS_SET_SIZE) && fh) {
        /* through the handle, so its write-behind data is cut as well */
        rc = depfs_ftruncate(fh, (uint64_t)attr->st_size);
        if (rc < 0)
            goto out;
        bits &= ~DEPFS_SET_SIZE;
    }
    if (bits != 0) {
        rc = depfs_setattr(ctx->fs, ino, attr, bits, &st);
        if (rc < 0)
            goto out;
    }
    rc = fh ? depfs_fstat(fh, &st) : (bits != 0 ? 0 : depfs_getattr(ctx->fs, ino, &st));
    if (rc == 0 && setattr_kills(to_set)) {
        int killed = dfuse_setid_kill(ctx->fs, ino, &st);
        rc = killed < 0 ? killed : 0;
    }
out:
    if (rc < 0) {
        reply_status(req, stale_if_gone(rc));
        return;
    }
    reply_attr(req, &st);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
    act_for(req);
    char target[PATH_MAX + 1];
    int rc = depfs_readlink(req_ctx(req)->fs, ino, target, sizeof(target));
    if (rc < 0) {
        reply_status(req, stale_if_gone(rc));
        return;
    }
    target[sizeof(target) - 1] = '\0';
    fuse_reply_readlink(req, target);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
    depfs_cred cr;
    struct stat st;
    act_for_cred(req, &cr);
    int rc = parent_checked(req, parent,
                            depfs_mknod(req_ctx(req)->fs, parent, name, mode, rdev, &cr, &st));
    if (rc < 0) {
        reply_status(req, rc);
        return;
    }
    note_name(req, parent, name, &st);
    reply_entry(req, &st);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    depfs_cred cr;
    struct stat st;
    act_for_cred(req, &cr);
    int rc = parent_checked(req, parent,
                            depfs_mkdir(req_ctx(req)->fs, parent, name, mode, &cr, &st));
    if (rc < 0) {
        reply_status(req, rc);
        return;
    }
    note_name(req, parent, name, &st);
    reply_entry(req, &st);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
    depfs_cred cr;
    struct stat st;
    act_for_cred(req, &cr);
    int rc = parent_checked(req, parent,
                            depfs_symlink(req_ctx(req)->fs, parent, name, link, &cr, &st));
    if (rc < 0) {
        reply_status(req, rc);
        return;
    }
    reply_entry(req, &st);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
    act_for(req);
    struct stat st;
    int rc = parent_checked(req, newparent,
                            depfs_link(req_ctx(req)->fs, ino, newparent, newname, &st));
    if (rc < 0) {
        reply_status(req, rc);
        return;
    }
    note_name(req, newparent, newname, &st);
    reply_entry(req, &st);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    act_for(req);
    reply_status(req, parent_checked(req, parent, depfs_unlink(req_ctx(req)->fs, parent, name)));
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    act_for(req);
    reply_status(req, parent_checked(req, parent, depfs_rmdir(req_ctx(req)->fs, parent, name)));
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags)
{
    act_for(req);
    if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
        fuse_reply_err(req, EINVAL); /* RENAME_WHITEOUT: overlayfs only */
        return;
    }
    /* which of the two is gone the error does not say: both names dropped */
    int rc = depfs_rename(req_ctx(req)->fs, parent, name, newparent, newname, flags);
    reply_status(req, parent_checked(req, newparent, parent_checked(req, parent, rc)));
}

/* ------------------------------------------------------------ open files */

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi)
{
    dfuse_ctx *ctx = req_ctx(req);
    depfs_cred cr;
    struct stat st;
    depfs_fh_t *fh = NULL;
    uint64_t counted = 0; /* the inode whose lookup the library counted */
    act_for_cred(req, &cr);
    int flags = lib_open_flags(fi->flags);
    int rc = parent_checked(req, parent,
                            depfs_create(ctx->fs, parent, name, mode, flags, &cr, NULL, &st, &fh));
    if (rc == 0)
        counted = (uint64_t)st.st_ino;
    if (rc == -EEXIST && !(fi->flags & O_EXCL)) {
        /* lost a race with another client: open what it created */
        rc = depfs_lookup(ctx->fs, parent, name, &st);
        if (rc == 0)
            counted = (uint64_t)st.st_ino;
        if (rc == 0 && S_ISDIR(st.st_mode))
            rc = -EISDIR;
        if (rc == 0)
            rc = depfs_open_ino(ctx->fs, (uint64_t)st.st_ino, flags, &fh);
        if (rc == 0)
            rc = depfs_fstat(fh, &st);
        /* O_TRUNC of an existing file by a caller without CAP_FSETID */
        if (rc == 0 && dfuse_req_kill_suidgid()) {
            int killed = dfuse_setid_kill(ctx->fs, (uint64_t)st.st_ino, &st);
            rc = killed < 0 ? killed : 0;
        }
    }
    if (rc < 0)
        goto fail;

    struct fuse_entry_param e;
    fill_entry(ctx, &e, &st);
    if (e.ino == 0) {
        rc = -EIO;
        goto fail;
    }
    note_name(req, parent, name, &st);
    set_open_info(fi, fh);
    if (fuse_reply_create(req, &e, fi) != 0) {
        depfs_close(fh); /* the caller was interrupted: nobody will release */
        entry_not_taken(req, e.ino);
    }
    return;
fail:
    if (fh)
        depfs_close(fh);
    if (counted)
        entry_not_taken(req, counted);
    reply_status(req, rc);
}

/* Makes the kernel forget the attributes it cached for ino (why: for the
 * log). Only the attributes (offset < 0): no page is touched, so this is
 * safe while the kernel holds the pages of a write. */
static void forget_attrs(dfuse_ctx *ctx, fuse_ino_t ino, const char *why)
{
    int rc = fuse_lowlevel_notify_inval_inode(ctx->se, ino, DFUSE_INVAL_ATTR_ONLY, 0);
    if (rc != 0 && rc != -ENOENT)
        log_warn("inode %llu: cannot make the kernel forget its attributes (%s): %s",
                 (unsigned long long)ino, why, strerror(-rc));
}

/* Before a write or O_TRUNC open by a caller without CAP_FSETID (the kernel
 * flags those): clear set-id bits the kernel knows the file has, and make it
 * forget the mode it has cached (these replies carry no attributes). */
static int kill_setid_if_asked(fuse_req_t req, fuse_ino_t ino)
{
    dfuse_ctx *ctx = req_ctx(req);
    if (!dfuse_req_kill_suidgid() || !dfuse_setid_suspect(ino))
        return 0;
    act_for(req); /* a write's own op does not otherwise reach the MDS */
    int rc = dfuse_setid_kill_ino(ctx->fs, ino);
    if (rc <= 0)
        return rc;
    forget_attrs(ctx, ino, "its set-id bits were cleared");
    return 0;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    act_for(req);
    depfs_fh_t *fh = NULL;
    dfuse_ctx *ctx = req_ctx(req);
    /* the kernel may have come through a name of it being dropped: have it
     * walk the path again once that is done */
    int rc = dfuse_names_settle(ctx->names, ino) ? -ESTALE : 0;
    if (rc == 0)
        rc = kill_setid_if_asked(req, ino);
    if (rc == 0)
        rc = stale_if_gone(depfs_open_ino(ctx->fs, ino, lib_open_flags(fi->flags), &fh));
    if (rc == -ESTALE)
        dfuse_names_rewalk(ctx->names, ino);
    if (rc < 0) {
        reply_status(req, rc);
        return;
    }
    /* close-to-open (README "Consistency"): another client may have grown or
     * cut the file since the kernel cached its attributes (it keeps them up
     * to attr_timeout and reads to and fstat shows their size); the open
     * asked the MDS, so make the kernel ask too (op_getattr answers that
     * from the open's reply: depfs_open_attr_take) */
    forget_attrs(ctx, ino, "open");
    set_open_info(fi, fh);
    if (fuse_reply_open(req, fi) != 0)
        depfs_close(fh);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    (void)ino;
    depfs_fh_t *fh = fi_fh(fi);
    char *heap = NULL;
    char *buf;
    if (!fh || off < 0) {
        fuse_reply_err(req, fh ? EINVAL : EBADF);
        return;
    }
    if (size <= DFUSE_MAX_IO_BYTES) {
        buf = thread_read_buf();
    } else {
        heap = malloc(size); /* kernel capped it at max_read; be safe anyway */
        buf = heap;
    }
    if (!buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    ssize_t n = depfs_read(fh, buf, size, (uint64_t)off);
    if (n < 0)
        reply_status(req, n);
    else
        fuse_reply_buf(req, buf, (size_t)n);
    free(heap);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
    depfs_fh_t *fh = fi_fh(fi);
    if (!fh || off < 0) {
        fuse_reply_err(req, fh ? EINVAL : EBADF);
        return;
    }
    int rc = kill_setid_if_asked(req, ino);
    if (rc < 0) {
        reply_status(req, rc);
        return;
    }
    ssize_t n = depfs_write(fh, buf, size, (uint64_t)off);
    if (n < 0) {
        reply_status(req, n);
        return;
    }
    fuse_reply_write(req, (size_t)n);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    depfs_fh_t *fh = fi_fh(fi);
    reply_status(req, fh ? depfs_flush(fh) : -EBADF);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    depfs_fh_t *fh = fi_fh(fi);
    int rc = 0;
    if (fh) {
        rc = depfs_close(fh);
        fi->fh = 0;
        if (rc < 0)
            log_warn("close of inode %llu failed: %s", (unsigned long long)ino,
                     depfs_last_error());
    }
    reply_status(req, rc);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    (void)ino;
    (void)datasync;
    depfs_fh_t *fh = fi_fh(fi);
    reply_status(req, fh ? depfs_fsync(fh) : -EBADF);
}

/* SEEK_DATA / SEEK_HOLE (the kernel answers the other whences itself). */
static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
                     struct fuse_file_info *fi)
{
    (void)ino;
    depfs_fh_t *fh = fi_fh(fi);
    uint64_t out = 0;
    int rc = !fh ? -EBADF : off < 0 ? -ENXIO
                                    : depfs_lseek(fh, (uint64_t)off, whence, &out);
    if (rc < 0)
        reply_status(req, rc);
    else
        fuse_reply_lseek(req, (off_t)out);
}

/* Writes zeros over [off, end): punching and zeroing keep no holes of their
 * own, reading zeros is what matters (and zero data has zero parity). */
static int write_zeros(depfs_fh_t *fh, uint64_t off, uint64_t end)
{
    if (off >= end)
        return 0;
    uint64_t chunk_bytes = end - off < DFUSE_MAX_IO_BYTES ? end - off : DFUSE_MAX_IO_BYTES;
    char *zeros = calloc(1, chunk_bytes);
    if (!zeros)
        return -ENOMEM;
    int rc = 0;
    while (off < end) {
        size_t len = end - off < chunk_bytes ? (size_t)(end - off) : (size_t)chunk_bytes;
        ssize_t n = depfs_write(fh, zeros, len, off);
        if (n < 0) {
            rc = (int)n;
            break;
        }
        off += len;
    }
    free(zeros);
    return rc;
}

static int do_fallocate(depfs_fh_t *fh, int mode, uint64_t off, uint64_t len)
{
    const int supported = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE;
    bool punch = mode & FALLOC_FL_PUNCH_HOLE, zero = mode & FALLOC_FL_ZERO_RANGE;
    bool keep_size = mode & FALLOC_FL_KEEP_SIZE;
    if (mode & ~supported)
        return -EOPNOTSUPP; /* collapse/insert range, unshare: not offered */
    if ((punch && zero) || (punch && !keep_size))
        return -EOPNOTSUPP; /* what Linux answers for these combinations */
    if (len == 0 || off > (uint64_t)INT64_MAX - len)
        return len == 0 ? -EINVAL : -EFBIG;

    struct stat st;
    int rc = depfs_fstat(fh, &st);
    if (rc < 0)
        return rc;
    uint64_t size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    uint64_t end = off + len;
    if (punch || zero) {
        rc = write_zeros(fh, off, end < size ? end : size);
        if (rc < 0)
            return rc;
    }
    /* there is no preallocation: mode 0 and zero-range only move the size */
    if (!keep_size && end > size)
        rc = depfs_ftruncate(fh, end);
    return rc;
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
                         struct fuse_file_info *fi)
{
    act_for(req);
    (void)ino;
    depfs_fh_t *fh = fi_fh(fi);
    if (!fh) {
        fuse_reply_err(req, EBADF);
        return;
    }
    if (offset < 0 || length <= 0) {
        fuse_reply_err(req, EINVAL);
        return;
    }
    reply_status(req, do_fallocate(fh, mode, (uint64_t)offset, (uint64_t)length));
}

/* ----------------------------------------------------------- directories */

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    act_for(req);
    struct stat st;
    int rc = depfs_getattr(req_ctx(req)->fs, ino, &st);
    if (rc == 0 && !S_ISDIR(st.st_mode))
        rc = -ENOTDIR;
    if (rc < 0) {
        reply_status(req, stale_if_gone(rc));
        return;
    }
    fi->fh = 0;          /* readdir is stateless: the cookie is the offset */
    fi->cache_readdir = 0;
    fuse_reply_open(req, fi);
}

/* An entry's type bits: S_IF* bits, or DT_* values should the library
 * send those. */
static mode_t dirent_mode(mode_t type)
{
    return (type & S_IFMT) ? (type & S_IFMT) : (mode_t)DTTOIF(type);
}

typedef struct readdir_state {
    fuse_req_t req;
    char *buf;
    size_t size, used;
    int entries;
} readdir_state;

static int readdir_add(void *arg, const char *name, uint64_t ino, mode_t type, uint64_t cookie)
{
    readdir_state *rs = arg;
    struct stat st;
    memset(&st, 0, sizeof(st));
    st.st_ino = (ino_t)ino;
    st.st_mode = dirent_mode(type);
    size_t need = fuse_add_direntry(rs->req, rs->buf + rs->used, rs->size - rs->used, name, &st,
                                    (off_t)cookie);
    if (need > rs->size - rs->used)
        return 1; /* full: the kernel comes back with the last cookie */
    rs->used += need;
    rs->entries++;
    return 0;
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    act_for(req);
    (void)fi;
    readdir_state rs = {.req = req};
    if (off < 0) {
        fuse_reply_err(req, EINVAL);
        return;
    }
    rs.size = size < DFUSE_MAX_READDIR_BYTES ? size : DFUSE_MAX_READDIR_BYTES;
    rs.buf = malloc(rs.size ? rs.size : 1);
    if (!rs.buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    int rc = depfs_readdir(req_ctx(req)->fs, ino, (uint64_t)off, readdir_add, &rs);
    if (rc < 0 && rs.entries == 0)
        reply_status(req, rc);
    else
        fuse_reply_buf(req, rs.buf, rs.used); /* a later call reports the error */
    free(rs.buf);
}

/* READDIRPLUS: one page of entries with their attributes, each taken as a
 * lookup by the kernel (libdepfs counted it: depfs_readdir_plus), so that
 * ls -l, find and du need no LOOKUP per name. The page is sized to the
 * kernel's buffer (an entry takes at least DFUSE_DIRENTPLUS_MIN bytes) so
 * the MDS loads no attributes that would not fit. */
#define DFUSE_DIRENTPLUS_MIN (FUSE_NAME_OFFSET_DIRENTPLUS + sizeof(uint64_t)) /* a 1-byte name */

typedef struct readdirplus_state {
    fuse_req_t req;
    dfuse_ctx *ctx;
    uint64_t parent;
    char *buf;
    size_t size, used;
    uint64_t *counted; /* inodes taken with attributes: a lookup each */
    size_t n_counted, max_counted;
} readdirplus_state;

static int readdirplus_add(void *arg, const char *name, uint64_t ino, mode_t type, uint64_t cookie,
                           const struct stat *st)
{
    readdirplus_state *rs = arg;
    struct fuse_entry_param e;
    if (st) {
        struct stat copy = *st;
        fill_entry(rs->ctx, &e, &copy);
        if (e.ino == 0 || rs->n_counted == rs->max_counted)
            return 1; /* cannot be a lookup: the kernel asks again from here */
    } else { /* a name without attributes: no lookup (nodeid 0) */
        memset(&e, 0, sizeof(e));
        e.attr.st_ino = (ino_t)ino;
        e.attr.st_mode = dirent_mode(type);
    }
    size_t need = fuse_add_direntry_plus(rs->req, rs->buf + rs->used, rs->size - rs->used, name, &e,
                                         (off_t)cookie);
    if (need > rs->size - rs->used)
        return 1; /* full: the kernel comes back with the last cookie */
    rs->used += need;
    if (st) {
        rs->counted[rs->n_counted++] = e.ino;
        note_name(rs->req, rs->parent, name, st);
    }
    return 0;
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi)
{
    act_for(req);
    (void)fi;
    readdirplus_state rs = {.req = req, .ctx = req_ctx(req), .parent = (uint64_t)ino};
    if (off < 0) {
        fuse_reply_err(req, EINVAL);
        return;
    }
    rs.size = size < DFUSE_MAX_READDIR_BYTES ? size : DFUSE_MAX_READDIR_BYTES;
    rs.max_counted = rs.size / DFUSE_DIRENTPLUS_MIN + 1;
    rs.buf = malloc(rs.size ? rs.size : 1);
    rs.counted = calloc(rs.max_counted, sizeof(*rs.counted));
    if (!rs.buf || !rs.counted) {
        free(rs.buf);
        free(rs.counted);
        fuse_reply_err(req, ENOMEM);
        return;
    }
    int rc = depfs_readdir_plus(rs.ctx->fs, ino, (uint64_t)off, (uint32_t)rs.max_counted,
                                readdirplus_add, &rs);
    if (rc < 0 && rs.used == 0) {
        reply_status(req, rc);
    } else if (fuse_reply_buf(req, rs.buf, rs.used) != 0) {
        for (size_t i = 0; i < rs.n_counted; i++) /* the kernel took none of them */
            entry_not_taken(req, rs.counted[i]);
    }
    free(rs.buf);
    free(rs.counted);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    (void)fi;
    fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    (void)ino;
    (void)datasync;
    (void)fi;
    fuse_reply_err(req, 0); /* the MDS makes every mutation durable before replying */
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
    act_for(req);
    (void)ino;
    struct statvfs sv;
    int rc = depfs_statfs(req_ctx(req)->fs, &sv);
    if (rc < 0) {
        reply_status(req, rc);
        return;
    }
    fuse_reply_statfs(req, &sv);
}

/* ---------------------------------------------------------------- xattrs */

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                        size_t size, int flags)
{
    act_for(req);
    dfuse_ctx *ctx = req_ctx(req);
    if (strcmp(name, DFUSE_CAPS_XATTR) == 0) {
        fuse_reply_err(req, EOPNOTSUPP); /* no file capabilities on DePFS */
        return;
    }
    reply_status(req, stale_if_gone(depfs_setxattr(ctx->fs, ino, name, value, size, flags)));
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
    act_for(req);
    if (strcmp(name, DFUSE_CAPS_XATTR) == 0) {
        /* asked before writes to an inode not yet marked S_NOSEC (see
         * init_flags.c); never stored, so never there. Logged for tests. */
        log_debug("getxattr %s of inode %llu", name, (unsigned long long)ino);
        fuse_reply_err(req, ENODATA);
        return;
    }
    depfs_t *fs = req_ctx(req)->fs;
    if (size == 0) {
        ssize_t need = depfs_getxattr(fs, ino, name, NULL, 0);
        if (need < 0)
            reply_status(req, stale_if_gone(need));
        else
            fuse_reply_xattr(req, (size_t)need);
        return;
    }
    if (size > DFUSE_MAX_XATTR_BYTES)
        size = DFUSE_MAX_XATTR_BYTES;
    char *buf = malloc(size);
    if (!buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    ssize_t n = depfs_getxattr(fs, ino, name, buf, size);
    if (n < 0)
        reply_status(req, stale_if_gone(n));
    else
        fuse_reply_buf(req, buf, (size_t)n);
    free(buf);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
    act_for(req);
    depfs_t *fs = req_ctx(req)->fs;
    if (size == 0) {
        ssize_t need = depfs_listxattr(fs, ino, NULL, 0);
        if (need < 0)
            reply_status(req, stale_if_gone(need));
        else
            fuse_reply_xattr(req, (size_t)need);
        return;
    }
    if (size > DFUSE_MAX_XATTR_LIST_BYTES)
        size = DFUSE_MAX_XATTR_LIST_BYTES;
    char *buf = malloc(size);
    if (!buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    ssize_t n = depfs_listxattr(fs, ino, buf, size);
    if (n < 0)
        reply_status(req, stale_if_gone(n));
    else
        fuse_reply_buf(req, buf, (size_t)n);
    free(buf);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
    act_for(req);
    reply_status(req, stale_if_gone(depfs_removexattr(req_ctx(req)->fs, ino, name)));
}

/* ----------------------------------------------------------------- table */

const struct fuse_lowlevel_ops dfuse_ops = {
    .init = op_init,
    .lookup = op_lookup,
    .forget = op_forget,
    .forget_multi = op_forget_multi,
    .getattr = op_getattr,
    .setattr = op_setattr,
    .readlink = op_readlink,
    .mknod = op_mknod,
    .mkdir = op_mkdir,
    .unlink = op_unlink,
    .rmdir = op_rmdir,
    .symlink = op_symlink,
    .rename = op_rename,
    .link = op_link,
    .create = op_create,
    .open = op_open,
    .read = op_read,
    .write = op_write,
    .flush = op_flush,
    .release = op_release,
    .fsync = op_fsync,
    .lseek = op_lseek,
    .fallocate = op_fallocate,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .readdirplus = op_readdirplus,
    .releasedir = op_releasedir,
    .fsyncdir = op_fsyncdir,
    .statfs = op_statfs,
    .setxattr = op_setxattr,
    .getxattr = op_getxattr,
    .listxattr = op_listxattr,
    .removexattr = op_removexattr,
};
