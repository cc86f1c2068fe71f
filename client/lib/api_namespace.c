/* api_namespace.c - libdepfs entry points: the inode-number namespace API (lookup,
 * getattr/setattr, mknod/mkdir/symlink/readlink/link, unlink/rmdir/rename
 * with removal of the data of a file whose last link went away, readdir,
 * statfs, xattrs including the layout xattr, depfs_get_layout).
 * Each call is one or a few MDS round trips; sizes of files open in this
 * client are overlaid on what the MDS says (uncommitted writes show). */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/limits.h>
#include "api.h"
#include "label.h"
#include "log.h"
#include "wire_check.h"

#define DC_TIME_WHY_BYTES 128u
#define DC_READDIR_BATCH 512u
#define DC_STATFS_FRSIZE 4096u
#define DC_STATFS_FILES_SPARE (1ull << 32)

/* ----------------------------------------------------------- helpers */

static void free_rep(Depfs__MdsReply *rep)
{
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
}

/* A single path component: non-empty, no '/', at most WIRE_NAME_MAX bytes. */
static int check_name(const char *name)
{
    if (!name || !name[0] || strchr(name, '/')) {
        dc_set_error("bad name '%s'", name ? name : "(null)");
        return -EINVAL;
    }
    if (strlen(name) > WIRE_NAME_MAX) {
        dc_set_error("name longer than %u bytes", WIRE_NAME_MAX);
        return -ENAMETOOLONG;
    }
    return 0;
}




/* One call whose reply carries an attr to return as a stat. counted: a
 * call whose reply the FUSE kernel holds a node for (lookup, mknod, mkdir,
 * symlink, link): the inode's lookup is counted (core_handles.h). */
static int call_stat(depfs_t *fs, Depfs__MdsOp op, const Depfs__MdsRequest *req, struct stat *st,
                     bool counted)
{
    Depfs__MdsReply *rep = NULL;
    int rc = dc_mds_call(fs, op, req, &rep);
    if (rc == 0 && !rep->attr && (st || counted)) {
        dc_set_error("MDS reply without attributes");
        rc = -EPROTO;
    }
    if (rc == 0)
        dc_reply_to_stat(fs, rep, st);
    if (rc == 0 && counted) /* the name is in parent (link: new_parent) */
        dc_handle_counted(fs, rep->attr, req->has_new_parent ? req->new_parent : req->parent);
    free_rep(rep);
    return rc;
}

/* One call with nothing to return. */
static int call_plain(depfs_t *fs, Depfs__MdsOp op, const Depfs__MdsRequest *req)
{
    Depfs__MdsReply *rep = NULL;
    int rc = dc_mds_call(fs, op, req, &rep);
    free_rep(rep);
    return rc;
}

/* ----------------------------------------------------- lookup/getattr */

/* One MDS_READDIR of ino's entries after cookie, at most max of them, with
 * their attributes when with_attrs. */
static int readdir_page(depfs_t *fs, uint64_t ino, uint64_t cookie, uint32_t max, bool with_attrs,
                        Depfs__MdsReply **rep)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_ino = 1;
    req.ino = ino;
    req.has_cookie = 1;
    req.cookie = cookie;
    req.has_max_entries = 1;
    req.max_entries = max;
    req.has_with_attrs = with_attrs;
    req.with_attrs = with_attrs;
    return dc_mds_call(fs, DEPFS__MDS_OP__MDS_READDIR, &req, rep);
}

/* Statahead's page of parent from cookie (core_statahead.h): one READDIR
 * with the entries' attributes, for whoever's lookup asked for it. */
static void statahead_fetch(depfs_t *fs, uint64_t parent, uint64_t cookie, uint64_t gen)
{
    Depfs__MdsReply *rep = NULL;
    uint64_t asked_ms = dc_now_ms();
    int rc = readdir_page(fs, parent, cookie, DC_SA_PAGE_ENTRIES, true, &rep);
    dc_sa_keep(fs, parent, gen, asked_ms, rc == 0 ? rep : NULL);
    free_rep(rep);
}

