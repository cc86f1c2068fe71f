/* kvstore.c - the only user of LevelDB's C API (kvstore.h). Maps LevelDB's
 * char **errptr convention onto 0 / -ENOENT / -EIO and logs store errors. */
#include "kvstore.h"

#include <assert.h>
#include <errno.h>
#include <leveldb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

struct kvstore {
    leveldb_t *db;
    leveldb_options_t *options;
    leveldb_readoptions_t *read_options;
    leveldb_writeoptions_t *write_options;
    char *dir;
};

struct kv_batch {
    leveldb_writebatch_t *wb;
};

struct kv_iter {
    const kvstore *kv;
    leveldb_iterator_t *it;
    char *prefix;
    size_t plen;
    bool positioned; /* next() has returned at least one entry */
};

/* Logs and frees a LevelDB error; returns -EIO. */
static int store_error(const kvstore *kv, const char *op, char *lerr)
{
    log_err("kvstore %s: %s failed: %s", kv ? kv->dir : "?", op, lerr ? lerr : "unknown error");
    leveldb_free(lerr);
    return -EIO;
}

int kv_open(const char *dir, bool sync_writes, kvstore **out, char *err, size_t err_len)
{
    char *lerr = NULL;
    int rc = -ENOMEM;

    *out = NULL;
    kvstore *kv = calloc(1, sizeof(*kv));
    if (!kv || !(kv->dir = strdup(dir)))
        goto fail;
    kv->options = leveldb_options_create();
    kv->read_options = leveldb_readoptions_create();
    kv->write_options = leveldb_writeoptions_create();
    leveldb_options_set_create_if_missing(kv->options, 1);
    leveldb_writeoptions_set_sync(kv->write_options, sync_writes ? 1 : 0);
    kv->db = leveldb_open(kv->options, dir, &lerr);
    if (lerr) {
        if (err && err_len)
            snprintf(err, err_len, "cannot open LevelDB at %s: %s", dir, lerr);
        leveldb_free(lerr);
        rc = -EIO;
        goto fail;
    }
    *out = kv;
    return 0;
fail:
    if (rc == -ENOMEM && err && err_len)
        snprintf(err, err_len, "cannot open LevelDB at %s: out of memory", dir);
    kv_close(kv);
    return rc;
}

void kv_close(kvstore *kv)
{
    if (!kv)
        return;
    if (kv->db)
        leveldb_close(kv->db);
    if (kv->write_options)
        leveldb_writeoptions_destroy(kv->write_options);
    if (kv->read_options)
        leveldb_readoptions_destroy(kv->read_options);
    if (kv->options)
        leveldb_options_destroy(kv->options);
    free(kv->dir);
    free(kv);
}

int kv_get(kvstore *kv, const void *key, size_t klen, void **val, size_t *vlen)
{
    char *lerr = NULL;
    size_t len = 0;

    *val = NULL;
    *vlen = 0;
    char *v = leveldb_get(kv->db, kv->read_options, key, klen, &len, &lerr);
    if (lerr)
        return store_error(kv, "get", lerr);
    if (!v)
        return -ENOENT;
    /* copy into malloc'd memory: the caller frees with free(), not leveldb_free */
    void *copy = malloc(len ? len : 1);
    if (!copy) {
        leveldb_free(v);
        return -ENOMEM;
    }
    memcpy(copy, v, len);
    leveldb_free(v);
    *val = copy;
    *vlen = len;
    return 0;
}

int kv_put(kvstore *kv, const void *key, size_t klen, const void *val, size_t vlen)
{
    char *lerr = NULL;
    leveldb_put(kv->db, kv->write_options, key, klen, val, vlen, &lerr);
    return lerr ? store_error(kv, "put", lerr) : 0;
}

int kv_delete(kvstore *kv, const void *key, size_t klen)
{
    char *lerr = NULL;
    leveldb_delete(kv->db, kv->write_options, key, klen, &lerr);
    return lerr ? store_error(kv, "delete", lerr) : 0;
}

kv_batch *kv_batch_new(void)
{
    kv_batch *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    b->wb = leveldb_writebatch_create();
    return b;
}

void kv_batch_put(kv_batch *b, const void *key, size_t klen, const void *val, size_t vlen)
{
    assert(b);
    leveldb_writebatch_put(b->wb, key, klen, val, vlen);
}

void kv_batch_delete(kv_batch *b, const void *key, size_t klen)
{
    assert(b);
    leveldb_writebatch_delete(b->wb, key, klen);
}

int kv_batch_commit(kvstore *kv, kv_batch *b)
{
    char *lerr = NULL;
    assert(b);
    leveldb_write(kv->db, kv->write_options, b->wb, &lerr);
    return lerr ? store_error(kv, "batch write", lerr) : 0;
}

void kv_batch_free(kv_batch *b)
{
    if (!b)
        return;
    leveldb_writebatch_destroy(b->wb);
    free(b);
}

static int key_compare(const void *a, size_t alen, const void *b, size_t blen)
{
    size_t min = alen < blen ? alen : blen;
    int c = min ? memcmp(a, b, min) : 0;
    if (c)
        return c;
    return alen < blen ? -1 : alen > blen;
}

kv_iter *kv_iter_new(kvstore *kv, const void *prefix, size_t plen, const void *start, size_t slen)
{
    kv_iter *it = calloc(1, sizeof(*it));
    if (!it)
        return NULL;
    it->prefix = malloc(plen ? plen : 1);
    if (!it->prefix) {
        free(it);
        return NULL;
    }
    if (plen)
        memcpy(it->prefix, prefix, plen);
    it->plen = plen;
    it->kv = kv;
    it->it = leveldb_create_iterator(kv->db, kv->read_options);
    /* begin at max(prefix, start): keys before the prefix cannot match */
    if (start && key_compare(start, slen, prefix, plen) > 0)
        leveldb_iter_seek(it->it, start, slen);
    else
        leveldb_iter_seek(it->it, plen ? prefix : "", plen);
    return it;
}

bool kv_iter_next(kv_iter *it, const void **key, size_t *klen, const void **val, size_t *vlen)
{
    if (it->positioned && leveldb_iter_valid(it->it))
        leveldb_iter_next(it->it);
    it->positioned = true;
    if (!leveldb_iter_valid(it->it)) {
        char *lerr = NULL;
        leveldb_iter_get_error(it->it, &lerr);
        if (lerr)
            store_error(it->kv, "iterate", lerr);
        return false;
    }
    size_t kl = 0, vl = 0;
    const char *k = leveldb_iter_key(it->it, &kl);
    if (kl < it->plen || (it->plen && memcmp(k, it->prefix, it->plen) != 0))
        return false; /* past the prefix range */
    const char *v = leveldb_iter_value(it->it, &vl);
    *key = k;
    *klen = kl;
    *val = v;
    *vlen = vl;
    return true;
}

void kv_iter_free(kv_iter *it)
{
    if (!it)
        return;
    leveldb_iter_destroy(it->it);
    free(it->prefix);
    free(it);
}
