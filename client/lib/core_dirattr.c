/* core_dirattr.c - the attributes a directory was left with by this
 * client's own last change in it (MdsReply.dir_attr: create, mknod, mkdir,
 * symlink, unlink), kept for the one question that follows.
 *
 * Why: through FUSE the kernel drops a directory's cached attributes after
 * every create or remove in it and, checking permissions itself
 * (default_permissions), asks for them again before the next one: a
 * GETATTR round trip to the MDS per create and per remove, on top of the
 * change's own, for attributes the change's reply already carried.
 * depfs_dir_attr_take (dc_dirattr_take) answers that question once from
 * here.
 *
 * What keeps it true:
 *  - an entry is the MDS's own view of the directory, taken under its
 *    namespace lock in the change; of two changes of one directory the
 *    later (ctime) wins;
 *  - every other call of this client that may change a directory (all but
 *    the read-only ops below, and any call that failed) forgets what is
 *    kept for the directories it names and bumps dirattr_gen; a change
 *    whose call began before such a bump is not kept, so nothing older than
 *    this client's own last change of a directory is ever given out;
 *  - an entry is given out once, no older than the taker's bound (another
 *    client's changes are then seen as late as a kernel attribute cache
 *    would show them), and only for a directory.
 * The MDS still checks every permission itself; this only spares a
 * round trip to the kernel's own check. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "core.h"

/* Ops that change no directory's attributes: they neither forget nor keep. */
static bool op_read_only(Depfs__MdsOp op)
{
    switch (op) {
    case DEPFS__MDS_OP__MDS_OPEN:    /* a file's access (O_TRUNC: its size) */
    case DEPFS__MDS_OP__MDS_EXTEND:  /* a file's size and mtime */
    case DEPFS__MDS_OP__MDS_RELEASE:
    case DEPFS__MDS_OP__MDS_PURGE_DONE:
        return true;
    default:
        return dc_mds_op_reads_only(op);
    }
}

static dc_dirattr *slot_of(depfs_t *fs, uint64_t ino)
{
    return &fs->dirattr[ino % DC_DIRATTR_SLOTS];
}

uint64_t dc_dirattr_gen(depfs_t *fs)
{
    return atomic_load(&fs->dirattr_gen);
}

/* Under dirattr_lock. */
static void forget(depfs_t *fs, uint64_t ino)
{
    dc_dirattr *s = slot_of(fs, ino);
    if (s->ino == ino)
        s->ino = 0;
}

/* Under dirattr_lock. */
static void keep(depfs_t *fs, const Depfs__Attr *a)
{
    dc_dirattr *s = slot_of(fs, a->ino);
    if (s->ino == a->ino && s->ctime_ns > a->ctime_ns)
        return; /* a later change of it is kept already */
    s->ino = a->ino;
    s->ctime_ns = a->ctime_ns;
    s->kept_ms = dc_now_ms();
    dc_attr_to_stat(a, &s->st);
}

void dc_dirattr_after_call(depfs_t *fs, Depfs__MdsOp op, const Depfs__MdsRequest *req,
                           const Depfs__MdsReply *rep, uint64_t gen_before)
{
    if (op_read_only(op))
        return;
    const Depfs__Attr *a = rep && rep->err == 0 ? rep->dir_attr : NULL;
    bool kept_dir = a && req->has_parent && a->ino == req->parent && S_ISDIR(a->mode);
    pthread_mutex_lock(&fs->dirattr_lock);
    if (kept_dir && atomic_load(&fs->dirattr_gen) == gen_before) {
        keep(fs, a);
    } else {
        atomic_fetch_add(&fs->dirattr_gen, 1);
        if (req->has_parent)
            forget(fs, req->parent);
        if (req->has_new_parent)
            forget(fs, req->new_parent);
        if (req->has_ino)
            forget(fs, req->ino);
    }
    pthread_mutex_unlock(&fs->dirattr_lock);
}

int dc_dirattr_take(depfs_t *fs, uint64_t ino, unsigned max_age_ms, struct stat *st)
{
    int rc = -ENOENT;
    pthread_mutex_lock(&fs->dirattr_lock);
    dc_dirattr *s = slot_of(fs, ino);
    if (s->ino == ino) {
        if (dc_now_ms() - s->kept_ms <= max_age_ms) {
            *st = s->st;
            rc = 0;
        }
        s->ino = 0; /* once: the question after the change */
    }
    pthread_mutex_unlock(&fs->dirattr_lock);
    return rc;
}