/* MDS_LOOKUP of name in parent (counted: for the kernel, call_stat). */
static int lookup_at_mds(depfs_t *fs, uint64_t parent, const char *name, struct stat *st,
                         bool counted)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_parent = 1;
    req.parent = parent;
    req.name = (char *)name;
    return call_stat(fs, DEPFS__MDS_OP__MDS_LOOKUP, &req, st, counted);
}

int depfs_lookup_aged(depfs_t *fs, uint64_t parent, const char *name, struct stat *st,
                      unsigned *age_ms)
{
    int rc = check_name(name);
    if (rc < 0)
        return rc;
    Depfs__Attr attr;
    unsigned age = 0;
    struct stat kept;
    if (dc_sa_lookup(fs, parent, name, &kept, &attr, &age) == 0) {
        if (st)
            *st = kept;
        dc_handle_counted(fs, &attr, parent);
        if (age_ms)
            *age_ms = age;
        return 0;
    }
    rc = lookup_at_mds(fs, parent, name, st, true);
    if (age_ms)
        *age_ms = 0;
    uint64_t cookie, gen;
    if (rc == 0 && dc_sa_missed(fs, parent, &cookie, &gen))
        statahead_fetch(fs, parent, cookie, gen);
    return rc;
}

int depfs_lookup(depfs_t *fs, uint64_t parent, const char *name, struct stat *st)
{
    return depfs_lookup_aged(fs, parent, name, st, NULL);
}

int depfs_lookup_probe(depfs_t *fs, uint64_t parent, const char *name, struct stat *st)
{
    int rc = check_name(name);
    return rc < 0 ? rc : lookup_at_mds(fs, parent, name, st, false);
}

/* A file unlinked (nlink 0) is kept by the MDS for the handles still
 * open on it (README "Removing files"): to this client it exists only
 * while it has it open; else it is gone, as a stale name's inode is (the
 * kernel drops a cached entry on that ENOENT). */
int depfs_getattr(depfs_t *fs, uint64_t ino, struct stat *st)
{
    Depfs__MdsReply *rep = NULL;
    int rc = dc_getattr_rep(fs, ino, &rep);
    if (rc == 0 && rep->attr->nlink == 0 && S_ISREG(rep->attr->mode) && !dc_inode_find(fs, ino)) {
        dc_set_error("inode %llu was unlinked", (unsigned long long)ino);
        rc = -ENOENT;
    }
    if (rc == 0)
        dc_reply_to_stat(fs, rep, st);
    free_rep(rep);
    return rc;
}

int depfs_dir_attr_take(depfs_t *fs, uint64_t ino, unsigned max_age_ms, struct stat *st)
{
    if (!fs || !st || ino == 0)
        return -EINVAL;
    return dc_dirattr_take(fs, ino, max_age_ms, st);
}

/* --------------------------------------------------------------- setattr */

/* The atime and mtime of st that to_set sets (ctime is the MDS's own: none
 * is sent), as the wire's nanoseconds; -EINVAL /
 * -ERANGE (a time outside 1677..2262, e.g. touch -d 3000-01-01) with the
 * error set. */
static int stat_times_ns(const struct stat *st, unsigned to_set, Depfs__Attr *a)
{
    const struct {
        unsigned bit;
        const struct timespec *ts;
        int64_t *ns;
    } t[] = {
        { DEPFS_SET_ATIME, &st->st_atim, &a->atime_ns },
        { DEPFS_SET_MTIME, &st->st_mtim, &a->mtime_ns },
    };
    char why[DC_TIME_WHY_BYTES];
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        if (!(to_set & t[i].bit))
            continue;
        int rc = wire_time_ns(t[i].ts, t[i].ns, why, sizeof(why));
        if (rc < 0) {
            dc_set_error("%s", why);
            return rc;
        }
    }
    return 0;
}

