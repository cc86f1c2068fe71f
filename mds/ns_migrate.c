/* ns_migrate.c - the switch of `depfs migrate` in the namespace store
 * (namespace.h mds_ns_migrate_swap): a copy of a regular file, made under a
 * new layout into an unlinked inode, takes the file's name in one batch
 * when the file did not change since the copy began; the file's own inode
 * goes to the purge queue like a file renamed over, so its open handles
 * keep it until their last close. Everything here runs under the
 * namespace's write lock. */
#include "ns_internal.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "log.h"
#include "perm.h"

/* What the swap loads and changes. */
typedef struct mg_ctx {
    mds_inode dir, src, copy;
    uint64_t seq; /* the name's readdir seq: the copy keeps the file's place */
} mg_ctx;

/* Whether ino has a purge queue entry (-EIO for a store error). */
static int queued(mds_ns *ns, uint64_t ino, bool *yes)
{
    uint8_t key[MDS_KEY_MAX];
    void *val = NULL;
    size_t vlen = 0;
    int rc = kv_get(ns->kv, key, mds_key_purge(key, ino), &val, &vlen);
    free(val);
    if (rc < 0 && rc != -ENOENT)
        return -EIO;
    *yes = rc == 0;
    return 0;
}

/* who (NULL: unchecked) must be able to search the directory before its
 * entry is looked at, as for a lookup. */
static int load(mds_ns *ns, const mds_caller *who, mg_ctx *c, const mds_migrate_in *in, char *why)
{
    uint64_t ino;
    uint32_t mode;
    bool copy_queued = false;
    int rc = ns_load_dir(ns, in->parent, &c->dir, why);
    if (rc == 0 && who)
        rc = perm_lookup(who, &c->dir, why);
    if (rc == 0)
        rc = ns_find_dirent(ns, in->parent, in->name, &ino, &c->seq, &mode, why);
    if (rc < 0)
        return rc;
    if (ino != in->src_ino)
        return ns_fail(why, ESTALE, "'%s' is inode %llu now, not %llu as when the copy began "
                       "(renamed or replaced meanwhile)", in->name, (unsigned long long)ino,
                       (unsigned long long)in->src_ino);
    rc = ns_load_inode(ns, in->src_ino, &c->src, why);
    if (rc == 0)
        rc = ns_load_inode(ns, in->copy_ino, &c->copy, why);
    if (rc == 0)
        rc = queued(ns, in->copy_ino, &copy_queued) < 0 ? ns_fail(why, EIO, "store error") : 0;
    if (rc < 0)
        return rc;
    if (!copy_queued)
        return ns_fail(why, EINVAL, "inode %llu is not an unlinked copy (in the purge queue)",
                       (unsigned long long)in->copy_ino);
    return 0;
}

/* The file must still be the one copied, whole, and a one-link regular file. */
static int check(const mg_ctx *c, const mds_migrate_in *in, char *why)
{
    if (!S_ISREG(c->src.mode) || !c->src.has_layout)
        return ns_fail(why, EINVAL, "'%s' is not a regular file", in->name);
    if (c->src.nlink != 1)
        return ns_fail(why, EMLINK, "'%s' has %u hard links: migrate replaces one name's inode, "
                       "so it moves files with one link only", in->name, c->src.nlink);
    if (!S_ISREG(c->copy.mode) || !c->copy.has_layout || c->copy.nlink != 0)
        return ns_fail(why, EINVAL, "inode %llu is not an unlinked regular file",
                       (unsigned long long)in->copy_ino);
    if (c->src.data_version != in->data_version)
        return ns_fail(why, ESTALE, "'%s' changed while it was copied (data version %llu, the "
                       "copy is of %llu)", in->name, (unsigned long long)c->src.data_version,
                       (unsigned long long)in->data_version);
    if (c->copy.size != c->src.size)
        return ns_fail(why, EINVAL, "the copy of '%s' holds %llu bytes, the file %llu: copy "
                       "incomplete", in->name, (unsigned long long)c->copy.size,
                       (unsigned long long)c->src.size);
    return 0;
}

/* The caller replaces the directory's entry, as an unlink of the file and
 * a create of the copy under its name would (write+search, and in a
 * sticky directory the directory's or the file's owner: perm_remove), and
 * writes both files: the file (as for a write) and the copy. */
