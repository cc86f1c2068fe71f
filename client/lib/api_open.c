/* api_open.c - libdepfs entry points: file handles. create (with a requested layout),
 * open by inode (O_TRUNC; the attributes its reply gave, for the question
 * after it), a recovery client's hold of an inode
 * (dc_open_held), close (flush, then drop the inode), fstat,
 * ftruncate (the truncate sequence itself is the truncate engine
 * dc_truncate: flush, data side, MDS size, local size). O_APPEND is honoured by
 * the data path (depfs_write), see core.h. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include "api.h"
#include "engines.h"
#include "label.h"
#include "log.h"

static void free_rep(Depfs__MdsReply *rep)
{
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
}


/* An open handle on the file described by rep (attr + layout). */
static int open_finish(depfs_t *fs, const Depfs__MdsReply *rep, int flags, uint64_t gen,
                       depfs_fh_t **out)
{
    *out = NULL;
    if (!rep->attr || !rep->layout) {
        dc_set_error("MDS reply for a file without attributes or layout");
        return -EPROTO;
    }
    layout lay;
    dc_layout_from_pb(rep->layout, &lay);
    char why[256];
    if (layout_validate(&lay, why, sizeof why) < 0) {
        dc_set_error("file %llu has an unusable layout: %s", (unsigned long long)rep->attr->ino, why);
        return -EIO;
    }
    depfs_fh_t *fh = calloc(1, sizeof *fh);
    if (!fh) {
        dc_set_error("out of memory");
        return -ENOMEM;
    }
    dc_inode *in = dc_inode_get(fs, rep->attr->ino, &lay, rep->attr->size, gen);
    if (!in) {
        free(fh);
        return -ENOMEM;
    }
    dc_inode_note_hold(in, rep);
    /* what its I/O shows the servers */
    dc_cap_take(fs, in->ino, rep, (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC));
    fh->fs = fs;
    fh->inode = in;
    fh->flags = flags;
    fh->wb_err_mark = dc_wb_err_mark(in); /* failures before it are not its */
    dc_cred_current(&fh->cred);
    if (flags & O_TRUNC) {
        pthread_mutex_lock(&in->lock);
        bool nonempty = in->size > 0 || rep->attr->size > 0;
        pthread_mutex_unlock(&in->lock);
        int rc = nonempty ? dc_truncate(fs, in, rep->attr->size, 0) : 0;
        if (rc < 0) {
            dc_inode_put(fs, in);
            free(fh);
            return rc;
        }
    }
    *out = fh;
    return 0;
}

/* The mount default applies only where no directory layout is inherited. */
static bool parent_has_layout(depfs_t *fs, uint64_t parent)
{
    return dc_xattr_get(fs, parent, DEPFS_LAYOUT_XATTR, NULL, 0) >= 0;
}

static int create_want(depfs_t *fs, uint64_t parent, const depfs_layout_info *want,
                       Depfs__MdsRequest *req)
{
    unsigned n = want ? want->n : 0, k = want ? want->k : 0;
    uint32_t su = want ? want->stripe_unit : 0;
    char why[256];
    if (n && label_check_cluster(n, fs->nservers, why, sizeof why) < 0) {
        dc_set_error("%s", why);
        return -EINVAL;
    }
    if (n && k > n) {
        dc_set_error("k (%u) > n (%u)", k, n);
        return -EINVAL;
    }
    if (!n && !k && !su && fs->default_from_mount && !parent_has_layout(fs, parent)) {
        n = fs->default_n;
        k = fs->default_k;
        su = fs->default_su;
    }
    req->has_want_n = req->has_want_k = req->has_want_su = 1;
    req->want_n = n;
    req->want_k = k;
    req->want_su = su;
    return 0;
}