/* The SIZE part of a setattr: data first, then the MDS size. */
static int setattr_size(depfs_t *fs, uint64_t ino, uint64_t new_size)
{
    Depfs__MdsReply *rep = NULL;
    uint64_t gen = dc_inode_size_gen(fs, ino);
    int rc = dc_getattr_rep(fs, ino, &rep);
    if (rc < 0)
        goto out;
    mode_t mode = (mode_t)rep->attr->mode;
    if (S_ISDIR(mode)) {
        dc_set_error("cannot truncate a directory");
        rc = -EISDIR;
        goto out;
    }
    if (!S_ISREG(mode)) {
        dc_set_error("can only truncate regular files");
        rc = -EINVAL;
        goto out;
    }
    layout lay;
    dc_layout_from_pb(rep->layout, &lay);
    dc_inode *in = dc_inode_get(fs, ino, &lay, rep->attr->size, gen); /* temporary if not open */
    if (!in) {
        rc = -ENOMEM;
        goto out;
    }
    rc = dc_truncate(fs, in, rep->attr->size, new_size);
    dc_inode_put(fs, in);
out:
    free_rep(rep);
    return rc;
}

int depfs_setattr(depfs_t *fs, uint64_t ino, const struct stat *in, unsigned to_set, struct stat *out)
{
    int rc;
    if (to_set & DEPFS_SET_SIZE) {
        if (in->st_size < 0) {
            dc_set_error("negative size");
            return -EINVAL;
        }
        rc = setattr_size(fs, ino, (uint64_t)in->st_size);
        if (rc < 0)
            return rc;
        to_set &= ~DEPFS_SET_SIZE; /* done, MDS size included */
    }
    Depfs__Attr a = DEPFS__ATTR__INIT;
    a.ino = ino;
    a.mode = in->st_mode;
    a.nlink = (uint32_t)in->st_nlink;
    a.uid = in->st_uid;
    a.gid = in->st_gid;
    a.rdev = in->st_rdev;
    a.size = (uint64_t)(in->st_size > 0 ? in->st_size : 0);
    rc = stat_times_ns(in, to_set, &a);
    if (rc < 0)
        return rc;
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_ino = 1;
    req.ino = ino;
    req.has_set_mask = 1;
    req.set_mask = to_set;
    req.attr = &a;
    if (to_set == 0)
        return depfs_getattr(fs, ino, out);
    if (to_set & (DEPFS_SET_MTIME | DEPFS_SET_MTIME_NOW))
        dc_inode_forget_mtime(fs, ino); /* before: the reply must not merge it back */
    return call_stat(fs, DEPFS__MDS_OP__MDS_SETATTR, &req, out, false);
}

/* ------------------------------------------------------ create entries */

int depfs_mknod(depfs_t *fs, uint64_t parent, const char *name, mode_t mode, dev_t rdev,
                const depfs_cred *cr, struct stat *st)
{
    int rc = check_name(name);
    if (rc < 0)
        return rc;
    if (S_ISREG(mode) || (mode & S_IFMT) == 0) {
        /* A regular file needs a layout: that is a create. */
        depfs_fh_t *fh = NULL;
        rc = depfs_create(fs, parent, name, S_IFREG | (mode & 07777), O_EXCL, cr, NULL, st, &fh);
        if (rc == 0)
            rc = depfs_close(fh);
        return rc;
    }
    if (S_ISDIR(mode)) {
        dc_set_error("mknod cannot make directories");
        return -EINVAL;
    }
    uint32_t groups[DEPFS_MAX_GROUPS];
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_parent = 1;
    req.parent = parent;
    req.name = (char *)name;
    req.has_mode = 1;
    req.mode = mode;
    req.has_rdev = 1;
    req.rdev = rdev;
    dc_req_cred(&req, cr, groups);
    return call_stat(fs, DEPFS__MDS_OP__MDS_MKNOD, &req, st, true);
}

int depfs_mkdir(depfs_t *fs, uint64_t parent, const char *name, mode_t mode, const depfs_cred *cr,
                struct stat *st)
{
    int rc = check_name(name);
    if (rc < 0)
        return rc;
    uint32_t groups[DEPFS_MAX_GROUPS];
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_parent = 1;
    req.parent = parent;
    req.name = (char *)name;
    req.has_mode = 1;
    req.mode = S_IFDIR | (mode & 07777);
    dc_req_cred(&req, cr, groups);
    return call_stat(fs, DEPFS__MDS_OP__MDS_MKDIR, &req, st, true);
}

