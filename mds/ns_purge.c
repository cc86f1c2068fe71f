/* ns_purge.c - the purge queue in the namespace store (namespace.h "the
 * purge queue"): scanning the queued inodes, dropping one whose strip
 * files are gone, and the queue's totals. Queuing happens where a last
 * link goes (namespace.c ns_drop_link), in the same batch as the unlink. */
#include "ns_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "log.h"

int mds_ns_purge_scan(mds_ns *ns, uint64_t after_ino, unsigned scan_max, mds_purge_fn fn, void *arg,
                      uint64_t *last_ino, bool *eof, char *why)
{
    uint8_t prefix[MDS_KEY_MAX], start[MDS_KEY_MAX];
    const void *k, *v;
    size_t kl, vl;
    unsigned max = scan_max == 0 || scan_max > MDS_PURGE_SCAN_MAX ? MDS_PURGE_SCAN_MAX : scan_max;
    unsigned seen = 0;
    int rc = 0;

    *last_ino = after_ino;
    *eof = true;
    if (after_ino == UINT64_MAX)
        return 0;
    size_t plen = mds_key_purge_prefix(prefix);
    size_t slen = mds_key_purge(start, after_ino + 1);
    pthread_rwlock_rdlock(&ns->lock);
    kv_iter *it = kv_iter_new(ns->kv, prefix, plen, start, slen);
    if (!it) {
        rc = ns_fail(why, EIO, "store error");
        goto out;
    }
    while (kv_iter_next(it, &k, &kl, &v, &vl)) {
        mds_inode in;
        if (seen >= max) {
            *eof = false;
            break;
        }
        int64_t queued_ns;
        uint64_t held_until_s;
        if (kl != MDS_KEY_PREFIX_LEN || mds_purge_val_decode(v, vl, &queued_ns, &held_until_s) < 0) {
            rc = ns_fail(why, EIO, "corrupt purge queue entry (%zu/%zu bytes)", kl, vl);
            log_err("purge queue: %s", why ? why : "corrupt entry");
            break;
        }
        uint64_t ino = mds_key_purge_ino(k);
        seen++;
        *last_ino = ino;
        rc = ns_load_inode(ns, ino, &in, why);
        if (rc == 0 && (!S_ISREG(in.mode) || in.nlink != 0))
            rc = ns_fail(why, EIO, "purge queue names inode %llu, which is not an unlinked file",
                         (unsigned long long)ino);
        if (rc < 0) {
            log_err("purge queue: %s", why ? why : "bad entry");
            break;
        }
        rc = fn(arg, &in, held_until_s);
        if (rc != 0) {
            *eof = false;
            rc = rc < 0 ? rc : 0;
            break;
        }
    }
    kv_iter_free(it);
out:
    pthread_rwlock_unlock(&ns->lock);
    return rc;
}

/* ino's queue entry (the caller holds the namespace lock). */
static int load_entry(mds_ns *ns, uint64_t ino, int64_t *queued_ns, uint64_t *held_until_s, char *why)
{
    uint8_t key[MDS_KEY_MAX];
    void *val = NULL;
    size_t vlen = 0;
    int rc = kv_get(ns->kv, key, mds_key_purge(key, ino), &val, &vlen);
    if (rc == 0 && mds_purge_val_decode(val, vlen, queued_ns, held_until_s) < 0)
        rc = ns_fail(why, EIO, "corrupt purge queue entry of inode %llu", (unsigned long long)ino);
    free(val);
    if (rc == -ENOENT)
        return ns_fail(why, ENOENT, "inode %llu is not in the purge queue", (unsigned long long)ino);
    if (rc < 0)
        return ns_fail(why, EIO, "store error reading the purge queue");
    return 0;
}

int mds_ns_purge_recorded(mds_ns *ns, uint64_t ino, uint64_t *held_until_s, char *why)
{
    int64_t queued_ns;
    pthread_rwlock_rdlock(&ns->lock);
    int rc = load_entry(ns, ino, &queued_ns, held_until_s, why);
    pthread_rwlock_unlock(&ns->lock);
    return rc;
}

