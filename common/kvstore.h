/* kvstore.h - the one wrapper around LevelDB's C API (no other file includes
 * leveldb/c.h). Keys and values are byte strings. With sync_writes every
 * put/delete/batch is durable (fsync'd WAL) before it returns.
 * Return convention: 0, -ENOENT (get: no such key), -EIO (store error, logged).
 * A write that failed may or may not have taken effect (it may show after
 * the reopen the next write does, or after a restart); every write that
 * succeeded, before or after it, stays. Writes are serialized; an open
 * iterator holds off that reopen (the write fails -EIO and a later one
 * retries). */
#ifndef DEPFS_KVSTORE_H
#define DEPFS_KVSTORE_H
#include <stdbool.h>
#include <stddef.h>

typedef struct kvstore kvstore;
typedef struct kv_batch kv_batch;
typedef struct kv_iter kv_iter;

int kv_open(const char *dir, bool sync_writes, kvstore **out, char *err, size_t err_len);
void kv_close(kvstore *kv);

/* *val is malloc'd; the caller frees it. */
int kv_get(kvstore *kv, const void *key, size_t klen, void **val, size_t *vlen);
int kv_put(kvstore *kv, const void *key, size_t klen, const void *val, size_t vlen);
int kv_delete(kvstore *kv, const void *key, size_t klen);

/* Atomic multi-key update. */
kv_batch *kv_batch_new(void);
void kv_batch_put(kv_batch *b, const void *key, size_t klen, const void *val, size_t vlen);
void kv_batch_delete(kv_batch *b, const void *key, size_t klen);
int kv_batch_commit(kvstore *kv, kv_batch *b);
void kv_batch_free(kv_batch *b);

/* Group commit: kv_batch_commit_nosync applies the batch (atomic, visible to
 * every later read) without waiting for the disk; kv_sync is the barrier that
 * makes every write that returned before it was called durable (0), or -EIO.
 * Concurrent kv_sync callers share one fsync. kv_sync fsyncs LevelDB's write
 * ahead log files itself (never blocking LevelDB's writers), including a
 * log LevelDB rotated away from since the last barrier. After a failed
 * barrier the store refuses every later write and barrier (-EIO): what a
 * failed fsync lost cannot be known. */
int kv_batch_commit_nosync(kvstore *kv, kv_batch *b);
int kv_sync(kvstore *kv);

/* Iterate keys that start with prefix, beginning at the first key >= start
 * (start NULL: at the prefix). Pointers returned by next stay valid until the
 * following next/free. */
kv_iter *kv_iter_new(kvstore *kv, const void *prefix, size_t plen, const void *start, size_t slen);
bool kv_iter_next(kv_iter *it, const void **key, size_t *klen, const void **val, size_t *vlen);
void kv_iter_free(kv_iter *it);

#endif
