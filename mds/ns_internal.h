/* ns_internal.h - internals shared by namespace.c, ns_xattr.c, ns_purge.c
 * and ns_holds.c: the namespace struct, transactions (one kv_batch + pending counters) and the
 * inode/dirent helpers. Not used outside the namespace files. */
#ifndef DEPFS_MDS_NS_INTERNAL_H
#define DEPFS_MDS_NS_INTERNAL_H
#include <pthread.h>
#include <stdatomic.h>
#include "holds.h"
#include "namespace.h"

struct mds_ns {
    kvstore *kv;
    pthread_rwlock_t lock; /* writers: every mutation; readers: lookups */
    mds_ns_params p;
    uint64_t next_ino, next_client, inodes, logical_bytes; /* persisted counters */
    uint64_t purge_files, purge_bytes; /* persisted: the purge queue (ns_purge.c) */
    mds_holds *holds;  /* mds_ns_set_holds: what an unlinked file's holds add up to */
    bool defer_sync; /* mds_ns_defer_sync: the caller runs the barrier */
    uint64_t id;     /* persisted: MDS_COUNTER_NAMESPACE_ID */
    _Atomic uint64_t names_epoch; /* mds_ns_names_epoch */
};

/* One mutation: a batch plus the counters it will set. Counters are applied
 * to the namespace only when the batch committed. */
typedef struct ns_txn {
    mds_ns *ns;
    kv_batch *b;
    uint64_t next_ino, next_client, inodes, logical_bytes;
    uint64_t purge_files, purge_bytes;
} ns_txn;

int ns_txn_begin(mds_ns *ns, ns_txn *t);
/* Writes the batch without sync (visible at once, durable at the next
 * kv_sync); frees the batch either way. */
int ns_txn_commit(ns_txn *t);
void ns_txn_abort(ns_txn *t);
/* End of every mutation, after the namespace lock is released: unless the
 * sync is deferred to the caller, a successful mutation (rc 0) is made
 * durable here (-EIO with why set when that fails). Returns rc otherwise. */
int ns_settle(mds_ns *ns, int rc, char *why);

/* Sets why (may be NULL) and returns -err. */
int ns_fail(char *why, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Counter `name` (store_keys.h 'C'): 0, -ENOENT (absent), -EBADMSG (not
 * a u64), -EIO (store error). */
int ns_load_counter(mds_ns *ns, const char *name, uint64_t *v);
int ns_load_inode(mds_ns *ns, uint64_t ino, mds_inode *out, char *why);
void ns_put_inode(ns_txn *t, const mds_inode *in);
/* 0 for a usable entry name, else -EINVAL/-ENAMETOOLONG with why. */
int ns_check_name(const char *name, char *why);
/* A directory's inode (-ENOTDIR for another type). */
int ns_load_dir(mds_ns *ns, uint64_t ino, mds_inode *out, char *why);
/* The entry `name` of parent: its inode, readdir seq and type bits. */
int ns_find_dirent(mds_ns *ns, uint64_t parent, const char *name, uint64_t *ino,
                   uint64_t *seq, uint32_t *mode, char *why);
/* Writes entry `name` of parent (both its keys: by name and by seq). */
void ns_put_dirent(ns_txn *t, uint64_t parent, const char *name, uint64_t ino, uint64_t seq,
                   uint32_t mode);
/* Drops one link of a non-directory; at zero a regular file is queued for
 * the purge (nlink 0) and anything else goes, and rm (may be NULL) says so. */
int ns_drop_link(ns_txn *t, mds_inode *in, int64_t now, mds_removed *rm);
/* Deletes every key that starts with prefix (-EIO: store error). */
int ns_delete_prefix(ns_txn *t, const uint8_t *prefix, size_t plen);
/* Under the lock: whether ino has a stored xattr (not the layout one, which
 * is the inode's own); true when the store cannot say. */
bool ns_has_xattrs(mds_ns *ns, uint64_t ino);
/* Deletes the inode with its xattrs and symlink target, fixing counters. */
int ns_destroy_inode(ns_txn *t, const mds_inode *in);
/* The running totals (statfs, the purge queue's bytes) move by a file's
 * old and new size; saturating, clamped at 0 (statistics). */
uint64_t ns_account(uint64_t total, uint64_t old_size, uint64_t new_size);

/* n, k, su -> a full layout on servers chosen with seed = ino. */
int ns_build_layout(mds_ns *ns, unsigned n, unsigned k, uint32_t su, uint64_t ino,
                    uint32_t version, layout *out, char *why);

#endif