int mds_ns_purge_hold(mds_ns *ns, uint64_t ino, uint64_t until_s, bool lower, char *why)
{
    uint8_t key[MDS_KEY_MAX], val[MDS_PURGE_VAL_LEN];
    int64_t queued_ns;
    uint64_t held_until_s;
    ns_txn t;

    pthread_rwlock_wrlock(&ns->lock);
    int rc = load_entry(ns, ino, &queued_ns, &held_until_s, why);
    if (rc < 0 || held_until_s == until_s || (!lower && held_until_s > until_s))
        goto out;
    rc = ns_txn_begin(ns, &t);
    if (rc < 0)
        goto out;
    mds_purge_val_encode(val, queued_ns, until_s);
    kv_batch_put(t.b, key, mds_key_purge(key, ino), val, sizeof(val));
    if (ns_txn_commit(&t) < 0)
        rc = ns_fail(why, EIO, "store write failed");
out:
    pthread_rwlock_unlock(&ns->lock);
    return ns_settle(ns, rc, why);
}

/* Adds the drop of queued ino to t when it is queued and not kept; 1 when
 * it is, 0 when it is left, < 0 on a store error (the caller holds the
 * namespace lock). */
static int drop_one(ns_txn *t, uint64_t ino, mds_purge_keep_fn keep, void *arg, char *why)
{
    uint8_t key[MDS_KEY_MAX];
    int64_t queued_ns;
    uint64_t held_until_s;
    mds_inode in;
    int rc = load_entry(t->ns, ino, &queued_ns, &held_until_s, why);
    if (rc == -ENOENT)
        return 0; /* dropped before (a retried pass) or never queued */
    if (rc == 0 && keep && keep(arg, ino, held_until_s))
        return 0;
    if (rc == 0)
        rc = ns_load_inode(t->ns, ino, &in, why);
    if (rc == 0 && (!S_ISREG(in.mode) || in.nlink != 0))
        rc = ns_fail(why, EIO, "queued inode %llu is not an unlinked file", (unsigned long long)ino);
    if (rc < 0)
        return rc;
    kv_batch_delete(t->b, key, mds_key_purge(key, ino));
    if (t->purge_files > 0) /* a statistic: a count short of the entries clamps */
        t->purge_files--;
    rc = ns_destroy_inode(t, &in); /* takes its size off both totals */
    return rc < 0 ? rc : 1;
}

int mds_ns_purge_done(mds_ns *ns, const uint64_t *inos, size_t n, mds_purge_keep_fn keep, void *arg,
                      unsigned *dropped, char *why)
{
    ns_txn t;
    unsigned count = 0;
    *dropped = 0;
    if (n > WIRE_PURGE_LIST_MAX)
        return ns_fail(why, E2BIG, "%zu purge entries > max %u", n, WIRE_PURGE_LIST_MAX);
    pthread_rwlock_wrlock(&ns->lock);
    int rc = ns_txn_begin(ns, &t);
    if (rc < 0)
        goto out;
    for (size_t i = 0; i < n && rc >= 0; i++) {
        rc = drop_one(&t, inos[i], keep, arg, why);
        count += rc > 0;
    }
    if (rc < 0 || count == 0) {
        ns_txn_abort(&t);
        rc = rc < 0 ? rc : 0;
        goto out;
    }
    rc = ns_txn_commit(&t);
    if (rc < 0)
        rc = ns_fail(why, EIO, "store write failed");
    else
        *dropped = count;
out:
    pthread_rwlock_unlock(&ns->lock);
    return ns_settle(ns, rc, why);
}

void mds_ns_purge_stats(mds_ns *ns, uint64_t *files, uint64_t *bytes)
{
    pthread_rwlock_rdlock(&ns->lock);
    *files = ns->purge_files;
    *bytes = ns->purge_bytes;
    pthread_rwlock_unlock(&ns->lock);
}
