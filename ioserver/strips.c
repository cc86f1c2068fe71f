/* strips.c - strip files of the ioserver (see strips.h).
 *
 * Every strip file is opened relative to the strips directory's fd with a
 * name built from the file id alone. The descriptor cache is a hash of
 * refcounted entries on an LRU list under one mutex held only for lookups
 * (never across I/O): a thread takes a reference, does pread/pwrite with no
 * lock held, and drops it. Eviction and remove close a descriptor only when
 * no thread holds it. */
#include "fault.h"
#include "strips.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define STRIP_FILE_MODE 0600
#define STRIP_DIR_MODE 0700

typedef struct fd_entry {
    uint64_t file_id;
    int fd;
    unsigned refs;
    bool dead;                     /* removed from the hash; close at refs 0 */
    struct fd_entry *hnext;        /* hash chain */
    struct fd_entry *prev, *next;  /* LRU list, most recent first */
} fd_entry;

struct ios_strips {
    char data_dir[PATH_MAX];
    int dir_fd;
    unsigned max_open;
    unsigned n_open;               /* entries in the hash */
    uint64_t remove_gen;           /* bumped by every remove */
    unsigned n_buckets;
    fd_entry **buckets;
    fd_entry *lru_head, *lru_tail;
    pthread_mutex_t mu;
};

void ios_strip_name(uint64_t file_id, char out[IOS_STRIP_NAME_LEN])
{
    snprintf(out, IOS_STRIP_NAME_LEN, "%016" PRIx64, file_id);
}

static unsigned bucket_of(const ios_strips *s, uint64_t file_id)
{
    uint64_t h = file_id * 0x9e3779b97f4a7c15ull;
    return (unsigned)(h >> 32) % s->n_buckets;
}

/* ------------------------------------------------------- LRU + hash (mu held) */
static void lru_unlink(ios_strips *s, fd_entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        s->lru_head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        s->lru_tail = e->prev;
    e->prev = e->next = NULL;
}

static void lru_push_front(ios_strips *s, fd_entry *e)
{
    e->prev = NULL;
    e->next = s->lru_head;
    if (s->lru_head)
        s->lru_head->prev = e;
    s->lru_head = e;
    if (!s->lru_tail)
        s->lru_tail = e;
}

static fd_entry *hash_find(ios_strips *s, uint64_t file_id)
{
    for (fd_entry *e = s->buckets[bucket_of(s, file_id)]; e; e = e->hnext)
        if (e->file_id == file_id)
            return e;
    return NULL;
}

static void hash_remove(ios_strips *s, fd_entry *e)
{
    fd_entry **pp = &s->buckets[bucket_of(s, e->file_id)];
    while (*pp && *pp != e)
        pp = &(*pp)->hnext;
    assert(*pp == e);
    *pp = e->hnext;
    e->hnext = NULL;
    lru_unlink(s, e);
    e->dead = true;
    assert(s->n_open > 0);
    s->n_open--;
}

static void entry_destroy(fd_entry *e)
{
    assert(e->refs == 0 && e->dead);
    close(e->fd);
    free(e);
}

/* Closes idle descriptors from the LRU tail until at most `keep` remain
 * (busy ones stay; the cache may briefly exceed its bound by the number of
 * threads doing I/O). */
static void evict_idle(ios_strips *s, unsigned keep)
{
    fd_entry *e = s->lru_tail;
    while (e && s->n_open > keep) {
        fd_entry *prev = e->prev;
        if (e->refs == 0) {
            hash_remove(s, e);
            entry_destroy(e);
        }
        e = prev;
    }
}

/* ------------------------------------------------------------ fd references */
/* Takes a reference on file_id's descriptor, opening (and with create,
 * creating) the file. -ENOENT when absent and !create. */