int depfs_symlink(depfs_t *fs, uint64_t parent, const char *name, const char *target,
                  const depfs_cred *cr, struct stat *st)
{
    int rc = check_name(name);
    if (rc < 0)
        return rc;
    if (!target || !target[0] || strlen(target) >= PATH_MAX) {
        dc_set_error("bad symlink target");
        return target && target[0] ? -ENAMETOOLONG : -ENOENT;
    }
    uint32_t groups[DEPFS_MAX_GROUPS];
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_parent = 1;
    req.parent = parent;
    req.name = (char *)name;
    req.target = (char *)target;
    dc_req_cred(&req, cr, groups);
    return call_stat(fs, DEPFS__MDS_OP__MDS_SYMLINK, &req, st, true);
}

int depfs_readlink(depfs_t *fs, uint64_t ino, char *buf, size_t len)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_ino = 1;
    req.ino = ino;
    Depfs__MdsReply *rep = NULL;
    int rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_READLINK, &req, &rep);
    if (rc < 0)
        goto out;
    if (!rep->target) {
        dc_set_error("MDS_READLINK: reply without a target");
        rc = -EPROTO;
        goto out;
    }
    size_t tlen = strlen(rep->target);
    if (tlen + 1 > len) {
        dc_set_error("symlink target (%zu bytes) does not fit the buffer (%zu)", tlen, len);
        rc = -ENAMETOOLONG;
        goto out;
    }
    memcpy(buf, rep->target, tlen + 1);
out:
    free_rep(rep);
    return rc;
}

int depfs_link(depfs_t *fs, uint64_t ino, uint64_t new_parent, const char *new_name, struct stat *st)
{
    int rc = check_name(new_name);
    if (rc < 0)
        return rc;
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_ino = 1;
    req.ino = ino;
    req.has_new_parent = 1;
    req.new_parent = new_parent;
    req.new_name = (char *)new_name;
    return call_stat(fs, DEPFS__MDS_OP__MDS_LINK, &req, st, true);
}

/* --------------------------------------------------- remove entries */

int depfs_unlink(depfs_t *fs, uint64_t parent, const char *name)
{
    int rc = check_name(name);
    if (rc < 0)
        return rc;
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_parent = 1;
    req.parent = parent;
    req.name = (char *)name;
    depfs_release_holds(fs); /* the file may be one closed here (depfs_admin.h) */
    return call_plain(fs, DEPFS__MDS_OP__MDS_UNLINK, &req); /* strip files: the purge queue */
}

int depfs_rmdir(depfs_t *fs, uint64_t parent, const char *name)
{
    int rc = check_name(name);
    if (rc < 0)
        return rc;
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_parent = 1;
    req.parent = parent;
    req.name = (char *)name;
    return call_plain(fs, DEPFS__MDS_OP__MDS_RMDIR, &req);
}

int depfs_rename(depfs_t *fs, uint64_t parent, const char *name, uint64_t new_parent,
                 const char *new_name, unsigned flags)
{
    int rc = check_name(name);
    if (rc == 0)
        rc = check_name(new_name);
    if (rc < 0)
        return rc;
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_parent = 1;
    req.parent = parent;
    req.name = (char *)name;
    req.has_new_parent = 1;
    req.new_parent = new_parent;
    req.new_name = (char *)new_name;
    req.has_flags = 1;
    req.flags = flags;
    depfs_release_holds(fs); /* the file may be one closed here (depfs_admin.h) */
    Depfs__MdsReply *rep = NULL;
    rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_RENAME, &req, &rep); /* a replaced file: the purge queue */
    if (rc == 0 && rep->attr) /* the moved inode: the caller's name of it is the new one */
        dc_handle_renamed(fs, rep->attr, new_parent);
    free_rep(rep);
    return rc;
}

/* --------------------------------------------------------------- readdir */


/* Whether entry d of a page asked from cookie breaks the MDS's order
 * (each entry's cookie past the last, and one the kernel can take as an
 * offset): the error is set. */