int depfs_create(depfs_t *fs, uint64_t parent, const char *name, mode_t mode, int flags,
                 const depfs_cred *cr, const depfs_layout_info *want, struct stat *st,
                 depfs_fh_t **fh)
{
    bool unlinked = (flags & O_TMPFILE) == O_TMPFILE;
    *fh = NULL;
    if (unlinked ? name != NULL : (!name || !name[0] || strchr(name, '/'))) {
        dc_set_error("bad name '%s'%s", name ? name : "(null)", unlinked ? " (O_TMPFILE takes none)" : "");
        return -EINVAL;
    }
    uint32_t groups[DEPFS_MAX_GROUPS];
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    int rc = create_want(fs, parent, want, &req);
    if (rc < 0)
        return rc;
    req.has_parent = 1;
    req.parent = parent;
    req.name = (char *)name;
    req.has_unlinked = req.unlinked = unlinked;
    req.has_mode = 1;
    req.mode = S_IFREG | (mode & 07777);
    req.has_flags = 1; /* an existing file is opened: the MDS checks the access */
    req.flags = (uint32_t)flags & (O_EXCL | O_ACCMODE | O_TRUNC);
    dc_req_cred(&req, cr, groups);
    Depfs__MdsReply *rep = NULL;
    rc = dc_mds_call_ticketed(fs, DEPFS__MDS_OP__MDS_CREATE, &req, &rep);
    if (rc == 0 && rep->attr && !S_ISREG(rep->attr->mode)) {
        dc_set_error("'%s' exists and is not a regular file", name ? name : "");
        rc = S_ISDIR(rep->attr->mode) ? -EISDIR : -EEXIST;
    }
    if (rc == 0) /* O_TMPFILE carries O_DIRECTORY: not the handle's business */
        rc = open_finish(fs, rep, unlinked ? flags & ~O_TMPFILE : flags, DC_SIZE_GEN_UNKNOWN, fh);
    if (rc == 0)
        dc_reply_to_stat(fs, rep, st);
    if (rc == 0 && !unlinked) /* the FUSE kernel holds the node it returns */
        dc_handle_counted(fs, rep->attr, parent);
    if (rc == 0 && st && (flags & O_TRUNC))
        st->st_size = 0, st->st_blocks = 0;
    free_rep(rep);
    return rc;
}

/* MDS_OPEN: attributes and layout once the MDS let the caller open it
 * with flags (one round trip, as the getattr it replaces). Without a
 * handle of it open here the caller reached it through a name: one that
 * lost its names since (unlinked, or another file renamed over it), or
 * whose names changed since the FUSE kernel was given the name it opens
 * through (renamed away: the name generation that lookup gave), is
 * -ESTALE, so that the name is looked up again (close-to-open). With one,
 * it may be a reopen of that handle's file (/proc/PID/fd/N, O_TMPFILE),
 * which works as on a local file system. */
static int open_rep(depfs_t *fs, uint64_t ino, int flags, Depfs__MdsReply **rep)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_ino = 1;
    req.ino = ino;
    req.has_flags = 1;
    req.flags = (uint32_t)flags & (O_ACCMODE | O_TRUNC);
    req.has_linked = 1;
    req.linked = dc_inode_find(fs, ino) == NULL;
    /* through a name the kernel holds: the name generation and the names
     * epoch its lookup gave, with the directory it named the file in (a
     * directory above moved since) */
    if (req.linked)
        dc_names_epoch_for_open(fs, ino, &req);
    int rc = dc_mds_call_ticketed(fs, DEPFS__MDS_OP__MDS_OPEN, &req, rep);
    if (rc == 0 && !(*rep)->attr) {
        dc_set_error("MDS open reply without attributes");
        rc = -EPROTO;
    }
    return rc;
}

int depfs_open_attr_take(depfs_t *fs, uint64_t ino, unsigned max_age_ms, struct stat *st)
{
    if (!fs || !st || ino == 0)
        return -EINVAL;
    return dc_inode_open_attr_take(fs, ino, max_age_ms, st);
}

