/* passthrough_fs.c - the benchmark's reference mount: a low-level FUSE
 * passthrough of a local directory, set up the way depfs-fuse is (same
 * kernel FUSE path, multi-threaded session loop, max_write/max_read 1 MiB,
 * no writeback cache, no splice, attr/entry timeouts 1 s, keep_cache off,
 * default_permissions, allow_other as root), so that run-bench's ratios
 * measure DePFS itself and not FUSE.
 *
 *   passthrough_fs SRC_DIR MOUNTPOINT [-f] [-d] [-s] [-o opts]
 *
 * Inodes: the kernel's inode number is the address of a pt_inode that holds
 * an O_PATH fd of the file, found by (st_dev, st_ino) in a hash table and
 * counted by lookups (freed on forget). Operations act on those fds with the
 * *at() calls, or through /proc/self/fd/N where no *at() form exists.
 * Covers what benchmarks and ordinary tools use: lookup, getattr, setattr,
 * create/open/read/write/flush/fsync/release, mkdir, unlink, rmdir, rename,
 * symlink, readlink, link, readdir, fsyncdir, statfs. No xattrs (ENOSYS).
 *
 * It is also the fault campaign's slow disk (an I/O server's data dir
 * mounted through it): after SIGUSR1 every read, write and fsync waits
 * $PT_SLOW_US microseconds (default PT_SLOW_DEFAULT_US) before it touches
 * the file, until SIGUSR2. Off unless signalled, so benchmarks never see it. */
#define FUSE_USE_VERSION 312
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define PT_PROG "passthrough_fs"
#define PT_MAX_IO_BYTES (1024u * 1024u)
#define PT_TIMEOUT_S 1.0
#define PT_HASH_BUCKETS 4096u
#define PT_MAX_IDLE_THREADS 10u
#define PT_PROC_FD_BYTES 64u
#define PT_OPT_BYTES 128u
#define PT_SLOW_DEFAULT_US 200000u
#define PT_SLOW_MAX_US 10000000u /* a delay longer than this is a typo */

typedef struct pt_inode {
    int fd;            /* O_PATH */
    dev_t dev;
    ino_t ino;
    uint64_t nlookup;  /* guarded by pt_fs.lock */
    struct pt_inode *next;
} pt_inode;

typedef struct pt_fs {
    pthread_mutex_t lock;
    pt_inode root;
    pt_inode *buckets[PT_HASH_BUCKETS];
} pt_fs;

typedef struct pt_dir {
    DIR *dp;
    off_t offset;
    struct dirent *entry; /* read but not yet returned */
} pt_dir;

static pt_fs pt;

/* ------------------------------------------------------------ slow disk */
static volatile sig_atomic_t pt_slow;
static struct timespec pt_slow_delay;

static void on_slow_signal(int sig) { pt_slow = sig == SIGUSR1; }

/* 0, or -1 with a message for a bad $PT_SLOW_US */
static int slow_setup(void)
{
    const char *env = getenv("PT_SLOW_US");
    unsigned long us = PT_SLOW_DEFAULT_US;
    if (env != NULL) {
        char *end;
        errno = 0;
        us = strtoul(env, &end, 10);
        if (errno != 0 || end == env || *end != '\0' || us > PT_SLOW_MAX_US) {
            fprintf(stderr, "%s: PT_SLOW_US must be 0..%u microseconds\n", PT_PROG,
                    PT_SLOW_MAX_US);
            return -1;
        }
    }
    pt_slow_delay.tv_sec = (time_t)(us / 1000000u);
    pt_slow_delay.tv_nsec = (long)(us % 1000000u) * 1000;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_slow_signal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL) != 0 || sigaction(SIGUSR2, &sa, NULL) != 0)
        return -1;
    return 0;
}

static void slow_wait(void)
{
    struct timespec left = pt_slow_delay;
    while (pt_slow && nanosleep(&left, &left) != 0 && errno == EINTR)
        ;
}

/* ---------------------------------------------------------------- inodes */

static pt_inode *ino_get(fuse_ino_t ino)
{
    return ino == FUSE_ROOT_ID ? &pt.root : (pt_inode *)(uintptr_t)ino;
}

static int ino_fd(fuse_ino_t ino) { return ino_get(ino)->fd; }

