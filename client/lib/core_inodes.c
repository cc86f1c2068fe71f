/* core_inodes.c - libdepfs core: the table of inodes open in this client (hash
 * by ino, refcounted by open handles), the size this client grew a file to
 * and its commit to the MDS (MDS_EXTEND, also for a file unlinked while
 * open: the MDS keeps it by inode number until the last close anywhere),
 * and the release of the MDS's hold at the last close.
 *
 * Lock order: fs->inodes_lock before dc_inode.lock. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "ino_hash.h"
#include "log.h"
#include "wire_check.h"

static unsigned bucket_of(uint64_t ino)
{
    return (unsigned)(ino_hash(ino) >> 54) % DC_INODE_BUCKETS;
}

static dc_inode *find_locked(depfs_t *fs, uint64_t ino)
{
    for (dc_inode *in = fs->inodes[bucket_of(ino)]; in; in = in->next)
        if (in->ino == ino)
            return in;
    return NULL;
}

dc_inode *dc_inode_find(depfs_t *fs, uint64_t ino)
{
    pthread_mutex_lock(&fs->inodes_lock);
    dc_inode *in = find_locked(fs, ino);
    pthread_mutex_unlock(&fs->inodes_lock);
    return in;
}

/* The view an MDS answer gives: its size, raised to where this client's
 * uncommitted writes end (never to an older view: another client may have
 * cut the file since). in->lock held. */
static void view_from_mds_locked(dc_inode *in, uint64_t mds_size)
{
    in->size = in->size_dirty && in->written_end > mds_size ? in->written_end : mds_size;
}

dc_inode *dc_inode_get(depfs_t *fs, uint64_t ino, const layout *lay, uint64_t mds_size,
                       uint64_t gen)
{
    assert(lay);
    pthread_mutex_lock(&fs->inodes_lock);
    dc_inode *in = find_locked(fs, ino);
    if (in) {
        pthread_mutex_lock(&in->lock);
        in->refs++;
        if (in->size_gen == gen)
            view_from_mds_locked(in, mds_size);
        pthread_mutex_unlock(&in->lock);
        goto out;
    }
    in = calloc(1, sizeof *in);
    if (!in) {
        dc_set_error("out of memory");
        goto out;
    }
    in->ino = ino;
    in->lay = *lay;
    in->size = mds_size;
    in->refs = 1;
    pthread_mutex_init(&in->lock, NULL);
    dc_handle_pin(fs, ino); /* its tag stays while it is open here */
    unsigned b = bucket_of(ino);
    in->next = fs->inodes[b];
    fs->inodes[b] = in;
out:
    pthread_mutex_unlock(&fs->inodes_lock);
    return in;
}

void dc_inode_note_hold(dc_inode *in, const Depfs__MdsReply *rep)
{
    pthread_mutex_lock(&in->lock);
    in->held = true;
    if (rep->has_hold_gen && rep->hold_gen > in->hold_gen)
        in->hold_gen = rep->hold_gen;
    pthread_mutex_unlock(&in->lock);
}

static size_t bucket_len(const dc_inode *in)
{
    size_t n = 0;
    for (; in != NULL; in = in->next)
        n++;
    return n;
}

size_t dc_inodes_open_list(depfs_t *fs, unsigned *cursor, uint64_t *out, size_t max)
{
    size_t n = 0;
    assert(max > 0);
    pthread_mutex_lock(&fs->inodes_lock);
    unsigned b = *cursor;
    for (; b < DC_INODE_BUCKETS; b++) {
        if (n > 0 && n + bucket_len(fs->inodes[b]) > max)
            break; /* the next batch starts with this bucket */
        for (const dc_inode *in = fs->inodes[b]; in != NULL && n < max; in = in->next)
            out[n++] = in->ino;
    }
    *cursor = b;
    pthread_mutex_unlock(&fs->inodes_lock);
    return n;
}

dc_inode *dc_inode_hold(depfs_t *fs, uint64_t ino)
{
    pthread_mutex_lock(&fs->inodes_lock);
    dc_inode *in = find_locked(fs, ino);
    if (in) {
        pthread_mutex_lock(&in->lock);
        in->refs++;
        pthread_mutex_unlock(&in->lock);
    }
    pthread_mutex_unlock(&fs->inodes_lock);
    return in;
}

