/* kvstore.c - the only user of LevelDB's C API (kvstore.h). Maps LevelDB's
 * char **errptr convention onto 0 / -ENOENT / -EIO and logs store errors.
 * Also the group-commit barrier (kv_sync), which fdatasyncs LevelDB's write
 * ahead log files (NNNNNN.log in the store directory) itself.
 *
 * A failed write (a full disk, say) can leave a torn record in LevelDB's
 * log, and LevelDB's log writer then goes on as if the whole record were
 * there: on the next open its reader would drop the rest of that log block,
 * including records written after the failure and acknowledged. So the
 * first write after a failure reopens the store (LevelDB replays the log
 * up to the torn record into a synced table and starts a new log), and
 * writes are serialized here so that none can slip in between a failure
 * and that reopen. What the failed write itself did is unknown: its record
 * may or may not be there after the reopen (kvstore.h). */
#include "fault.h"
#include "kvstore.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <leveldb/c.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

#define KV_LOG_SUFFIX ".log"
#define KV_DIR_MTIME_MARGIN_S 1 /* >> the file system's timestamp tick */
#define KV_REOPEN_RETRY_MS 1000u /* between tries to reopen after a failed write */

struct kvstore {
    leveldb_t *db;
    pthread_rwlock_t db_rw;       /* readers: every use of db; writer: a reopen */
    pthread_mutex_t write_m;      /* one write at a time (see the top) */
    bool write_failed;            /* under write_m: reopen before the next write */
    uint64_t reopen_after_ms;     /* under write_m: no reopen try before this */
    leveldb_options_t *options;
    leveldb_readoptions_t *read_options;
    leveldb_writeoptions_t *write_options;
    leveldb_writeoptions_t *nosync_options;
    char *dir;
    /* group commit (kv_sync) */
    _Atomic uint64_t written_seq; /* nosync writes that have returned */
    pthread_mutex_t sync_m;
    pthread_cond_t sync_cv;
    uint64_t synced_seq;          /* writes known durable */
    bool sync_running;            /* one barrier at a time; the rest wait for it */
    _Atomic bool failed;          /* a barrier failed: refuse writes from now on */
    int log_fd;                   /* the newest log seen by a barrier, or -1 */
    uint64_t log_no;              /* its number; older logs are synced */
    struct timespec scan_mtime;   /* directory mtime the last scan started from */
    bool scan_trusted;            /* ... and it was old enough to rely on */
};

struct kv_batch {
    leveldb_writebatch_t *wb;
};

struct kv_iter {
    kvstore *kv;
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
    if (!kv)
        goto fail;
    kv->log_fd = -1;
    pthread_rwlock_init(&kv->db_rw, NULL);
    pthread_mutex_init(&kv->write_m, NULL);
    pthread_mutex_init(&kv->sync_m, NULL);
    pthread_cond_init(&kv->sync_cv, NULL);
    if (!(kv->dir = strdup(dir)))
        goto fail;
    kv->options = leveldb_options_create();
    kv->read_options = leveldb_readoptions_create();
    kv->write_options = leveldb_writeoptions_create();
    kv->nosync_options = leveldb_writeoptions_create();
    leveldb_options_set_create_if_missing(kv->options, 1);
    leveldb_writeoptions_set_sync(kv->write_options, sync_writes ? 1 : 0);
    leveldb_writeoptions_set_sync(kv->nosync_options, 0);
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
    if (kv->nosync_options)
        leveldb_writeoptions_destroy(kv->nosync_options);
    if (kv->log_fd >= 0)
        close(kv->log_fd);
    pthread_cond_destroy(&kv->sync_cv);
    pthread_mutex_destroy(&kv->sync_m);
    pthread_mutex_destroy(&kv->write_m);
    pthread_rwlock_destroy(&kv->db_rw);
    if (kv->read_options)
        leveldb_readoptions_destroy(kv->read_options);
    if (kv->options)
        leveldb_options_destroy(kv->options);
    free(kv->dir);
    free(kv);
}

/* Caller holds write_m and no read hold on db_rw. After a failed write:
 * closes LevelDB and opens it again (at most once per KV_REOPEN_RETRY_MS;
 * while the disk is still full the open fails and the store has no handle:
 * every call fails -EIO until a later try succeeds). 0 once open and past
 * the failure, or -EIO. */
static int reopen_after_failure(kvstore *kv)
{
    char *lerr = NULL;
    if (!kv->write_failed)
        return 0;
    uint64_t now_ms = clock_now_ms();
    if (now_ms < kv->reopen_after_ms)
        return -EIO;
    kv->reopen_after_ms = now_ms + KV_REOPEN_RETRY_MS;
    if (pthread_rwlock_trywrlock(&kv->db_rw) != 0) {
        log_warn("kvstore %s: cannot reopen after a failed write yet: the store is in use",
                 kv->dir);
        return -EIO;
    }
    if (kv->db)
        leveldb_close(kv->db);
    kv->db = leveldb_open(kv->options, kv->dir, &lerr);
    int rc = 0;
    if (lerr) {
        kv->db = NULL;
        rc = store_error(kv, "reopen after a failed write", lerr);
    } else {
        kv->write_failed = false;
        log_info("kvstore %s: reopened after a failed write", kv->dir);
    }
    pthread_rwlock_unlock(&kv->db_rw);
    return rc;
}