static bool cookie_out_of_order(const Depfs__Dirent *d, uint64_t cookie)
{
    if (d->cookie > cookie && d->cookie <= (uint64_t)INT64_MAX)
        return false;
    dc_set_error("readdir: MDS cookie %llu out of order", (unsigned long long)d->cookie);
    return true;
}

/* The MDS lists "." (cookie 1) and ".." (cookie 2) itself; its cookies are
 * handed through unchanged. */
int depfs_readdir(depfs_t *fs, uint64_t ino, uint64_t cookie, depfs_dirent_fn fn, void *arg)
{
    for (;;) {
        Depfs__MdsReply *rep = NULL;
        int rc = readdir_page(fs, ino, cookie, DC_READDIR_BATCH, false, &rep);
        if (rc < 0) {
            free_rep(rep);
            return rc;
        }
        bool stop = false;
        for (size_t i = 0; i < rep->n_entries && !stop; i++) {
            const Depfs__Dirent *d = rep->entries[i];
            if (cookie_out_of_order(d, cookie)) {
                free_rep(rep);
                return -EPROTO;
            }
            cookie = d->cookie;
            stop = fn(arg, d->name, d->ino, (mode_t)(d->mode & S_IFMT), d->cookie) != 0;
        }
        bool eof = rep->n_entries == 0 || (rep->has_eof && rep->eof);
        free_rep(rep);
        if (stop || eof)
            return 0;
    }
}

int depfs_readdir_plus(depfs_t *fs, uint64_t ino, uint64_t cookie, uint32_t max_entries,
                       depfs_dirent_plus_fn fn, void *arg)
{
    Depfs__MdsReply *rep = NULL;
    uint64_t from = cookie, gen = dc_sa_gen(fs), asked_ms = dc_now_ms();
    if (max_entries == 0 || max_entries > DC_SA_PAGE_ENTRIES)
        max_entries = DC_SA_PAGE_ENTRIES;
    int rc = readdir_page(fs, ino, cookie, max_entries, true, &rep);
    if (rc < 0) {
        free_rep(rep);
        return rc;
    }
    for (size_t i = 0; i < rep->n_entries; i++) {
        const Depfs__Dirent *d = rep->entries[i];
        if (cookie_out_of_order(d, cookie)) {
            rc = -EPROTO;
            break;
        }
        cookie = d->cookie;
        /* attributes only as a lookup would give them: not of "." and ".."
         * (the kernel resolves those), and of the entry's own inode */
        const Depfs__Attr *a = d->attr;
        bool plus = a && a->ino == d->ino && strcmp(d->name, ".") != 0 && strcmp(d->name, "..") != 0;
        struct stat st;
        if (plus)
            dc_attr_layout_to_stat(fs, a, d->layout, &st);
        if (fn(arg, d->name, d->ino, (mode_t)(d->mode & S_IFMT), d->cookie, plus ? &st : NULL) != 0)
            break;
        if (plus)
            dc_handle_counted(fs, a, ino);
    }
    if (rc == 0)
        dc_sa_offer(fs, ino, from, gen, asked_ms, rep);
    free_rep(rep);
    return rc;
}

/* ---------------------------------------------------------------- statfs */

/* Raw bytes over every reachable server. */
static void raw_usage(depfs_t *fs, uint64_t *used, uint64_t *free_bytes)
{
    *used = *free_bytes = 0;
    if (fs->nservers == 0)
        return;
    Depfs__IoReply **reps = calloc(fs->nservers, sizeof *reps);
    if (!reps)
        return;
    dc_stat_servers(fs, reps);
    for (unsigned i = 0; i < fs->nservers; i++) {
        if (!reps[i])
            continue;
        *used += reps[i]->has_bytes_used ? reps[i]->bytes_used : 0;
        *free_bytes += reps[i]->has_bytes_free ? reps[i]->bytes_free : 0;
    }
    dc_stat_free(fs, reps);
    free(reps);
}

/* Size = logical bytes stored + free raw bytes as the default layout would
 * use them (k/n), so `df` shows used = bytes in files. */