static unsigned bucket_of(dev_t dev, ino_t ino)
{
    return (unsigned)(((uint64_t)ino * 0x9E3779B97F4A7C15ull ^ (uint64_t)dev) %
                      PT_HASH_BUCKETS);
}

/* Caller holds pt.lock. */
static pt_inode *table_find(dev_t dev, ino_t ino)
{
    if (dev == pt.root.dev && ino == pt.root.ino)
        return &pt.root;
    for (pt_inode *p = pt.buckets[bucket_of(dev, ino)]; p; p = p->next)
        if (p->dev == dev && p->ino == ino)
            return p;
    return NULL;
}

static void proc_path(int fd, char *buf)
{
    snprintf(buf, PT_PROC_FD_BYTES, "/proc/self/fd/%d", fd);
}

/* Looks NAME up under PARENT, counts one lookup and fills e. */
static int do_lookup(fuse_ino_t parent, const char *name, struct fuse_entry_param *e)
{
    memset(e, 0, sizeof(*e));
    e->attr_timeout = PT_TIMEOUT_S;
    e->entry_timeout = PT_TIMEOUT_S;
    int fd = openat(ino_fd(parent), name, O_PATH | O_NOFOLLOW);
    if (fd < 0)
        return errno;
    if (fstatat(fd, "", &e->attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) {
        int err = errno;
        close(fd);
        return err;
    }
    pthread_mutex_lock(&pt.lock);
    pt_inode *p = table_find(e->attr.st_dev, e->attr.st_ino);
    if (p) {
        p->nlookup++;
        pthread_mutex_unlock(&pt.lock);
        close(fd);
    } else {
        p = calloc(1, sizeof(*p));
        if (!p) {
            pthread_mutex_unlock(&pt.lock);
            close(fd);
            return ENOMEM;
        }
        p->fd = fd;
        p->dev = e->attr.st_dev;
        p->ino = e->attr.st_ino;
        p->nlookup = 1;
        unsigned b = bucket_of(p->dev, p->ino);
        p->next = pt.buckets[b];
        pt.buckets[b] = p;
        pthread_mutex_unlock(&pt.lock);
    }
    e->ino = p == &pt.root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)p;
    return 0;
}

static void forget_one(fuse_ino_t ino, uint64_t nlookup)
{
    pt_inode *p = ino_get(ino);
    if (p == &pt.root)
        return;
    pthread_mutex_lock(&pt.lock);
    if (nlookup > p->nlookup)
        nlookup = p->nlookup;
    p->nlookup -= nlookup;
    bool dead = p->nlookup == 0;
    if (dead) {
        pt_inode **pp = &pt.buckets[bucket_of(p->dev, p->ino)];
        while (*pp != p)
            pp = &(*pp)->next;
        *pp = p->next;
    }
    pthread_mutex_unlock(&pt.lock);
    if (dead) {
        close(p->fd);
        free(p);
    }
}

static void reply_entry_or_err(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct fuse_entry_param e;
    int err = do_lookup(parent, name, &e);
    if (err)
        fuse_reply_err(req, err);
    else
        fuse_reply_entry(req, &e);
}

