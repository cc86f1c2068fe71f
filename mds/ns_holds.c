/* ns_holds.c - the holds journal in the namespace store (namespace.h
 * "holds journal"): one record per hold the holds table keeps, the boot
 * record that says whether they outlived the last crash, the floor record
 * and the clean stop's record. Writes go through the store alone (its own
 * lock), never the namespace's. */
#include "ns_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define HOLDS_LOAD_BATCH 1024u /* expired records deleted per batch at the start */

/* One unsynced write of a batch (0 or -EIO). */
static int commit_nosync(mds_ns *ns, kv_batch *b)
{
    int rc = kv_batch_commit_nosync(ns->kv, b) < 0 ? -EIO : 0;
    kv_batch_free(b);
    return rc;
}

/* The same, durable when it returns 0 (why set otherwise). */
static int commit_synced(mds_ns *ns, kv_batch *b, char *why)
{
    int rc = commit_nosync(ns, b);
    if (rc == 0 && kv_sync(ns->kv) < 0)
        rc = -EIO;
    return rc < 0 ? ns_fail(why, EIO, "store write failed") : 0;
}

int mds_ns_hold_put(mds_ns *ns, uint64_t ino, uint64_t client, uint64_t until_s, bool writer)
{
    uint8_t key[MDS_KEY_HOLD_LEN], val[MDS_HOLD_VAL_LEN];
    kv_batch *b = kv_batch_new();
    if (!b)
        return -ENOMEM;
    mds_hold_val_encode(val, until_s, writer);
    kv_batch_put(b, key, mds_key_hold(key, ino, client), val, sizeof(val));
    return commit_nosync(ns, b);
}

int mds_ns_hold_drop(mds_ns *ns, uint64_t ino, uint64_t client)
{
    uint8_t key[MDS_KEY_HOLD_LEN];
    kv_batch *b = kv_batch_new();
    if (!b)
        return -ENOMEM;
    kv_batch_delete(b, key, mds_key_hold(key, ino, client));
    return commit_nosync(ns, b);
}

int mds_ns_hold_put_floor(mds_ns *ns, uint64_t until_s)
{
    uint8_t key[MDS_KEY_MAX], val[sizeof(uint64_t)];
    kv_batch *b = kv_batch_new();
    if (!b)
        return -ENOMEM;
    mds_put_u64le(val, until_s);
    kv_batch_put(b, key, mds_key_counter(key, MDS_COUNTER_HOLDS_OVERFLOW), val, sizeof(val));
    return commit_nosync(ns, b);
}

/* Counter `name`: 0 and *found, or 0 and !*found when absent or
 * unreadable (logged: taken as absent, the safe reading for each caller),
 * -EIO on a store error. */
static int get_u64_record(mds_ns *ns, const char *name, uint64_t *v, bool *found)
{
    *v = 0;
    int rc = ns_load_counter(ns, name, v);
    *found = rc == 0;
    if (rc == -EBADMSG)
        log_warn("the %s record is not a u64: taken as absent", name);
    return rc == 0 || rc == -ENOENT || rc == -EBADMSG ? 0 : rc;
}

int mds_ns_holds_begin(mds_ns *ns, const char *boot_id, mds_holds_prev *prev, char *why)
{
    uint8_t key[MDS_KEY_MAX];
    void *val = NULL;
    size_t vlen = 0;
    bool found;
    memset(prev, 0, sizeof(*prev));
    int rc = get_u64_record(ns, MDS_COUNTER_HOLDS_UNTIL, &prev->until_s, &prev->clean);
    if (rc == 0)
        rc = get_u64_record(ns, MDS_COUNTER_HOLDS_OVERFLOW, &prev->floor_s, &found);
    if (rc < 0)
        return ns_fail(why, EIO, "cannot read the holds records");
    rc = kv_get(ns->kv, key, mds_key_counter(key, MDS_COUNTER_HOLDS_BOOT), &val, &vlen);
    if (rc == -ENOENT)
        return 0;
    if (rc < 0)
        return ns_fail(why, EIO, "cannot read the holds boot record");
    prev->journalled = true;
    size_t blen = strlen(boot_id);
    prev->same_boot = blen > 0 && vlen == blen && memcmp(val, boot_id, blen) == 0;
    free(val);
    return 0;
}