static int fd_get(ios_strips *s, uint64_t file_id, bool create, fd_entry **out)
{
    pthread_mutex_lock(&s->mu);
    fd_entry *e = hash_find(s, file_id);
    if (e) {
        e->refs++;
        lru_unlink(s, e);
        lru_push_front(s, e);
        pthread_mutex_unlock(&s->mu);
        *out = e;
        return 0;
    }
    uint64_t gen = s->remove_gen;
    pthread_mutex_unlock(&s->mu);

    char name[IOS_STRIP_NAME_LEN];
    ios_strip_name(file_id, name);
    int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0);
    int fd = openat(s->dir_fd, name, flags, STRIP_FILE_MODE);
    if (fd < 0)
        return -errno;
    fd_entry *n = calloc(1, sizeof(*n));
    if (!n) {
        close(fd);
        return -ENOMEM;
    }
    n->file_id = file_id;
    n->fd = fd;
    n->refs = 1;

    pthread_mutex_lock(&s->mu);
    e = hash_find(s, file_id);
    if (e) { /* another thread opened it meanwhile: use theirs */
        e->refs++;
        pthread_mutex_unlock(&s->mu);
        close(fd);
        free(n);
        *out = e;
        return 0;
    }
    if (gen != s->remove_gen) {
        /* a remove ran while we opened: this descriptor may name an unlinked
         * file, so use it for this one operation only (it ordered before the
         * remove) and keep it out of the cache */
        n->dead = true;
        pthread_mutex_unlock(&s->mu);
        *out = n;
        return 0;
    }
    evict_idle(s, s->max_open - 1);
    unsigned b = bucket_of(s, file_id);
    n->hnext = s->buckets[b];
    s->buckets[b] = n;
    lru_push_front(s, n);
    s->n_open++;
    pthread_mutex_unlock(&s->mu);
    *out = n;
    return 0;
}

static void fd_put(ios_strips *s, fd_entry *e)
{
    pthread_mutex_lock(&s->mu);
    assert(e->refs > 0);
    e->refs--;
    bool destroy = e->refs == 0 && e->dead;
    if (!destroy && e->refs == 0 && s->n_open > s->max_open)
        evict_idle(s, s->max_open);
    pthread_mutex_unlock(&s->mu);
    if (destroy)
        entry_destroy(e);
}

/* ------------------------------------------------------------------ public */
int ios_strips_open(const char *data_dir, unsigned max_open_files, ios_strips **out)
{
    int rc;
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/%s", data_dir, IOS_STRIPS_SUBDIR) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    if (mkdir(path, STRIP_DIR_MODE) != 0 && errno != EEXIST)
        return -errno;

    ios_strips *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    snprintf(s->data_dir, sizeof(s->data_dir), "%s", data_dir);
    s->max_open = max_open_files ? max_open_files : IOS_STRIPS_DEFAULT_OPEN_FILES;
    s->n_buckets = s->max_open * 2;
    s->buckets = calloc(s->n_buckets, sizeof(*s->buckets));
    if (!s->buckets) {
        rc = -ENOMEM;
        goto fail;
    }
    s->dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->dir_fd < 0) {
        rc = -errno;
        goto fail;
    }
    pthread_mutex_init(&s->mu, NULL);
    *out = s;
    return 0;
fail:
    free(s->buckets);
    free(s);
    return rc;
}

void ios_strips_close(ios_strips *s)
{
    if (!s)
        return;
    fd_entry *e = s->lru_head;
    while (e) {
        fd_entry *next = e->next;
        assert(e->refs == 0);
        close(e->fd);
        free(e);
        e = next;
    }
    close(s->dir_fd);
    pthread_mutex_destroy(&s->mu);
    free(s->buckets);
    free(s);
}

static int pread_full(int fd, uint8_t *buf, uint64_t len, uint64_t off)
{
    if (FAULT_POINT(FAULT_STRIP_PREAD_EIO))
        return -EIO;
    while (len > 0) {
        ssize_t got = pread(fd, buf, len, (off_t)off);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (got == 0) { /* past the end: a hole that reads as zeros */
            memset(buf, 0, len);
            return 0;
        }
        buf += got;
        off += (uint64_t)got;
        len -= (uint64_t)got;
    }
    return 0;
}