int depfs_open_ino(depfs_t *fs, uint64_t ino, int flags, depfs_fh_t **fh)
{
    *fh = NULL;
    Depfs__MdsReply *rep = NULL;
    uint64_t gen = dc_inode_size_gen(fs, ino), dir_gen = dc_dirattr_gen(fs);
    int rc = open_rep(fs, ino, flags, &rep);
    if (rc < 0)
        goto out;
    mode_t mode = (mode_t)rep->attr->mode;
    if (S_ISDIR(mode)) {
        dc_set_error("inode %llu is a directory", (unsigned long long)ino);
        rc = -EISDIR;
    } else if (S_ISLNK(mode)) {
        dc_set_error("inode %llu is a symbolic link", (unsigned long long)ino);
        rc = -ELOOP;
    } else if (!S_ISREG(mode)) {
        dc_set_error("inode %llu is not a regular file", (unsigned long long)ino);
        rc = -EOPNOTSUPP;
    } else if (flags & O_DIRECTORY) {
        dc_set_error("inode %llu is not a directory", (unsigned long long)ino);
        rc = -ENOTDIR;
    }
    if (rc == 0)
        rc = open_finish(fs, rep, flags, gen, fh);
    if (rc == 0) { /* for the kernel's question after it (an O_TRUNC moved size_gen past gen) */
        struct stat st;
        dc_reply_to_stat(fs, rep, &st);
        dc_inode_open_attr_keep((*fh)->inode, &st, dir_gen, gen);
    }
out:
    free_rep(rep);
    return rc;
}

int dc_open_held(depfs_t *fs, uint64_t ino, depfs_fh_t **fh)
{
    *fh = NULL;
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep = NULL;
    req.has_ino = req.has_renew_hold = req.renew_hold = true;
    req.ino = ino;
    req.has_flags = true; /* a reader's hold */
    req.flags = O_RDONLY;
    uint64_t gen = dc_inode_size_gen(fs, ino);
    int rc = dc_mds_call_ticketed(fs, DEPFS__MDS_OP__MDS_OPEN, &req, &rep);
    if (rc == 0 && (!rep->attr || !S_ISREG(rep->attr->mode))) {
        dc_set_error("inode %llu is not a regular file", (unsigned long long)ino);
        rc = -EINVAL;
    }
    if (rc == 0)
        rc = open_finish(fs, rep, O_RDONLY, gen, fh);
    free_rep(rep);
    return rc;
}

int depfs_close(depfs_fh_t *fh)
{
    if (!fh)
        return -EBADF;
    int rc = depfs_flush(fh);
    dc_inode_put(fh->fs, fh->inode);
    free(fh);
    return rc;
}

int depfs_fstat(depfs_fh_t *fh, struct stat *st)
{
    dc_inode *in = fh->inode;
    Depfs__MdsReply *rep = NULL;
    int rc = dc_getattr_rep(fh->fs, in->ino, &rep);
    if (rc == 0) /* also unlinked: the MDS keeps it while handles hold it */
        dc_reply_to_stat(fh->fs, rep, st);
    free_rep(rep);
    return rc;
}

int depfs_ftruncate(depfs_fh_t *fh, uint64_t size)
{
    if ((fh->flags & O_ACCMODE) == O_RDONLY) {
        dc_set_error("ftruncate on a handle not open for writing");
        return -EINVAL;
    }
    if (size > (uint64_t)INT64_MAX) {
        dc_set_error("size %llu too large", (unsigned long long)size);
        return -EFBIG;
    }
    Depfs__MdsReply *rep = NULL;
    dc_acting saved;
    dc_act_push(&fh->cred, &saved); /* an open handle truncates as its opener */
    int rc = dc_getattr_rep(fh->fs, fh->inode->ino, &rep);
    if (rc == 0)
        rc = dc_truncate(fh->fs, fh->inode, rep->attr->size, size);
    dc_act_pop(&saved);
    free_rep(rep);
    return rc;
}

uint64_t depfs_fh_ino(const depfs_fh_t *fh) { return fh->inode->ino; }

int depfs_fh_layout(const depfs_fh_t *fh, depfs_layout_info *out)
{
    dc_inode *in = fh->inode;
    pthread_mutex_lock(&in->lock);
    layout l = in->lay;
    pthread_mutex_unlock(&in->lock);
    dc_layout_to_info(&l, out);
    return 0;
}

int depfs_fh_connect(depfs_fh_t *fh)
{
    dc_inode *in = fh->inode;
    pthread_mutex_lock(&in->lock);
    layout l = in->lay;
    pthread_mutex_unlock(&in->lock);
    bool reading = (fh->flags & O_ACCMODE) == O_RDONLY;
    dc_conn_want want[LAYOUT_MAX_N];
    for (unsigned p = 0; p < l.n; p++)
        want[p] = (dc_conn_want){.id = l.servers[p], .reading = reading};
    dc_servers_connect(fh->fs, want, l.n);
    return 0;
}