/* ------------------------------------------------------------ operations */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
    (void)userdata;
    conn->max_write = PT_MAX_IO_BYTES;
    conn->max_read = PT_MAX_IO_BYTES;
    if (conn->max_readahead > PT_MAX_IO_BYTES)
        conn->max_readahead = PT_MAX_IO_BYTES;
    conn->want &= ~(unsigned)(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_SPLICE_READ |
                              FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
    if (conn->capable & FUSE_CAP_ASYNC_READ)
        conn->want |= FUSE_CAP_ASYNC_READ;
    if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
        conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
    if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
        conn->want |= FUSE_CAP_PARALLEL_DIROPS;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    reply_entry_or_err(req, parent, name);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    forget_one(ino, nlookup);
    fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
    for (size_t i = 0; i < count; i++)
        forget_one(forgets[i].ino, forgets[i].nlookup);
    fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)fi;
    struct stat st;
    if (fstatat(ino_fd(ino), "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0)
        fuse_reply_err(req, errno);
    else
        fuse_reply_attr(req, &st, PT_TIMEOUT_S);
}

static struct timespec set_time(int to_set, int now_flag, int set_flag, struct timespec t)
{
    if (to_set & now_flag)
        t.tv_nsec = UTIME_NOW;
    else if (!(to_set & set_flag))
        t.tv_nsec = UTIME_OMIT;
    return t;
}

static int apply_setattr(fuse_ino_t ino, const struct stat *attr, int to_set,
                         struct fuse_file_info *fi)
{
    char path[PT_PROC_FD_BYTES];
    int fd = ino_fd(ino);
    proc_path(fd, path);
    if ((to_set & FUSE_SET_ATTR_MODE) &&
        (fi ? fchmod((int)fi->fh, attr->st_mode) : chmod(path, attr->st_mode)) != 0)
        return errno;
    if (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
        uid_t uid = (to_set & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1;
        gid_t gid = (to_set & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1;
        if (fchownat(fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0)
            return errno;
    }
    if ((to_set & FUSE_SET_ATTR_SIZE) &&
        (fi ? ftruncate((int)fi->fh, attr->st_size) : truncate(path, attr->st_size)) != 0)
        return errno;
    if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) {
        struct timespec tv[2] = {
            set_time(to_set, FUSE_SET_ATTR_ATIME_NOW, FUSE_SET_ATTR_ATIME, attr->st_atim),
            set_time(to_set, FUSE_SET_ATTR_MTIME_NOW, FUSE_SET_ATTR_MTIME, attr->st_mtim)};
        if ((fi ? futimens((int)fi->fh, tv) : utimensat(AT_FDCWD, path, tv, 0)) != 0)
            return errno;
    }
    return 0;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi)
{
    int err = apply_setattr(ino, attr, to_set, fi);
    if (err)
        fuse_reply_err(req, err);
    else
        op_getattr(req, ino, fi);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
    char buf[PATH_MAX + 1];
    ssize_t n = readlinkat(ino_fd(ino), "", buf, sizeof(buf));
    if (n < 0)
        fuse_reply_err(req, errno);
    else if ((size_t)n >= sizeof(buf))
        fuse_reply_err(req, ENAMETOOLONG);
    else {
        buf[n] = '\0';
        fuse_reply_readlink(req, buf);
    }
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    if (mkdirat(ino_fd(parent), name, mode) != 0)
        fuse_reply_err(req, errno);
    else
        reply_entry_or_err(req, parent, name);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
    if (symlinkat(link, ino_fd(parent), name) != 0)
        fuse_reply_err(req, errno);
    else
        reply_entry_or_err(req, parent, name);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name)
{
    char path[PT_PROC_FD_BYTES];
    proc_path(ino_fd(ino), path);
    if (linkat(AT_FDCWD, path, ino_fd(parent), name, AT_SYMLINK_FOLLOW) != 0)
        fuse_reply_err(req, errno);
    else
        reply_entry_or_err(req, parent, name);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    fuse_reply_err(req, unlinkat(ino_fd(parent), name, 0) != 0 ? errno : 0);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    fuse_reply_err(req, unlinkat(ino_fd(parent), name, AT_REMOVEDIR) != 0 ? errno : 0);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags)
{
    int rc = renameat2(ino_fd(parent), name, ino_fd(newparent), newname, flags);
    fuse_reply_err(req, rc != 0 ? errno : 0);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi)
{
    struct fuse_entry_param e;
    int fd = openat(ino_fd(parent), name, (fi->flags | O_CREAT) & ~O_NOFOLLOW, mode);
    if (fd < 0) {
        fuse_reply_err(req, errno);
        return;
    }
    int err = do_lookup(parent, name, &e);
    if (err) {
        close(fd);
        fuse_reply_err(req, err);
        return;
    }
    fi->fh = (uint64_t)fd;
    fi->direct_io = (fi->flags & O_DIRECT) ? 1 : 0;
    fi->keep_cache = 0;
    fuse_reply_create(req, &e, fi);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    char path[PT_PROC_FD_BYTES];
    proc_path(ino_fd(ino), path);
    int fd = open(path, fi->flags & ~(O_NOFOLLOW | O_CREAT));
    if (fd < 0) {
        fuse_reply_err(req, errno);
        return;
    }
    fi->fh = (uint64_t)fd;
    fi->direct_io = (fi->flags & O_DIRECT) ? 1 : 0;
    fi->keep_cache = 0;
    fuse_reply_open(req, fi);
}

/* One max_read-sized buffer per session thread, as depfs-fuse does. */
static char *thread_read_buf(void)
{
    static _Thread_local char *buf;
    if (!buf)
        buf = malloc(PT_MAX_IO_BYTES);
    return buf;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    (void)ino;
    char *heap = NULL, *buf;
    if (size <= PT_MAX_IO_BYTES)
        buf = thread_read_buf();
    else
        buf = heap = malloc(size);
    if (!buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    slow_wait();
    ssize_t n = pread((int)fi->fh, buf, size, off);
    if (n < 0)
        fuse_reply_err(req, errno);
    else
        fuse_reply_buf(req, buf, (size_t)n);
    free(heap);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
    (void)ino;
    size_t done = 0;
    slow_wait();
    while (done < size) {
        ssize_t n = pwrite((int)fi->fh, buf + done, size - done, off + (off_t)done);
        if (n < 0) {
            if (done == 0) {
                fuse_reply_err(req, errno);
                return;
            }
            break;
        }
        done += (size_t)n;
    }
    fuse_reply_write(req, done);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    int dupfd = dup((int)fi->fh);
    int rc = dupfd < 0 ? -1 : close(dupfd);
    fuse_reply_err(req, rc != 0 ? errno : 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    close((int)fi->fh);
    fuse_reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    (void)ino;
    slow_wait();
    int rc = datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh);
    fuse_reply_err(req, rc != 0 ? errno : 0);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    pt_dir *d = calloc(1, sizeof(*d));
    int fd = -1;
    if (!d)
        goto fail;
    fd = openat(ino_fd(ino), ".", O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        goto fail;
    d->dp = fdopendir(fd);
    if (!d->dp)
        goto fail;
    fi->fh = (uint64_t)(uintptr_t)d;
    fuse_reply_open(req, fi);
    return;
fail:;
    int err = errno ? errno : ENOMEM;
    if (fd >= 0)
        close(fd);
    free(d);
    fuse_reply_err(req, err);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
                       struct fuse_file_info *fi)
{
    (void)ino;
    pt_dir *d = (pt_dir *)(uintptr_t)fi->fh;
    char *buf = calloc(1, size);
    size_t used = 0;
    if (!buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    if (offset != d->offset) {
        seekdir(d->dp, offset);
        d->entry = NULL;
        d->offset = offset;
    }
    for (;;) {
        if (!d->entry) {
            errno = 0;
            d->entry = readdir(d->dp);
            if (!d->entry) {
                if (errno && used == 0) {
                    int err = errno;
                    free(buf);
                    fuse_reply_err(req, err);
                    return;
                }
                break;
            }
        }
        struct stat st = {.st_ino = d->entry->d_ino, .st_mode = (mode_t)d->entry->d_type << 12};
        off_t next = telldir(d->dp);
        size_t len = fuse_add_direntry(req, buf + used, size - used, d->entry->d_name, &st, next);
        if (len > size - used)
            break;
        used += len;
        d->entry = NULL;
        d->offset = next;
    }
    fuse_reply_buf(req, buf, used);
    free(buf);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    pt_dir *d = (pt_dir *)(uintptr_t)fi->fh;
    closedir(d->dp);
    free(d);
    fuse_reply_err(req, 0);
}

/* An fsync of the directory itself (the durable reference of run-bench's
 * metadata rows syncs each create and remove with it). */
static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    (void)ino;
    const pt_dir *d = (const pt_dir *)(uintptr_t)fi->fh;
    slow_wait();
    int fd = dirfd(d->dp);
    int rc = datasync ? fdatasync(fd) : fsync(fd);
    fuse_reply_err(req, rc != 0 ? errno : 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
    struct statvfs sv;
    if (fstatvfs(ino_fd(ino), &sv) != 0)
        fuse_reply_err(req, errno);
    else
        fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops pt_ops = {
    .init = op_init,
    .lookup = op_lookup,
    .forget = op_forget,
    .forget_multi = op_forget_multi,
    .getattr = op_getattr,
    .setattr = op_setattr,
    .readlink = op_readlink,
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
    .opendir = op_opendir,
    .readdir = op_readdir,
    .releasedir = op_releasedir,
    .fsyncdir = op_fsyncdir,
    .statfs = op_statfs,
};

/* ------------------------------------------------------------------ main */

static int add_opt(struct fuse_args *args, const char *opt)
{
    char buf[PT_OPT_BYTES];
    if ((size_t)snprintf(buf, sizeof(buf), "-o%s", opt) >= sizeof(buf))
        return -1;
    return fuse_opt_add_arg(args, buf);
}

static int open_root(const char *src)
{
    struct stat st;
    pt.root.fd = open(src, O_PATH | O_DIRECTORY);
    if (pt.root.fd < 0 || fstat(pt.root.fd, &st) != 0) {
        fprintf(stderr, "%s: %s: %s\n", PT_PROG, src, strerror(errno));
        return -1;
    }
    pt.root.dev = st.st_dev;
    pt.root.ino = st.st_ino;
    pt.root.nlookup = 2;
    return 0;
}

static int run_loop(struct fuse_session *se, const struct fuse_cmdline_opts *copts)
{
    if (copts->singlethread)
        return fuse_session_loop(se);
    struct fuse_loop_config *lc = fuse_loop_cfg_create();
    if (!lc)
        return -1;
    fuse_loop_cfg_set_clone_fd(lc, (unsigned)copts->clone_fd);
    fuse_loop_cfg_set_idle_threads(lc, copts->max_idle_threads == UINT_MAX
                                           ? PT_MAX_IDLE_THREADS
                                           : copts->max_idle_threads);
    fuse_loop_cfg_set_max_threads(lc, copts->max_threads);
    int rc = fuse_session_loop_mt(se, lc);
    fuse_loop_cfg_destroy(lc);
    return rc;
}

static int serve(struct fuse_args *args, const struct fuse_cmdline_opts *copts)
{
    struct fuse_session *se = fuse_session_new(args, &pt_ops, sizeof(pt_ops), NULL);
    int rc = 1;
    bool handlers = false, mounted = false;
    if (!se)
        goto out;
    if (fuse_set_signal_handlers(se) != 0)
        goto out;
    handlers = true;
    if (fuse_session_mount(se, copts->mountpoint) != 0)
        goto out;
    mounted = true;
    fuse_daemonize(copts->foreground);
    rc = run_loop(se, copts) == 0 ? 0 : 1;
out:
    if (mounted)
        fuse_session_unmount(se);
    if (handlers)
        fuse_remove_signal_handlers(se);
    if (se)
        fuse_session_destroy(se);
    return rc;
}

int main(int argc, char *argv[])
{
    struct fuse_cmdline_opts copts;
    char max_read[PT_OPT_BYTES];
    int rc = 1;

    memset(&copts, 0, sizeof(copts));
    if (argc < 3 || argv[1][0] == '-') {
        fprintf(stderr, "usage: %s SRC_DIR MOUNTPOINT [-f] [-d] [-s] [-o opts]\n", PT_PROG);
        return 2;
    }
    pthread_mutex_init(&pt.lock, NULL);
    if (slow_setup() != 0)
        return 1;
    if (open_root(argv[1]) != 0)
        return 1;
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    for (int i = 0; i < argc; i++) /* libfuse sees PROG MOUNTPOINT ..., no SRC_DIR */
        if (i != 1 && fuse_opt_add_arg(&args, argv[i]) != 0)
            goto out;
    snprintf(max_read, sizeof(max_read), "max_read=%u", PT_MAX_IO_BYTES);
    if (add_opt(&args, "fsname=passthrough") != 0 || add_opt(&args, "subtype=passthrough") != 0 ||
        add_opt(&args, "default_permissions") != 0 || add_opt(&args, max_read) != 0 ||
        (geteuid() == 0 && add_opt(&args, "allow_other") != 0))
        goto out;
    if (fuse_parse_cmdline(&args, &copts) != 0 || !copts.mountpoint) {
        fprintf(stderr, "%s: bad command line\n", PT_PROG);
        goto out;
    }
    rc = serve(&args, &copts);
out:
    free(copts.mountpoint);
    fuse_opt_free_args(&args);
    close(pt.root.fd);
    return rc;
}