static int pwrite_full(int fd, const uint8_t *buf, uint64_t len, uint64_t off)
{
    if (FAULT_POINT(FAULT_STRIP_PWRITE_ENOSPC))
        return -ENOSPC;
    if (FAULT_POINT(FAULT_STRIP_PWRITE_EIO))
        return -EIO;
    while (len > 0) {
        ssize_t put = pwrite(fd, buf, len, (off_t)off);
        if (put < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (put == 0)
            return -EIO;
        buf += put;
        off += (uint64_t)put;
        len -= (uint64_t)put;
    }
    return 0;
}

static uint64_t extents_bytes(const ios_extent *ext, size_t n_ext)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n_ext; i++)
        total += ext[i].length;
    return total;
}

int ios_strips_read(ios_strips *s, uint64_t file_id, const ios_extent *ext, size_t n_ext,
                    uint8_t *buf)
{
    fd_entry *e;
    int rc = fd_get(s, file_id, false, &e);
    if (rc == -ENOENT) {
        memset(buf, 0, extents_bytes(ext, n_ext));
        return 0;
    }
    if (rc)
        return rc;
    for (size_t i = 0; i < n_ext && rc == 0; i++) {
        rc = pread_full(e->fd, buf, ext[i].length, ext[i].offset);
        buf += ext[i].length;
    }
    fd_put(s, e);
    return rc;
}

int ios_strips_write(ios_strips *s, uint64_t file_id, const ios_extent *ext, size_t n_ext,
                     const uint8_t *buf)
{
    fd_entry *e;
    int rc = fd_get(s, file_id, true, &e);
    if (rc)
        return rc;
    for (size_t i = 0; i < n_ext && rc == 0; i++) {
        rc = pwrite_full(e->fd, buf, ext[i].length, ext[i].offset);
        buf += ext[i].length;
    }
    fd_put(s, e);
    return rc;
}

int ios_strips_truncate(ios_strips *s, uint64_t file_id, uint64_t local_size)
{
    if (local_size > (uint64_t)INT64_MAX)
        return -EFBIG;
    fd_entry *e;
    int rc = fd_get(s, file_id, false, &e);
    if (rc == -ENOENT)
        return 0;
    if (rc)
        return rc;
    if (ftruncate(e->fd, (off_t)local_size) != 0)
        rc = -errno;
    fd_put(s, e);
    return rc;
}

int ios_strips_remove(ios_strips *s, uint64_t file_id)
{
    char name[IOS_STRIP_NAME_LEN];
    ios_strip_name(file_id, name);
    fd_entry *doomed = NULL;

    pthread_mutex_lock(&s->mu);
    s->remove_gen++;
    fd_entry *e = hash_find(s, file_id);
    if (e) {
        hash_remove(s, e);
        if (e->refs == 0)
            doomed = e;
    }
    int rc = unlinkat(s->dir_fd, name, 0) == 0 || errno == ENOENT ? 0 : -errno;
    pthread_mutex_unlock(&s->mu);
    if (doomed)
        entry_destroy(doomed);
    return rc;
}

int ios_strips_fsync(ios_strips *s, uint64_t file_id)
{
    fd_entry *e;
    int rc = fd_get(s, file_id, false, &e);
    if (rc == -ENOENT)
        return 0;
    if (rc)
        return rc;
    if (fdatasync(e->fd) != 0)
        rc = -errno;
    fd_put(s, e);
    return rc;
}

int ios_strips_size(ios_strips *s, uint64_t file_id, uint64_t *size)
{
    char name[IOS_STRIP_NAME_LEN];
    struct stat st;
    ios_strip_name(file_id, name);
    *size = 0;
    if (fstatat(s->dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : -errno;
    *size = (uint64_t)st.st_size;
    return 0;
}

int ios_strips_usage(ios_strips *s, uint64_t *used, uint64_t *avail)
{
    struct statvfs vfs;
    if (fstatvfs(s->dir_fd, &vfs) != 0)
        return -errno;
    *used = (uint64_t)(vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize;
    *avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    return 0;
}

unsigned ios_strips_cached(ios_strips *s)
{
    pthread_mutex_lock(&s->mu);
    unsigned n = s->n_open;
    pthread_mutex_unlock(&s->mu);
    return n;
}