/* Deletes the records in *b (expired holds) without a sync, best effort:
 * a record left is dropped at a later start. A new batch in *b. */
static int flush_drops(mds_ns *ns, kv_batch **b, unsigned *pending)
{
    if (*pending == 0)
        return 0;
    if (commit_nosync(ns, *b) < 0)
        log_warn("cannot delete %u records of expired holds: left for the next start", *pending);
    *pending = 0;
    *b = kv_batch_new();
    return *b ? 0 : -ENOMEM;
}

int mds_ns_holds_load(mds_ns *ns, uint64_t now_s, uint64_t grace_s, mds_ns_hold_fn fn, void *arg,
                      unsigned *loaded, unsigned *dropped, char *why)
{
    uint8_t prefix[MDS_KEY_MAX];
    const void *k, *v;
    size_t kl, vl;
    unsigned pending = 0;
    int rc = 0;
    *loaded = *dropped = 0;
    kv_batch *b = kv_batch_new();
    kv_iter *it = b ? kv_iter_new(ns->kv, prefix, mds_key_hold_prefix(prefix), NULL, 0) : NULL;
    if (!it) {
        kv_batch_free(b);
        return ns_fail(why, ENOMEM, "out of memory");
    }
    while (rc == 0 && kv_iter_next(it, &k, &kl, &v, &vl)) {
        uint64_t ino, client, until_s;
        bool writer;
        if (mds_key_hold_decode(k, kl, &ino, &client) < 0 ||
            mds_hold_val_decode(v, vl, &until_s, &writer) < 0) {
            log_warn("a hold record (%zu-byte key, %zu-byte value) cannot be read: dropped", kl, vl);
        } else if (mds_hold_live(until_s, grace_s, now_s)) {
            fn(arg, ino, client, until_s, writer);
            (*loaded)++;
            continue;
        }
        kv_batch_delete(b, k, kl);
        (*dropped)++;
        if (++pending == HOLDS_LOAD_BATCH)
            rc = flush_drops(ns, &b, &pending);
    }
    kv_iter_free(it);
    if (rc == 0)
        rc = flush_drops(ns, &b, &pending);
    kv_batch_free(b);
    return rc < 0 ? ns_fail(why, -rc, "out of memory") : 0;
}

int mds_ns_holds_commit_start(mds_ns *ns, const char *boot_id, uint64_t floor_s, char *why)
{
    uint8_t key[MDS_KEY_MAX], val[sizeof(uint64_t)];
    size_t blen = strlen(boot_id);
    if (blen > MDS_BOOT_ID_MAX)
        return ns_fail(why, EINVAL, "boot id of %zu bytes (at most %u)", blen, MDS_BOOT_ID_MAX);
    kv_batch *b = kv_batch_new();
    if (!b)
        return ns_fail(why, ENOMEM, "out of memory");
    kv_batch_delete(b, key, mds_key_counter(key, MDS_COUNTER_HOLDS_UNTIL));
    kv_batch_put(b, key, mds_key_counter(key, MDS_COUNTER_HOLDS_BOOT), boot_id, blen);
    mds_put_u64le(val, floor_s);
    kv_batch_put(b, key, mds_key_counter(key, MDS_COUNTER_HOLDS_OVERFLOW), val, sizeof(val));
    return commit_synced(ns, b, why);
}

int mds_ns_put_holds_until(mds_ns *ns, uint64_t until_s, char *why)
{
    uint8_t key[MDS_KEY_MAX], val[sizeof(uint64_t)];
    kv_batch *b = kv_batch_new();
    if (!b)
        return ns_fail(why, ENOMEM, "out of memory");
    mds_put_u64le(val, until_s);
    kv_batch_put(b, key, mds_key_counter(key, MDS_COUNTER_HOLDS_UNTIL), val, sizeof(val));
    return commit_synced(ns, b, why);
}