int depfs_statfs(depfs_t *fs, struct statvfs *st)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep = NULL;
    int rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_STATFS, &req, &rep);
    if (rc < 0) {
        free_rep(rep);
        return rc;
    }
    uint64_t files = rep->has_files ? rep->files : 0;
    uint64_t logical = rep->has_logical_bytes ? rep->logical_bytes : 0;
    free_rep(rep);
    uint64_t raw_used, raw_free;
    raw_usage(fs, &raw_used, &raw_free);
    unsigned n = fs->default_n ? fs->default_n : 1, k = fs->default_k ? fs->default_k : 1;
    uint64_t avail = raw_free / n * k;

    memset(st, 0, sizeof *st);
    st->f_bsize = DC_STATFS_FRSIZE;
    st->f_frsize = DC_STATFS_FRSIZE;
    st->f_blocks = (fsblkcnt_t)((logical + avail) / DC_STATFS_FRSIZE);
    st->f_bfree = (fsblkcnt_t)(avail / DC_STATFS_FRSIZE);
    st->f_bavail = st->f_bfree;
    st->f_files = (fsfilcnt_t)(files + DC_STATFS_FILES_SPARE);
    st->f_ffree = (fsfilcnt_t)DC_STATFS_FILES_SPARE;
    st->f_favail = st->f_ffree;
    st->f_namemax = WIRE_NAME_MAX;
    (void)raw_used;
    return 0;
}

/* ---------------------------------------------------------------- xattrs */

static int check_xattr_name(const char *name)
{
    if (!name || !name[0]) {
        dc_set_error("empty xattr name");
        return -EINVAL;
    }
    if (strlen(name) > WIRE_XATTR_NAME_MAX) {
        dc_set_error("xattr name longer than %u bytes", WIRE_XATTR_NAME_MAX);
        return -ERANGE;
    }
    return 0;
}

/* After a layout xattr changed on a file open here, adopt the new layout. */
static void refresh_open_layout(depfs_t *fs, uint64_t ino)
{
    dc_inode *in = dc_inode_hold(fs, ino);
    if (!in)
        return;
    Depfs__MdsReply *rep = NULL;
    if (dc_getattr_rep(fs, ino, &rep) == 0 && rep->layout) {
        pthread_mutex_lock(&in->lock);
        dc_layout_from_pb(rep->layout, &in->lay);
        pthread_mutex_unlock(&in->lock);
    }
    free_rep(rep);
    dc_inode_put(fs, in);
}

/* Before the layout of a file open here changes, push out what it buffered
 * (the MDS then sees its true size and refuses a non-empty file). */
static int flush_open(depfs_t *fs, uint64_t ino)
{
    dc_inode *in = dc_inode_hold(fs, ino);
    if (!in)
        return 0;
    int rc = dc_data_flush(fs, in, NULL, false);
    if (rc == 0)
        rc = dc_inode_commit_size(fs, in, NULL);
    dc_inode_put(fs, in);
    return rc;
}

int depfs_setxattr(depfs_t *fs, uint64_t ino, const char *name, const void *value, size_t size, int flags)
{
    int rc = check_xattr_name(name);
    if (rc < 0)
        return rc;
    if (size > WIRE_XATTR_VALUE_MAX) {
        dc_set_error("xattr value of %zu bytes (max %u)", size, WIRE_XATTR_VALUE_MAX);
        return -E2BIG;
    }
    bool is_layout = strcmp(name, DEPFS_LAYOUT_XATTR) == 0;
    if (is_layout) {
        rc = flush_open(fs, ino);
        if (rc < 0)
            return rc;
    }
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_ino = 1;
    req.ino = ino;
    req.xattr_name = (char *)name;
    req.has_xattr_value = 1;
    req.xattr_value.len = size;
    req.xattr_value.data = (uint8_t *)value;
    req.has_flags = 1;
    req.flags = (uint32_t)flags;
    rc = call_plain(fs, DEPFS__MDS_OP__MDS_SETXATTR, &req);
    if (rc == 0 && is_layout)
        refresh_open_layout(fs, ino);
    return rc;
}

/* A security.* or trusted.* name of an inode statahead's pages say has no
 * stored xattrs: none, with no round trip (every caller may read those
 * names, or reads none; user.* names need the MDS's permission check). */