static int permit(const mds_caller *who, const mg_ctx *c, char *why)
{
    int rc = perm_remove(who, &c->dir, &c->src, why);
    if (rc == 0)
        rc = perm_open(who, &c->src, O_WRONLY, why);
    return rc == 0 ? perm_open(who, &c->copy, O_WRONLY, why) : rc;
}

/* The copy's xattrs become the file's: its own go, the file's are copied
 * (the file's stay with it until it is dropped). */
static int move_xattrs(ns_txn *t, const mg_ctx *c)
{
    uint8_t prefix[MDS_KEY_MAX], key[MDS_KEY_MAX];
    const void *k, *v;
    size_t kl, vl;
    size_t plen = mds_key_xattr_prefix(prefix, c->copy.ino);
    if (ns_delete_prefix(t, prefix, plen) < 0)
        return -EIO;
    plen = mds_key_xattr_prefix(prefix, c->src.ino);
    kv_iter *it = kv_iter_new(t->ns->kv, prefix, plen, NULL, 0);
    if (!it)
        return -EIO;
    while (kv_iter_next(it, &k, &kl, &v, &vl)) {
        assert(kl > plen && kl <= MDS_KEY_MAX);
        size_t klen = mds_key_xattr(key, c->copy.ino, (const char *)k + plen, kl - plen);
        kv_batch_put(t->b, key, klen, v, vl);
    }
    kv_iter_free(it);
    return 0;
}

/* The copy takes the name with the file's attributes; the file is
 * unlinked into the purge queue (with its openers' holds). */
static int apply(ns_txn *t, mg_ctx *c, const char *name, mds_removed *rm)
{
    uint8_t key[MDS_KEY_MAX];
    int64_t now = clock_real_ns();
    mds_inode *cp = &c->copy, *src = &c->src;

    kv_batch_delete(t->b, key, mds_key_purge(key, cp->ino));
    assert(t->purge_files > 0);
    t->purge_files--;
    t->purge_bytes = ns_account(t->purge_bytes, cp->size, 0);
    cp->nlink = 1;
    cp->mode = src->mode;
    cp->uid = src->uid;
    cp->gid = src->gid;
    cp->atime_ns = src->atime_ns;
    cp->mtime_ns = src->mtime_ns;
    cp->ctime_ns = src->ctime_ns;
    cp->data_version = src->data_version + 1;
    cp->migrated_away = false;
    ns_put_inode(t, cp);
    if (move_xattrs(t, c) < 0)
        return -EIO;
    ns_put_dirent(t, c->dir.ino, name, cp->ino, c->seq, cp->mode);
    src->migrated_away = true;
    return ns_drop_link(t, src, now, rm);
}

int mds_ns_migrate_swap(mds_ns *ns, const mds_caller *who, const mds_migrate_in *in,
                        mds_inode *out, mds_removed *rm, char *why)
{
    mg_ctx c;
    ns_txn t;
    memset(rm, 0, sizeof(*rm));
    int rc = ns_check_name(in->name, why);
    if (rc < 0)
        return rc;
    if (in->src_ino == in->copy_ino)
        return ns_fail(why, EINVAL, "the copy is the file itself (inode %llu)",
                       (unsigned long long)in->src_ino);

    pthread_rwlock_wrlock(&ns->lock);
    rc = load(ns, who, &c, in, why);
    if (rc == 0 && who)
        rc = permit(who, &c, why);
    if (rc == 0 && in->copy_held && !in->copy_held(in->arg, in->copy_ino, why))
        rc = -EPERM; /* copy_held said why */
    if (rc == 0)
        rc = check(&c, in, why);
    if (rc == 0 && in->busy && in->busy(in->arg, in->src_ino, why))
        rc = -EBUSY; /* busy said why */
    if (rc < 0)
        goto out;
    rc = ns_txn_begin(ns, &t);
    if (rc < 0)
        goto out;
    rc = apply(&t, &c, in->name, rm);
    rc = rc < 0 ? (ns_txn_abort(&t), rc) : ns_txn_commit(&t);
    if (rc < 0) {
        memset(rm, 0, sizeof(*rm));
        rc = ns_fail(why, EIO, "store write failed");
        goto out;
    }
    *out = c.copy;
    log_info("migrate: '%s' in directory %llu is inode %llu now (layout %u@%u), inode %llu "
             "queued for purge", in->name, (unsigned long long)in->parent,
             (unsigned long long)c.copy.ino, c.copy.lay.n, c.copy.lay.k,
             (unsigned long long)in->src_ino);
out:
    pthread_rwlock_unlock(&ns->lock);
    return ns_settle(ns, rc, why);
}