/* Takes a read hold on the handle for a get or an iterator: 0, or -EIO
 * (nothing held) while a reopen after a failed write has not succeeded. */
static int read_begin(kvstore *kv)
{
    pthread_rwlock_rdlock(&kv->db_rw);
    if (kv->db)
        return 0;
    pthread_rwlock_unlock(&kv->db_rw);
    pthread_mutex_lock(&kv->write_m);
    int rc = reopen_after_failure(kv);
    pthread_mutex_unlock(&kv->write_m);
    if (rc < 0)
        return rc;
    pthread_rwlock_rdlock(&kv->db_rw);
    if (kv->db)
        return 0;
    pthread_rwlock_unlock(&kv->db_rw);
    return -EIO;
}

int kv_get(kvstore *kv, const void *key, size_t klen, void **val, size_t *vlen)
{
    char *lerr = NULL;
    size_t len = 0;

    *val = NULL;
    *vlen = 0;
    if (read_begin(kv) < 0)
        return -EIO;
    char *v = leveldb_get(kv->db, kv->read_options, key, klen, &len, &lerr);
    pthread_rwlock_unlock(&kv->db_rw);
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

/* FAULT_KV_SYNC_EIO (test builds): a synced write fails as a failed fsync
 * of the log would, before LevelDB sees it. */
static bool kv_sync_fault(kvstore *kv, const char *what)
{
    if (!FAULT_POINT(FAULT_KV_SYNC_EIO))
        return false;
    log_err("kvstore %s: %s: injected EIO (fault point kv_sync_eio)", kv->dir, what);
    return true;
}

/* Starts a write: takes write_m (and a read hold on the handle), reopening
 * first after a failed write. 0, or -EIO with nothing held. */
static int write_begin(kvstore *kv, const char *what, bool synced)
{
    if (atomic_load(&kv->failed) || (synced && kv_sync_fault(kv, what)))
        return -EIO;
    pthread_mutex_lock(&kv->write_m);
    if (reopen_after_failure(kv) < 0) {
        pthread_mutex_unlock(&kv->write_m);
        return -EIO;
    }
    pthread_rwlock_rdlock(&kv->db_rw);
    return 0;
}

/* Ends a write begun by write_begin: 0, or -EIO (logged) if LevelDB
 * reported an error, which makes the next write reopen the store. */
static int write_end(kvstore *kv, const char *what, char *lerr)
{
    pthread_rwlock_unlock(&kv->db_rw);
    if (lerr)
        kv->write_failed = true;
    pthread_mutex_unlock(&kv->write_m);
    return lerr ? store_error(kv, what, lerr) : 0;
}

int kv_put(kvstore *kv, const void *key, size_t klen, const void *val, size_t vlen)
{
    char *lerr = NULL;
    if (write_begin(kv, "put", true) < 0)
        return -EIO;
    leveldb_put(kv->db, kv->write_options, key, klen, val, vlen, &lerr);
    return write_end(kv, "put", lerr);
}

int kv_delete(kvstore *kv, const void *key, size_t klen)
{
    char *lerr = NULL;
    if (write_begin(kv, "delete", true) < 0)
        return -EIO;
    leveldb_delete(kv->db, kv->write_options, key, klen, &lerr);
    return write_end(kv, "delete", lerr);
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
    if (write_begin(kv, "batch write", true) < 0)
        return -EIO;
    leveldb_write(kv->db, kv->write_options, b->wb, &lerr);
    return write_end(kv, "batch write", lerr);
}

int kv_batch_commit_nosync(kvstore *kv, kv_batch *b)
{
    char *lerr = NULL;
    assert(b);
    if (write_begin(kv, "batch write", false) < 0)
        return -EIO;
    /* LevelDB has appended the record to its log with write(2) when this
     * returns: it sits in the page cache, where kv_sync's fdatasync finds it
     * (or, after a reopen, in the table LevelDB synced from it). */
    leveldb_write(kv->db, kv->nosync_options, b->wb, &lerr);
    if (!lerr)
        atomic_fetch_add(&kv->written_seq, 1);
    return write_end(kv, "batch write", lerr);
}

/* ------------------------------------------------------------ group commit */

/* The number of a LevelDB log file name ("000123.log"), or false. */
static bool log_number(const char *name, uint64_t *no)
{
    size_t len = strlen(name), slen = strlen(KV_LOG_SUFFIX);
    if (len <= slen || strcmp(name + len - slen, KV_LOG_SUFFIX) != 0)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < len - slen; i++) {
        if (name[i] < '0' || name[i] > '9' || v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(name[i] - '0');
    }
    *no = v;
    return true;
}

static int sync_named(const kvstore *kv, DIR *d, const char *name)
{
    int fd = openat(dirfd(d), name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno; /* compacted away: in a synced table */
    int rc = fdatasync(fd) < 0 ? -errno : 0;
    close(fd);
    if (rc < 0)
        log_err("kvstore %s: fdatasync %s: %s", kv->dir, name, strerror(-rc));
    return rc;
}

/* LevelDB rotated its log since the last barrier: sync the logs from the one
 * we held up to (not including) the newest, then hold the newest. */
static int sync_rotated(kvstore *kv, DIR *d, uint64_t newest)
{
    struct dirent *e;
    uint64_t no;
    int rc = 0;

    rewinddir(d);
    while (rc == 0 && (e = readdir(d)) != NULL)
        if (log_number(e->d_name, &no) && no >= kv->log_no && no < newest)
            rc = sync_named(kv, d, e->d_name);
    if (rc < 0)
        return rc;
    if (kv->log_fd >= 0)
        close(kv->log_fd);
    char name[32];
    snprintf(name, sizeof(name), "%06llu%s", (unsigned long long)newest, KV_LOG_SUFFIX);
    kv->log_fd = openat(dirfd(d), name, O_RDONLY | O_CLOEXEC);
    if (kv->log_fd < 0) {
        rc = -errno;
        log_err("kvstore %s: cannot open log %s: %s", kv->dir, name, strerror(-rc));
        return rc;
    }
    kv->log_no = newest;
    return 0;
}

/* True when the directory cannot have changed since the last scan: its
 * mtime is the one seen then, and that mtime was older than the scan by
 * more than the coarse clock tick that stamps it (so any change after the
 * scan carries a later stamp). Saves the directory scan on most barriers. */
static bool dir_unchanged(kvstore *kv, struct timespec *mtime_now)
{
    struct stat st;
    if (stat(kv->dir, &st) < 0) {
        memset(mtime_now, 0, sizeof(*mtime_now));
        return false;
    }
    *mtime_now = st.st_mtim;
    return kv->scan_trusted && st.st_mtim.tv_sec == kv->scan_mtime.tv_sec &&
           st.st_mtim.tv_nsec == kv->scan_mtime.tv_nsec;
}

/* Remembers the mtime a scan started from (see dir_unchanged). */
static void dir_scanned(kvstore *kv, const struct timespec *mtime)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    kv->scan_mtime = *mtime;
    kv->scan_trusted = mtime->tv_sec != 0 && now.tv_sec - mtime->tv_sec > KV_DIR_MTIME_MARGIN_S;
}

/* fdatasync every log that may hold records written since the last barrier.
 * Only the barrier in progress (sync_running) touches log_fd/log_no/scan_*. */
static int sync_logs(kvstore *kv)
{
    struct dirent *e;
    struct timespec mtime;
    uint64_t no, newest = 0;
    bool found = false;
    int rc = 0;
    DIR *d;

    bool unchanged = dir_unchanged(kv, &mtime);
    if (kv->log_fd >= 0 && unchanged)
        goto sync; /* no new log file since the last scan */
    d = opendir(kv->dir);
    if (!d) {
        rc = -errno;
        log_err("kvstore %s: opendir: %s", kv->dir, strerror(-rc));
        return rc;
    }
    while ((e = readdir(d)) != NULL) {
        if (log_number(e->d_name, &no) && (!found || no > newest)) {
            newest = no;
            found = true;
        }
    }
    if (!found) {
        log_err("kvstore %s: no LevelDB log file to sync", kv->dir);
        rc = -EIO;
    } else if (kv->log_fd < 0 || newest != kv->log_no) {
        rc = sync_rotated(kv, d, newest);
    }
    closedir(d);
    if (rc < 0)
        return rc;
    dir_scanned(kv, &mtime);
sync:
    if (fdatasync(kv->log_fd) < 0) {
        rc = -errno;
        log_err("kvstore %s: fdatasync of log %llu: %s", kv->dir,
                (unsigned long long)kv->log_no, strerror(-rc));
    }
    return rc;
}

int kv_sync(kvstore *kv)
{
    pthread_mutex_lock(&kv->sync_m);
    uint64_t want = atomic_load(&kv->written_seq);
    while (!atomic_load(&kv->failed) && kv->synced_seq < want) {
        if (kv->sync_running) { /* a barrier started before us may not cover us: loop */
            pthread_cond_wait(&kv->sync_cv, &kv->sync_m);
            continue;
        }
        kv->sync_running = true;
        uint64_t target = atomic_load(&kv->written_seq);
        pthread_mutex_unlock(&kv->sync_m);
        int rc = sync_logs(kv);
        pthread_mutex_lock(&kv->sync_m);
        kv->sync_running = false;
        if (rc < 0)
            atomic_store(&kv->failed, true);
        else if (target > kv->synced_seq)
            kv->synced_seq = target;
        pthread_cond_broadcast(&kv->sync_cv);
    }
    int rc = atomic_load(&kv->failed) ? -EIO : 0;
    pthread_mutex_unlock(&kv->sync_m);
    return rc;
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
    if (read_begin(kv) < 0) { /* else held until kv_iter_free */
        free(it->prefix);
        free(it);
        return NULL;
    }
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
    pthread_rwlock_unlock(&it->kv->db_rw);
    free(it->prefix);
    free(it);
}