static bool xattr_known_absent(depfs_t *fs, uint64_t ino, const char *name)
{
    return (strncmp(name, WIRE_XATTR_SECURITY, strlen(WIRE_XATTR_SECURITY)) == 0 ||
            strncmp(name, WIRE_XATTR_TRUSTED, strlen(WIRE_XATTR_TRUSTED)) == 0) &&
           dc_sa_no_xattrs(fs, ino);
}

ssize_t depfs_getxattr(depfs_t *fs, uint64_t ino, const char *name, void *value, size_t size)
{
    int rc = check_xattr_name(name);
    if (rc < 0)
        return rc;
    if (xattr_known_absent(fs, ino, name)) {
        dc_set_error("no xattr '%s'", name);
        return -ENODATA;
    }
    return dc_xattr_get(fs, ino, name, value, size);
}

ssize_t depfs_listxattr(depfs_t *fs, uint64_t ino, char *list, size_t size)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_ino = 1;
    req.ino = ino;
    Depfs__MdsReply *rep = NULL;
    ssize_t ret = dc_mds_call(fs, DEPFS__MDS_OP__MDS_LISTXATTR, &req, &rep);
    if (ret < 0)
        goto out;
    size_t need = 0;
    for (size_t i = 0; i < rep->n_xattr_names; i++)
        need += strlen(rep->xattr_names[i]) + 1;
    if (size == 0) {
        ret = (ssize_t)need;
        goto out;
    }
    if (need > size) {
        dc_set_error("xattr list of %zu bytes does not fit %zu", need, size);
        ret = -ERANGE;
        goto out;
    }
    size_t off = 0;
    for (size_t i = 0; i < rep->n_xattr_names; i++) {
        size_t l = strlen(rep->xattr_names[i]) + 1;
        memcpy(list + off, rep->xattr_names[i], l);
        off += l;
    }
    ret = (ssize_t)need;
out:
    free_rep(rep);
    return ret;
}

int depfs_removexattr(depfs_t *fs, uint64_t ino, const char *name)
{
    int rc = check_xattr_name(name);
    if (rc < 0)
        return rc;
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_ino = 1;
    req.ino = ino;
    req.xattr_name = (char *)name;
    return call_plain(fs, DEPFS__MDS_OP__MDS_REMOVEXATTR, &req);
}

/* ---------------------------------------------------------------- layout */



/* A directory without a layout in its getattr: its xattr, else the mount's
 * default. */
static int dir_layout(depfs_t *fs, uint64_t ino, depfs_layout_info *out)
{
    char spec[64];
    memset(out, 0, sizeof *out);
    out->n = fs->default_n;
    out->k = fs->default_k;
    out->stripe_unit = fs->default_su;
    out->codec_version = CODEC_VERSION_CURRENT;
    ssize_t len = depfs_getxattr(fs, ino, DEPFS_LAYOUT_XATTR, spec, sizeof spec - 1);
    if (len == -ENODATA)
        return 0;
    if (len < 0)
        return (int)len;
    spec[len] = '\0';
    char why[256];
    unsigned n, k;
    uint32_t su;
    if (label_parse_spec(spec, &n, &k, &su, why, sizeof why) < 0) {
        dc_set_error("directory layout '%s': %s", spec, why);
        return -EPROTO;
    }
    out->n = n;
    out->k = k;
    if (su)
        out->stripe_unit = su;
    return 0;
}

int depfs_get_layout(depfs_t *fs, uint64_t ino, depfs_layout_info *out)
{
    Depfs__MdsReply *rep = NULL;
    int rc = dc_getattr_rep(fs, ino, &rep);
    if (rc < 0)
        goto out;
    if (rep->layout && rep->layout->n) {
        layout l;
        dc_layout_from_pb(rep->layout, &l);
        dc_layout_to_info(&l, out);
    } else if (S_ISDIR(rep->attr->mode)) {
        rc = dir_layout(fs, ino, out);
    } else {
        dc_set_error("inode %llu has no layout (not a regular file)", (unsigned long long)ino);
        rc = -EINVAL;
    }
out:
    free_rep(rep);
    return rc;
}