bool dc_inode_local_size(depfs_t *fs, uint64_t ino, uint64_t *size, int64_t *mtime_ns)
{
    bool found = false;
    pthread_mutex_lock(&fs->inodes_lock);
    dc_inode *in = find_locked(fs, ino);
    if (in) {
        pthread_mutex_lock(&in->lock);
        found = in->size_dirty;
        *size = in->written_end;
        *mtime_ns = in->mtime_ns;
        pthread_mutex_unlock(&in->lock);
    }
    pthread_mutex_unlock(&fs->inodes_lock);
    return found;
}

static void unlink_locked(depfs_t *fs, dc_inode *in)
{
    dc_inode **pp = &fs->inodes[bucket_of(in->ino)];
    while (*pp && *pp != in)
        pp = &(*pp)->next;
    assert(*pp == in);
    *pp = in->next;
    in->next = NULL;
}

void dc_inode_free(depfs_t *fs, dc_inode *in)
{
    uint64_t ino = in->ino, hold_gen = in->hold_gen;
    bool held = in->held; /* else a truncate's inode of a file not open here */
    if (fs->inode_released)
        fs->inode_released(fs, in);
    pthread_mutex_destroy(&in->lock);
    free(in);
    if (held) /* after the last flush: no handle here uses it */
        dc_cap_release(fs, ino, hold_gen); /* unpins ino once its release is sent */
    else
        dc_handle_unpin(fs, ino);
}

void dc_inode_put(depfs_t *fs, dc_inode *in)
{
    if (!in)
        return;
    bool last = false;
    pthread_mutex_lock(&fs->inodes_lock);
    pthread_mutex_lock(&in->lock);
    assert(in->refs > 0);
    in->refs--;
    if (in->refs == 0) {
        unlink_locked(fs, in);
        last = true;
    }
    pthread_mutex_unlock(&in->lock);
    pthread_mutex_unlock(&fs->inodes_lock);
    if (last)
        dc_inode_free(fs, in);
}

uint64_t dc_inode_size_gen(depfs_t *fs, uint64_t ino)
{
    uint64_t gen = 0;
    pthread_mutex_lock(&fs->inodes_lock);
    dc_inode *in = find_locked(fs, ino);
    if (in) {
        pthread_mutex_lock(&in->lock);
        gen = in->size_gen;
        pthread_mutex_unlock(&in->lock);
    }
    pthread_mutex_unlock(&fs->inodes_lock);
    return gen;
}

void dc_inode_adopt_mds_size(depfs_t *fs, uint64_t ino, uint64_t gen, uint64_t mds_size)
{
    pthread_mutex_lock(&fs->inodes_lock);
    dc_inode *in = find_locked(fs, ino);
    if (in) {
        pthread_mutex_lock(&in->lock);
        if (in->size_gen == gen)
            view_from_mds_locked(in, mds_size);
        pthread_mutex_unlock(&in->lock);
    }
    pthread_mutex_unlock(&fs->inodes_lock);
}

void dc_inode_forget_mtime(depfs_t *fs, uint64_t ino)
{
    pthread_mutex_lock(&fs->inodes_lock);
    dc_inode *in = find_locked(fs, ino);
    if (in) {
        pthread_mutex_lock(&in->lock);
        in->mtime_ns = 0;
        pthread_mutex_unlock(&in->lock);
    }
    pthread_mutex_unlock(&fs->inodes_lock);
}

void dc_inode_open_attr_keep(dc_inode *in, const struct stat *st, uint64_t dir_gen,
                             uint64_t size_gen)
{
    pthread_mutex_lock(&in->lock);
    in->open_attr = *st;
    in->open_attr_ms = dc_now_ms();
    in->open_dir_gen = dir_gen;
    in->open_size_gen = size_gen;
    in->open_attr_kept = true;
    pthread_mutex_unlock(&in->lock);
}

int dc_inode_open_attr_take(depfs_t *fs, uint64_t ino, unsigned max_age_ms, struct stat *st)
{
    int rc = -ENOENT;
    uint64_t dir_gen = dc_dirattr_gen(fs);
    pthread_mutex_lock(&fs->inodes_lock);
    dc_inode *in = find_locked(fs, ino);
    if (in) {
        pthread_mutex_lock(&in->lock);
        if (in->open_attr_kept && dc_now_ms() - in->open_attr_ms <= max_age_ms &&
            in->open_dir_gen == dir_gen && in->open_size_gen == in->size_gen) {
            *st = in->open_attr;
            rc = 0;
        }
        in->open_attr_kept = false; /* once: the question after the open */
        pthread_mutex_unlock(&in->lock);
    }
    pthread_mutex_unlock(&fs->inodes_lock);
    return rc;
}

bool dc_inode_size_dirty(dc_inode *in)
{
    pthread_mutex_lock(&in->lock);
    bool dirty = in->size_dirty;
    pthread_mutex_unlock(&in->lock);
    return dirty;
}

int dc_inode_commit_size(depfs_t *fs, dc_inode *in, const uint64_t *alloc_bytes)
{
    pthread_mutex_lock(&in->lock);
    bool dirty = in->size_dirty;
    uint64_t end = in->written_end, gen = in->size_gen;
    int64_t mtime_ns = in->mtime_ns; /* 0: a time set since the writes stands */
    pthread_mutex_unlock(&in->lock);
    if (!dirty)
        return 0;

    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_ino = 1;
    req.ino = in->ino;
    req.has_size = 1;
    req.size = end;
    req.has_mtime_ns = mtime_ns != 0;
    req.mtime_ns = mtime_ns;
    req.has_alloc_bytes = alloc_bytes != NULL;
    req.alloc_bytes = alloc_bytes ? *alloc_bytes : 0;
    Depfs__MdsReply *rep = NULL;
    int rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_EXTEND, &req, &rep);
    if (rc == 0) {
        pthread_mutex_lock(&in->lock);
        if (in->size_gen == gen) { /* else written or cut here meanwhile: stays dirty */
            in->size_dirty = false;
            in->written_end = 0;
            in->size_gen++;
            if (rep->attr)
                in->size = rep->attr->size;
        }
        pthread_mutex_unlock(&in->lock);
    }
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rc;
}

dc_inode *dc_inodes_detach_all(depfs_t *fs)
{
    dc_inode *all = NULL;
    pthread_mutex_lock(&fs->inodes_lock);
    for (unsigned b = 0; b < DC_INODE_BUCKETS; b++) {
        while (fs->inodes[b]) {
            dc_inode *in = fs->inodes[b];
            fs->inodes[b] = in->next;
            in->next = all;
            all = in;
        }
    }
    pthread_mutex_unlock(&fs->inodes_lock);
    return all;
}

/* --------------------------------------- MDS replies with the local view */

void dc_reply_to_stat(depfs_t *fs, const Depfs__MdsReply *rep, struct stat *st)
{
    if (st)
        dc_attr_layout_to_stat(fs, rep->attr, rep->layout, st);
}

void dc_attr_layout_to_stat(depfs_t *fs, const Depfs__Attr *a, const Depfs__Layout *lay,
                            struct stat *st)
{
    dc_attr_to_stat(a, st);
    if (lay && lay->k && lay->stripe_unit)
        st->st_blksize = (blksize_t)((uint64_t)lay->k * lay->stripe_unit);
    if (!a || !S_ISREG(st->st_mode))
        return;
    bool measured = a->has_alloc_bytes && lay && lay->k > 0 && lay->k <= lay->n &&
                    lay->n <= LAYOUT_MAX_N && a->alloc_bytes <= WIRE_ALLOC_BYTES_MAX;
    if (measured) /* what the last writer measured; else (older files) the size */
        st->st_blocks = (blkcnt_t)dc_alloc_blocks(a->alloc_bytes, lay->n, lay->k);
    uint64_t size;
    int64_t mtime_ns;
    if (!dc_inode_local_size(fs, a->ino, &size, &mtime_ns))
        return;
    if (size > (uint64_t)st->st_size) {
        st->st_size = (off_t)size;
        if (!measured) /* a measured figure stands until this writer's commit */
            st->st_blocks = (blkcnt_t)((size + DC_BLOCK_BYTES - 1) / DC_BLOCK_BYTES);
    }
    if (mtime_ns > a->mtime_ns) {
        st->st_mtim.tv_sec = (time_t)(mtime_ns / DC_NS_PER_SEC);
        st->st_mtim.tv_nsec = (long)(mtime_ns % DC_NS_PER_SEC);
    }
}

int dc_getattr_rep(depfs_t *fs, uint64_t ino, Depfs__MdsReply **rep)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_ino = 1;
    req.ino = ino;
    uint64_t gen = dc_inode_size_gen(fs, ino);
    int rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_GETATTR, &req, rep);
    if (rc == 0 && !(*rep)->attr) {
        dc_set_error("MDS_GETATTR: reply without attributes");
        rc = -EPROTO;
    }
    if (rc == 0 && S_ISREG((*rep)->attr->mode))
        dc_inode_adopt_mds_size(fs, ino, gen, (*rep)->attr->size);
    return rc;
}
