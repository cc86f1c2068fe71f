/* strips.c - strip files of the ioserver and their checksums (see strips.h
 * and strip_csum.h).
 *
 * Every strip file is opened relative to the strips directory's fd with a
 * name built from the file id alone. The descriptor cache is a hash of
 * refcounted entries on an LRU list under one mutex held only for lookups
 * (never across I/O): a thread takes a reference, does pread/pwrite with no
 * lock held, and drops it. Eviction and remove close a descriptor only when
 * no thread holds it. */
#include "crc32c.h"
#include "layout.h"
#include "fault.h"
#include "log.h"
#include "strip_csum.h"
#include "strips.h"
#include "strip_extents.h"
#include "strip_readahead.h"

#include <assert.h>
#include <dirent.h>
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

/* Region locks: a writer holds the locks of the regions (CSUM_REGION_BYTES
 * of local offsets, hashed into CSUM_REGION_LOCKS mutexes) its range
 * touches while it writes data and checksums. */
#define CSUM_REGION_BYTES (1u << 20)
#define CSUM_REGION_LOCKS 256u
/* Blocks checked or written per step (bounds the buffers of one step). */
#define CSUM_STEP_BLOCKS 256u
/* An extent of a write this long streams (a client writing whole stripes
 * out of its write-behind, a rebuild): its bytes start for the disk at
 * once (start_writeback). A set of random 4 KiB writes sent together is
 * many extents far below it, however many bytes they add up to. */
#define IOS_WRITEBACK_MIN_BYTES (256u << 10)

typedef struct fd_entry {
    uint64_t file_id;
    int fd;
    int cfd;                       /* checksum sidecar, -1: none (predates checksums) */
    ios_csum_hdr csum;             /* its header, with cfd >= 0 */
    unsigned refs;
    bool dead;                     /* removed from the hash; close at refs 0 */
    ios_ra_file ra;                /* its readers' streams, under ios_strips.mu */
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
    pthread_mutex_t create_mu;     /* a strip file and its sidecar made or removed */
    pthread_mutex_t region_mu[CSUM_REGION_LOCKS];
    uint64_t csum_errors;          /* blocks found damaged (atomic) */
    bool no_checksums;             /* TEST ONLY (FAULT_STRIP_NO_CHECKSUMS): new strips get none */
    uint64_t max_local_bytes;      /* what a strip file here may hold (probe_max_bytes) */
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
    if (e->cfd >= 0)
        close(e->cfd);
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

/* ------------------------------------------------------- opening a strip */
static void sidecar_name(uint64_t file_id, char out[IOS_STRIP_NAME_LEN + sizeof(IOS_CSUM_SUFFIX)])
{
    ios_strip_name(file_id, out);
    strcat(out, IOS_CSUM_SUFFIX);
}

/* Creates the sidecar of a strip file (complete: the strip file is new). */
static int sidecar_create(ios_strips *s, uint64_t file_id, uint32_t su, bool complete,
                          int *cfd, ios_csum_hdr *h)
{
    char name[IOS_STRIP_NAME_LEN + sizeof(IOS_CSUM_SUFFIX)];
    sidecar_name(file_id, name);
    int fd = openat(s->dir_fd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, STRIP_FILE_MODE);
    if (fd < 0)
        return -errno;
    int rc = ios_csum_header_read(fd, h);
    if (rc == -EBADMSG) { /* empty (new) or torn by a crash: start it over */
        *h = (ios_csum_hdr){.version = IOS_CSUM_VERSION, .block = block_crc_size_for(su),
                            .flags = complete ? IOS_CSUM_COMPLETE : 0};
        rc = ftruncate(fd, 0) == 0 ? ios_csum_header_write(fd, h) : -errno;
    }
    if (rc) {
        close(fd);
        return rc;
    }
    *cfd = fd;
    return 0;
}

/* Opens the sidecar of an existing strip file; *cfd = -1 when it has none. */
static int sidecar_open(ios_strips *s, uint64_t file_id, int *cfd, ios_csum_hdr *h)
{
    char name[IOS_STRIP_NAME_LEN + sizeof(IOS_CSUM_SUFFIX)];
    sidecar_name(file_id, name);
    *cfd = openat(s->dir_fd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (*cfd < 0)
        return errno == ENOENT ? 0 : -errno;
    int rc = ios_csum_header_read(*cfd, h);
    if (rc) {
        log_err("strip %016" PRIx64 ": checksum sidecar unusable: %s", file_id, strerror(-rc));
        close(*cfd);
        *cfd = -1;
    }
    return rc;
}

static bool sidecar_exists(ios_strips *s, uint64_t file_id)
{
    char name[IOS_STRIP_NAME_LEN + sizeof(IOS_CSUM_SUFFIX)];
    struct stat st;
    sidecar_name(file_id, name);
    return fstatat(s->dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Under create_mu, file_id's strip file absent: -ENOENT (never written),
 * -ENODATA (lost: its sidecar is there), or with create both made, the
 * sidecar first. */
static int strip_create(ios_strips *s, uint64_t file_id, bool create, uint32_t su, int *fd,
                        int *cfd, ios_csum_hdr *h)
{
    bool lost = sidecar_exists(s, file_id);
    if (!create) {
        if (!lost)
            return -ENOENT;
        log_warn("strip %016" PRIx64 ": the strip file is missing beside its checksums", file_id);
        return -ENODATA;
    }
    int rc = lost || !s->no_checksums ? sidecar_create(s, file_id, su, !lost, cfd, h)
                                      : 0; /* TEST ONLY: as before checksums (*cfd stays -1) */
    if (rc)
        return rc;
    char name[IOS_STRIP_NAME_LEN];
    ios_strip_name(file_id, name);
    *fd = openat(s->dir_fd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_CREAT, STRIP_FILE_MODE);
    if (*fd < 0) {
        rc = -errno;
        if (*cfd >= 0)
            close(*cfd);
        *cfd = -1;
        return rc;
    }
    if (lost && (h->flags & IOS_CSUM_COMPLETE)) /* its old blocks are gone, not holes */
        log_warn("strip %016" PRIx64 ": recreating a lost strip file", file_id);
    return 0;
}

/* Opens file_id's strip file and sidecar. A new strip file gets its sidecar
 * first, so a strip file missing beside its sidecar was lost (-ENODATA),
 * not never written (-ENOENT). Writing to a strip file that predates
 * checksums adds a sidecar whose blocks are unverified until rewritten. */
static int strip_open(ios_strips *s, uint64_t file_id, bool create, uint32_t su, int *fd,
                      int *cfd, ios_csum_hdr *h)
{
    char name[IOS_STRIP_NAME_LEN];
    ios_strip_name(file_id, name);
    const int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW;
    *cfd = -1;
    *fd = openat(s->dir_fd, name, flags);
    if (*fd < 0 && errno != ENOENT)
        return -errno;
    int rc;
    if (*fd < 0) {
        /* creations and removals make the pair under create_mu: a sidecar
         * alone seen under it is a loss, not a creation half done */
        pthread_mutex_lock(&s->create_mu);
        *fd = openat(s->dir_fd, name, flags);
        rc = *fd >= 0 ? 0 : errno == ENOENT ? strip_create(s, file_id, create, su, fd, cfd, h)
                                            : -errno;
        pthread_mutex_unlock(&s->create_mu);
        if (rc || *cfd >= 0)
            return rc;
    }
    rc = sidecar_open(s, file_id, cfd, h);
    if (rc == 0 && *cfd < 0 && create && !s->no_checksums)
        rc = sidecar_create(s, file_id, su, false, cfd, h);
    if (rc) {
        close(*fd);
        return rc;
    }
    return 0;
}

/* ------------------------------------------------------------ fd references */
/* Takes a reference on file_id's descriptor, opening (and with create,
 * creating) the file. -ENOENT when absent and !create, -ENODATA when lost. */
static int fd_get(ios_strips *s, uint64_t file_id, bool create, uint32_t su, fd_entry **out)
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

    fd_entry *n = calloc(1, sizeof(*n));
    if (!n)
        return -ENOMEM;
    int rc = strip_open(s, file_id, create, su, &n->fd, &n->cfd, &n->csum);
    if (rc) {
        free(n);
        return rc;
    }
    /* the kernel's read-ahead would read the parity units between the data
     * units a fault-free reader wants: ours reads those only (read_ahead) */
    (void)posix_fadvise(n->fd, 0, 0, POSIX_FADV_RANDOM);
    n->file_id = file_id;
    n->refs = 1;

    pthread_mutex_lock(&s->mu);
    e = hash_find(s, file_id);
    if (e) { /* another thread opened it meanwhile: use theirs */
        e->refs++;
        pthread_mutex_unlock(&s->mu);
        n->dead = true;
        n->refs = 0;
        entry_destroy(n);
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

/* A write to a strip file opened without a sidecar (one from before
 * checksums) adds one; the first thread to get there publishes it. */
static int entry_add_sidecar(ios_strips *s, fd_entry *e, uint32_t su)
{
    if (__atomic_load_n(&e->cfd, __ATOMIC_ACQUIRE) >= 0 || s->no_checksums)
        return 0;
    int cfd;
    ios_csum_hdr h;
    int rc = sidecar_create(s, e->file_id, su, false, &cfd, &h);
    if (rc)
        return rc;
    pthread_mutex_lock(&s->mu);
    if (e->cfd < 0) {
        e->csum = h;
        __atomic_store_n(&e->cfd, cfd, __ATOMIC_RELEASE);
        cfd = -1;
    }
    pthread_mutex_unlock(&s->mu);
    if (cfd >= 0)
        close(cfd);
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
/* Whether a file of `bytes` can exist on the probe's file system. */
static bool size_fits(int fd, uint64_t bytes)
{
    return ftruncate(fd, (off_t)bytes) == 0;
}

/* The largest multiple of LAYOUT_MAX_SU up to IOS_STRIP_BYTES_CAP that a
 * file in the strips directory can reach: ext4 stops at 16 TiB, XFS and
 * tmpfs go further. Found by growing an unnamed (O_TMPFILE) sparse file,
 * nothing is written; without O_TMPFILE, the cap. */
static uint64_t probe_max_bytes(int dir_fd)
{
    int fd = openat(dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, STRIP_FILE_MODE);
    if (fd < 0) {
        log_warn("strips: cannot probe the largest file (%s); assuming %llu bytes",
                 strerror(errno), (unsigned long long)IOS_STRIP_BYTES_CAP);
        return IOS_STRIP_BYTES_CAP;
    }
    uint64_t lo = 0, hi = IOS_STRIP_BYTES_CAP / LAYOUT_MAX_SU; /* in units of LAYOUT_MAX_SU */
    if (!size_fits(fd, hi * LAYOUT_MAX_SU)) {
        while (hi - lo > 1) { /* lo fits, hi does not: at most log2(2^50 / 2^24) steps */
            uint64_t mid = lo + (hi - lo) / 2;
            if (size_fits(fd, mid * LAYOUT_MAX_SU))
                lo = mid;
            else
                hi = mid;
        }
        hi = lo;
    }
    close(fd);
    return hi * LAYOUT_MAX_SU;
}

uint64_t ios_strips_max_local_bytes(const ios_strips *s)
{
    return s->max_local_bytes;
}

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
    s->dir_fd = -1;
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
    s->no_checksums = FAULT_POINT(FAULT_STRIP_NO_CHECKSUMS);
    s->max_local_bytes = probe_max_bytes(s->dir_fd);
    if (s->max_local_bytes == 0) {
        log_err("strips: %s cannot hold a file of %u bytes", path, LAYOUT_MAX_SU);
        rc = -EFBIG;
        goto fail;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->create_mu, NULL);
    for (unsigned i = 0; i < CSUM_REGION_LOCKS; i++)
        pthread_mutex_init(&s->region_mu[i], NULL);
    *out = s;
    return 0;
fail:
    if (s->dir_fd >= 0)
        close(s->dir_fd);
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
        if (e->cfd >= 0)
            close(e->cfd);
        free(e);
        e = next;
    }
    close(s->dir_fd);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->create_mu);
    for (unsigned i = 0; i < CSUM_REGION_LOCKS; i++)
        pthread_mutex_destroy(&s->region_mu[i]);
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

/* ------------------------------------------------------- region locks */
typedef struct region_set {
    unsigned n;
    unsigned idx[CSUM_REGION_LOCKS];
} region_set;

/* The region mutexes of [off, end) of file_id, ascending and distinct (the
 * order every thread takes them in); all of them for a range of
 * CSUM_REGION_LOCKS regions or more (a truncation's). */
static void regions_of(uint64_t file_id, uint64_t off, uint64_t end, region_set *rs)
{
    bool want[CSUM_REGION_LOCKS] = {false};
    uint64_t r0 = off / CSUM_REGION_BYTES, r1 = (end - 1) / CSUM_REGION_BYTES;
    bool every = r1 - r0 + 1 >= CSUM_REGION_LOCKS;
    for (uint64_t r = r0; r <= r1 && !every; r++)
        want[((file_id * 0x9e3779b97f4a7c15ull) ^ (r * 0xc2b2ae3d27d4eb4full)) >> 56] = true;
    _Static_assert(CSUM_REGION_LOCKS == 256u, "the hash keeps 8 bits");
    rs->n = 0;
    for (unsigned i = 0; i < CSUM_REGION_LOCKS; i++)
        if (every || want[i])
            rs->idx[rs->n++] = i;
}

static void regions_lock(ios_strips *s, const region_set *rs)
{
    for (unsigned i = 0; i < rs->n; i++)
        pthread_mutex_lock(&s->region_mu[rs->idx[i]]);
}

static void regions_unlock(ios_strips *s, const region_set *rs)
{
    for (unsigned i = rs->n; i-- > 0;)
        pthread_mutex_unlock(&s->region_mu[rs->idx[i]]);
}

/* ------------------------------------------------------- checked reads */
/* One step of a checked read: whole blocks [a, a + nb*B) into blocks[]
 * (and their entries), 0 when every block matches, else the offset of the
 * first damaged block + 1. */
static int step_load(const fd_entry *e, uint64_t a, uint64_t nb, uint8_t *blocks,
                     ios_csum_entry *ent, uint64_t *bad)
{
    uint32_t B = e->csum.block;
    int rc = pread_full(e->fd, blocks, nb * B, a);
    if (rc == 0)
        rc = ios_csum_entries_read(e->cfd, a / B, nb, ent);
    if (rc)
        return rc;
    *bad = 0;
    for (uint64_t i = 0; i < nb && *bad == 0; i++)
        if (!ios_csum_matches(&e->csum, &ent[i], blocks + i * B, B))
            *bad = a + i * B + 1;
    return 0;
}

/* Adds the bytes [from, to) of the verified blocks at a (bytes in blocks[],
 * entries in ent[]) to *crc: a whole block with a checksum by combining
 * its entry, anything else from its bytes. */
static uint32_t step_crc(const fd_entry *e, uint64_t a, const uint8_t *blocks,
                         const ios_csum_entry *ent, uint64_t from, uint64_t to, uint32_t crc)
{
    uint32_t B = e->csum.block;
    const crc32c_shift_op *op = block_crc_shift(B); /* ios_csum_header_read checked B */
    for (uint64_t b = from / B * B; b < to; b += B) {
        uint64_t lo = from > b ? from : b, hi = to < b + B ? to : b + B;
        const ios_csum_entry *x = &ent[(b - a) / B];
        if (lo == b && hi == b + B && x->tag == IOS_CSUM_TAG_OK)
            crc = crc32c_shift(op, crc) ^ x->crc;
        else
            crc = crc32c(crc, blocks + (lo - a), hi - lo);
    }
    return crc;
}

/* Reads [off, off+len) of a strip file that has checksums into buf,
 * checking every block it touches, and chains the CRC32C of the bytes
 * returned onto *crc (from the entries they were checked against: what was
 * stored is what the client checks). Whole blocks are read in place, the
 * edges through bounce[]. -EBADMSG for a damaged block. */
static int read_checked(ios_strips *s, const fd_entry *e, uint64_t off, uint64_t len, uint8_t *buf,
                        uint8_t *bounce, ios_csum_entry *ent, uint32_t *crc)
{
    uint32_t B = e->csum.block;
    uint64_t end = off + len;
    for (uint64_t a = off / B * B; a < end;) {
        uint64_t stop = a + (uint64_t)CSUM_STEP_BLOCKS * B;
        if (stop > (end + B - 1) / B * B)
            stop = (end + B - 1) / B * B;
        uint64_t nb = (stop - a) / B, bad = 0;
        uint8_t *blocks = a >= off && stop <= end ? buf + (a - off) : bounce;
        int rc = step_load(e, a, nb, blocks, ent, &bad);
        if (rc == 0 && bad != 0) {
            /* maybe a write between its data and its checksums: look again
             * while no writer of this range is in the middle of one */
            region_set rs;
            regions_of(e->file_id, a, stop, &rs);
            regions_lock(s, &rs);
            rc = step_load(e, a, nb, blocks, ent, &bad);
            regions_unlock(s, &rs);
        }
        if (rc)
            return rc;
        if (bad != 0) {
            __atomic_add_fetch(&s->csum_errors, 1, __ATOMIC_RELAXED);
            log_warn("strip %016" PRIx64 ": checksum mismatch in the block at local offset %" PRIu64
                     " (%u bytes)", e->file_id, bad - 1, B);
            return -EBADMSG;
        }
        uint64_t from = off > a ? off : a, to = end < stop ? end : stop;
        if (crc != NULL)
            *crc = step_crc(e, a, blocks, ent, from, to, *crc);
        if (blocks == bounce)
            memcpy(buf + (from - off), bounce + (from - a), to - from);
        a = stop;
    }
    return 0;
}

/* Starts the disk reads of a request's extents together (one at a time
 * they would wait for each other), and of what its stream reads next
 * (strip_readahead.h). Advisory: a failed hint only leaves the reads to
 * wait. */
static void read_ahead(ios_strips *s, fd_entry *e, const ios_extent *ext, size_t n_ext,
                       const ios_data_units *want)
{
    uint64_t first = UINT64_MAX, end = 0;
    for (size_t i = 0; i < n_ext; i++) {
        if (ext[i].length == 0)
            continue;
        if (n_ext > 1)
            (void)posix_fadvise(e->fd, (off_t)ext[i].offset, (off_t)ext[i].length,
                                POSIX_FADV_WILLNEED);
        if (ext[i].offset < first)
            first = ext[i].offset;
        if (ext[i].offset + ext[i].length > end)
            end = ext[i].offset + ext[i].length;
    }
    if (first >= end)
        return;
    ios_extent next[IOS_RA_MAX_RANGES];
    pthread_mutex_lock(&s->mu);
    size_t n = ios_ra_plan(&e->ra, want, first, end, next);
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; i < n; i++)
        (void)posix_fadvise(e->fd, (off_t)next[i].offset, (off_t)next[i].length,
                            POSIX_FADV_WILLNEED);
}

static int read_extents(ios_strips *s, uint64_t file_id, const ios_extent *ext, size_t n_ext,
                        uint8_t *buf, uint32_t *crc, bool verify, const ios_data_units *want)
{
    if (crc != NULL)
        *crc = 0;
    fd_entry *e;
    int rc = fd_get(s, file_id, false, 0, &e);
    if (rc == -ENOENT) {
        uint64_t total = extents_bytes(ext, n_ext);
        memset(buf, 0, total);
        if (crc != NULL)
            *crc = crc32c(0, buf, total);
        return 0;
    }
    if (rc)
        return rc;
    uint8_t *bounce = NULL;
    ios_csum_entry *ent = NULL;
    /* once: a write may add it */
    bool checked = verify && __atomic_load_n(&e->cfd, __ATOMIC_ACQUIRE) >= 0;
    if (checked) {
        bounce = malloc((size_t)CSUM_STEP_BLOCKS * e->csum.block);
        ent = malloc(CSUM_STEP_BLOCKS * sizeof(*ent));
        if (!bounce || !ent)
            rc = -ENOMEM;
    }
    if (rc == 0)
        read_ahead(s, e, ext, n_ext, want);
    for (size_t i = 0; i < n_ext && rc == 0; i++) {
        if (checked) {
            rc = read_checked(s, e, ext[i].offset, ext[i].length, buf, bounce, ent, crc);
        } else {
            rc = pread_full(e->fd, buf, ext[i].length, ext[i].offset);
            if (rc == 0 && crc != NULL) /* nothing (to be) checked against */
                *crc = crc32c(*crc, buf, ext[i].length);
        }
        buf += ext[i].length;
    }
    free(ent);
    free(bounce);
    fd_put(s, e);
    return rc;
}

int ios_strips_read(ios_strips *s, uint64_t file_id, const ios_extent *ext, size_t n_ext,
                    uint8_t *buf, uint32_t *crc, const ios_data_units *want)
{
    return read_extents(s, file_id, ext, n_ext, buf, crc, true, want);
}

int ios_strips_read_unverified(ios_strips *s, uint64_t file_id, const ios_extent *ext,
                               size_t n_ext, uint8_t *buf, uint32_t *crc)
{
    return read_extents(s, file_id, ext, n_ext, buf, crc, false, NULL);
}

/* ------------------------------------------------------ checked writes */
/* The old bytes of the block at a (B bytes) and whether they were intact. */
static int edge_load(const fd_entry *e, uint64_t a, uint8_t *block, bool *intact)
{
    ios_csum_entry old;
    int rc = pread_full(e->fd, block, e->csum.block, a);
    if (rc == 0)
        rc = ios_csum_entries_read(e->cfd, a / e->csum.block, 1, &old);
    if (rc == 0)
        *intact = ios_csum_matches(&e->csum, &old, block, e->csum.block);
    return rc;
}

/* The entry of a partial block at a after the write of new[off, end):
 * its old bytes (edge) merged with the new ones, and BAD when those old
 * bytes had failed their check. */
static ios_csum_entry merged_entry(uint32_t B, uint64_t a, uint64_t off, uint64_t end,
                                   const uint8_t *new, uint8_t *edge, bool intact)
{
    uint64_t from = off > a ? off : a, to = end < a + B ? end : a + B;
    memcpy(edge + (from - a), new + (from - off), to - from);
    if (!intact)
        return (ios_csum_entry){.crc = 0, .tag = IOS_CSUM_TAG_BAD};
    return ios_csum_of(edge, B);
}

/* The entries of the whole blocks among [a, a + nb*B) that new[off, end)
 * covers, made before anything is stored and checked against the client's
 * piece CRCs (want[i]: block i's piece, NULL: none), also for the partial
 * pieces. 0, or the local offset of the first piece that fails + 1. */
static uint64_t step_entries(uint32_t B, uint64_t a, uint64_t nb, uint64_t off, uint64_t end,
                             const uint8_t *new, const uint32_t *want, ios_csum_entry *ent)
{
    for (uint64_t i = 0; i < nb; i++) {
        uint64_t b = a + i * B;
        uint64_t from = off > b ? off : b, to = end < b + B ? end : b + B;
        uint32_t crc;
        if (from == b && to == b + B) {
            ent[i] = ios_csum_of(new + (b - off), B);
            crc = ent[i].crc;
        } else {
            crc = want ? crc32c(0, new + (from - off), to - from) : 0;
        }
        if (want && crc != want[i])
            return from + 1;
    }
    return 0;
}

static int refuse_changed(const fd_entry *e, uint64_t bad)
{
    log_err("strip %016" PRIx64 ": a write's bytes at local offset %" PRIu64 " fail the CRC "
            "the client made of them: they changed after it sent them (in this server's "
            "memory?); refused, not stored", e->file_id, bad - 1);
    return -EIO;
}

/* One step of a checked write: new[off, end) within whole blocks [a, stop);
 * want: the client's CRCs of its pieces (NULL: none). */
static int write_step(ios_strips *s, const fd_entry *e, uint64_t a, uint64_t stop, uint64_t off,
                      uint64_t end, const uint8_t *new, const uint32_t *want, ios_csum_entry *ent,
                      uint8_t *edges)
{
    uint32_t B = e->csum.block;
    uint64_t nb = (stop - a) / B;
    uint8_t *head = edges, *tail = edges + B;
    bool head_ok = true, tail_ok = true;
    bool head_partial = off > a || (end < a + B);
    bool tail_partial = nb > 1 && end < stop;
    uint64_t bad = step_entries(B, a, nb, off, end, new, want, ent);
    if (bad)
        return refuse_changed(e, bad);
    region_set rs;
    regions_of(e->file_id, a, stop, &rs);
    regions_lock(s, &rs);
    int rc = 0;
    if (head_partial)
        rc = edge_load(e, a, head, &head_ok);
    if (rc == 0 && tail_partial)
        rc = edge_load(e, stop - B, tail, &tail_ok);
    if (rc == 0)
        rc = pwrite_full(e->fd, new, end - off, off);
    if (rc == 0 && head_partial)
        ent[0] = merged_entry(B, a, off, end, new, head, head_ok);
    if (rc == 0 && tail_partial)
        ent[nb - 1] = merged_entry(B, stop - B, off, end, new, tail, tail_ok);
    if (rc == 0)
        rc = ios_csum_entries_write(e->cfd, a / B, nb, ent);
    regions_unlock(s, &rs);
    if (rc == 0 && (!head_ok || !tail_ok))
        log_warn("strip %016" PRIx64 ": a write into a damaged block (local offsets %" PRIu64
                 "..%" PRIu64 ") left it marked damaged until it is rewritten whole",
                 e->file_id, a, stop);
    return rc;
}

/* want: the client's CRCs of this extent's pieces at the sidecar's block
 * size (NULL: none, or checked already at another size). */
static int write_checked(ios_strips *s, const fd_entry *e, uint64_t off, uint64_t len,
                         const uint8_t *buf, const uint32_t *want, ios_csum_entry *ent,
                         uint8_t *edges)
{
    uint32_t B = e->csum.block;
    uint64_t end = off + len;
    for (uint64_t a = off / B * B; a < end;) {
        uint64_t stop = a + (uint64_t)CSUM_STEP_BLOCKS * B;
        if (stop > (end + B - 1) / B * B)
            stop = (end + B - 1) / B * B;
        uint64_t from = off > a ? off : a, to = end < stop ? end : stop;
        const uint32_t *w = want ? want + (a / B - off / B) : NULL;
        int rc = write_step(s, e, a, stop, from, to, buf + (from - off), w, ent, edges);
        if (rc)
            return rc;
        a = stop;
    }
    return 0;
}

/* One extent of a write into a file with checksums: the client's CRCs
 * (at i-th piece *piece) checked where the entries are made when they are
 * cut at the sidecar's block size, else in a pass of their own first. */
static int write_extent(ios_strips *s, const fd_entry *e, const ios_extent *x, const uint8_t *buf,
                        const ios_block_crcs *want, uint64_t *piece, ios_csum_entry *ent,
                        uint8_t *edges)
{
    const uint32_t *w = NULL;
    if (want) {
        w = want->crcs + *piece;
        *piece += block_crc_pieces(x->offset, x->length, want->block);
        if (want->block != e->csum.block) { /* a sidecar of an older, smaller block */
            uint64_t bad = block_crc_verify(want->block, x->offset, x->length, buf, w);
            if (bad)
                return refuse_changed(e, bad);
            w = NULL;
        }
    }
    return write_checked(s, e, x->offset, x->length, buf, w, ent, edges);
}

/* The long extents of a write start on their way to the disk now
 * (SYNC_FILE_RANGE_WRITE: nothing waits for them), so the disk writes while
 * the stream goes on. Left in the page cache they would all wait for the
 * fsync that ends the stream (the kernel's flusher starts only at 10% of
 * memory dirty, or after 30 s), and the fsync would wait for every one of
 * them while the CPUs idle. Short extents stay in the page cache, which
 * absorbs rewrites of hot blocks. Advisory only: an I/O error of this
 * writeback is kept by the file and reported by the next fdatasync. */
static void start_writeback(int fd, const ios_extent *ext, size_t n_ext)
{
    for (size_t i = 0; i < n_ext; i++)
        if (ext[i].length >= IOS_WRITEBACK_MIN_BYTES)
            (void)sync_file_range(fd, (off_t)ext[i].offset, (off_t)ext[i].length,
                                  SYNC_FILE_RANGE_WRITE);
}

int ios_strips_write(ios_strips *s, uint64_t file_id, const ios_extent *ext, size_t n_ext,
                     const uint8_t *buf, uint32_t su, const ios_block_crcs *want)
{
    fd_entry *e;
    int rc = fd_get(s, file_id, true, su, &e);
    if (rc)
        return rc;
    if ((rc = entry_add_sidecar(s, e, su))) {
        fd_put(s, e);
        return rc;
    }
    ios_csum_entry *ent = NULL;
    uint8_t *edges = NULL;
    if (e->cfd >= 0) {
        ent = malloc(CSUM_STEP_BLOCKS * sizeof(*ent));
        edges = malloc(2u * e->csum.block);
        if (!ent || !edges)
            rc = -ENOMEM;
    }
    uint64_t piece = 0;
    for (size_t i = 0; i < n_ext && rc == 0; i++) {
        if (ext[i].length == 0)
            continue;
        if (e->cfd >= 0)
            rc = write_extent(s, e, &ext[i], buf, want, &piece, ent, edges);
        else
            rc = pwrite_full(e->fd, buf, ext[i].length, ext[i].offset);
        buf += ext[i].length;
    }
    if (rc == 0)
        start_writeback(e->fd, ext, n_ext);
    free(edges);
    free(ent);
    fd_put(s, e);
    return rc;
}

/* The end of what the strip file or its sidecar holds now (at least to). */
static uint64_t stored_end(const fd_entry *e, uint64_t to)
{
    struct stat st;
    uint64_t covered = 0;
    if (fstat(e->fd, &st) == 0 && (uint64_t)st.st_size > to)
        to = (uint64_t)st.st_size;
    if (ios_csum_covered_bytes(e->cfd, &e->csum, &covered) == 0 && covered > to)
        to = covered;
    return to;
}

/* Truncation keeps the checksums right: the block the new end falls in
 * gets the entry of its remaining bytes (zeros after the end), or BAD when
 * its old bytes had failed their check; entries past the end go. The
 * blocks cut off change their bytes (to a hole) and lose their entries in
 * two steps: every region from the new end's block on is held meanwhile,
 * so a reader (region-locked when a block fails its check) sees them
 * before or after, never between. */
static int truncate_checked(ios_strips *s, const fd_entry *e, uint64_t size)
{
    uint32_t B = e->csum.block;
    uint64_t a = size / B * B;
    uint8_t *block = NULL;
    region_set rs;
    regions_of(e->file_id, a, stored_end(e, a + B), &rs);
    regions_lock(s, &rs);
    int rc = 0;
    bool intact = true;
    if (size % B != 0) {
        block = malloc(B);
        rc = block ? edge_load(e, a, block, &intact) : -ENOMEM;
    }
    if (rc == 0 && ftruncate(e->fd, (off_t)size) != 0)
        rc = -errno;
    if (rc == 0 && size % B != 0) {
        memset(block + (size - a), 0, B - (size - a));
        ios_csum_entry ent = intact ? ios_csum_of(block, B)
                                    : (ios_csum_entry){.crc = 0, .tag = IOS_CSUM_TAG_BAD};
        rc = ios_csum_entries_write(e->cfd, a / B, 1, &ent);
    }
    if (rc == 0)
        rc = ios_csum_entries_truncate(e->cfd, (size + B - 1) / B);
    regions_unlock(s, &rs);
    free(block);
    return rc;
}

int ios_strips_truncate(ios_strips *s, uint64_t file_id, uint64_t local_size)
{
    if (local_size > (uint64_t)INT64_MAX)
        return -EFBIG;
    fd_entry *e;
    int rc = fd_get(s, file_id, false, 0, &e);
    if (rc == -ENOENT || rc == -ENODATA)
        return 0; /* nothing stored (or lost: a rebuild brings it back) */
    if (rc)
        return rc;
    if (__atomic_load_n(&e->cfd, __ATOMIC_ACQUIRE) >= 0)
        rc = truncate_checked(s, e, local_size);
    else if (ftruncate(e->fd, (off_t)local_size) != 0)
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
    pthread_mutex_lock(&s->create_mu);
    int rc = unlinkat(s->dir_fd, name, 0) == 0 || errno == ENOENT ? 0 : -errno;
    char cname[IOS_STRIP_NAME_LEN + sizeof(IOS_CSUM_SUFFIX)];
    sidecar_name(file_id, cname); /* after the strip file: a sidecar alone is harmless */
    if (rc == 0 && unlinkat(s->dir_fd, cname, 0) != 0 && errno != ENOENT)
        rc = -errno;
    pthread_mutex_unlock(&s->create_mu);
    pthread_mutex_unlock(&s->mu);
    if (doomed)
        entry_destroy(doomed);
    return rc;
}

/* A reference on file_id's descriptor when its strip file exists: 0, 1
 * when it is absent (no reference taken), or an error (-ENODATA: lost). */
static int fd_get_present(ios_strips *s, uint64_t file_id, fd_entry **out)
{
    int rc = fd_get(s, file_id, false, 0, out);
    return rc == -ENOENT ? 1 : rc;
}

int ios_strips_fsync(ios_strips *s, uint64_t file_id)
{
    fd_entry *e;
    int rc = fd_get_present(s, file_id, &e);
    if (rc)
        return rc > 0 ? 0 : rc;
    int cfd = __atomic_load_n(&e->cfd, __ATOMIC_ACQUIRE);
    if (fdatasync(e->fd) != 0 || (cfd >= 0 && fdatasync(cfd) != 0))
        rc = -errno;
    fd_put(s, e);
    return rc;
}

int ios_strips_data_map(ios_strips *s, uint64_t file_id, uint64_t from, uint64_t to,
                        uint32_t granule, ios_data_map *m, uint64_t *alloc_bytes,
                        uint64_t *size)
{
    *alloc_bytes = *size = 0;
    m->n = 0;
    m->more = false;
    m->next = to;
    fd_entry *e;
    int rc = fd_get_present(s, file_id, &e);
    if (rc)
        return rc > 0 ? 0 : rc;
    rc = ios_strip_alloc(e->fd, alloc_bytes, size);
    if (rc == 0 && from < to)
        rc = ios_strip_data_scan(e->fd, from, to, granule, m);
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

/* The file id a directory entry names: 16 lowercase hex digits, then
 * suffix; false for anything else (never ours). */
static bool id_of_name(const char *name, const char *suffix, uint64_t *id)
{
    size_t hex = IOS_STRIP_NAME_LEN - 1;
    if (strlen(name) != hex + strlen(suffix) || strcmp(name + hex, suffix) != 0)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < hex; i++) {
        char c = name[i];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16u;
        if (d == 16u)
            return false;
        v = v << 4 | d;
    }
    *id = v;
    return true;
}

/* Whether file_id's sidecar is there without its strip file. Asked under
 * create_mu, which every creation and removal of the pair holds: a removal
 * unlinks the strip file first, so without it a walk passing between the
 * two unlinks would call a removed strip lost. */
static bool sidecar_alone(ios_strips *s, uint64_t file_id)
{
    char name[IOS_STRIP_NAME_LEN];
    struct stat st;
    ios_strip_name(file_id, name);
    pthread_mutex_lock(&s->create_mu);
    bool alone = fstatat(s->dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT &&
                 sidecar_exists(s, file_id);
    pthread_mutex_unlock(&s->create_mu);
    return alone;
}

int ios_strips_walk(ios_strips *s, ios_strip_walk_fn fn, void *arg)
{
    int fd = dup(s->dir_fd);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    rewinddir(d); /* a dup shares the offset: start at the beginning */
    struct dirent *de;
    uint64_t id;
    bool go = true;
    while (go && (de = readdir(d)) != NULL) {
        if (id_of_name(de->d_name, "", &id)) {
            go = fn(arg, id, false);
        } else if (id_of_name(de->d_name, IOS_CSUM_SUFFIX, &id) && sidecar_alone(s, id)) {
            go = fn(arg, id, true); /* the strip file was lost */
        }
    }
    closedir(d);
    return 0;
}

/* One step of an adoption: under the region locks, the blocks of
 * [a, a + nb*B) that have no checksum get the one of their bytes now. */
static int adopt_step(ios_strips *s, const fd_entry *e, uint64_t a, uint64_t nb, uint8_t *blocks,
                      ios_csum_entry *ent, uint64_t *adopted)
{
    uint32_t B = e->csum.block;
    region_set rs;
    regions_of(e->file_id, a, a + nb * B, &rs);
    regions_lock(s, &rs);
    int rc = pread_full(e->fd, blocks, nb * B, a);
    if (rc == 0)
        rc = ios_csum_entries_read(e->cfd, a / B, nb, ent);
    uint64_t n = 0;
    for (uint64_t i = 0; rc == 0 && i < nb; i++) {
        if (ent[i].tag != 0)
            continue; /* checked already (or known bad) */
        ent[i] = ios_csum_of(blocks + i * B, B);
        n++;
    }
    if (rc == 0 && n > 0)
        rc = ios_csum_entries_write(e->cfd, a / B, nb, ent);
    regions_unlock(s, &rs);
    if (rc == 0)
        *adopted += n;
    return rc;
}

int ios_strips_adopt(ios_strips *s, uint64_t file_id, uint64_t *adopted)
{
    *adopted = 0;
    fd_entry *e;
    int rc = fd_get(s, file_id, false, 0, &e);
    if (rc == -ENOENT || rc == -ENODATA)
        return 0; /* nothing to adopt; a lost strip is the scrub's finding */
    if (rc)
        return rc;
    rc = entry_add_sidecar(s, e, BLOCK_CRC_MIN); /* the stripe unit is not known here */
    struct stat st;
    uint8_t *blocks = NULL;
    ios_csum_entry *ent = NULL;
    if (rc || __atomic_load_n(&e->cfd, __ATOMIC_ACQUIRE) < 0 ||
        (e->csum.flags & IOS_CSUM_COMPLETE))
        goto out; /* complete: every block has had its checksum since it was written */
    if (fstat(e->fd, &st) != 0) {
        rc = -errno;
        goto out;
    }
    uint32_t B = e->csum.block;
    blocks = malloc((size_t)CSUM_STEP_BLOCKS * B);
    ent = malloc(CSUM_STEP_BLOCKS * sizeof(*ent));
    if (!blocks || !ent) {
        rc = -ENOMEM;
        goto out;
    }
    uint64_t end = ((uint64_t)st.st_size + B - 1) / B * B;
    for (uint64_t a = 0; a < end && rc == 0; a += (uint64_t)CSUM_STEP_BLOCKS * B) {
        uint64_t nb = (end - a) / B < CSUM_STEP_BLOCKS ? (end - a) / B : CSUM_STEP_BLOCKS;
        rc = adopt_step(s, e, a, nb, blocks, ent, adopted);
    }
out:
    free(ent);
    free(blocks);
    fd_put(s, e);
    return rc;
}

int ios_strips_checked_size(ios_strips *s, uint64_t file_id, uint64_t *size)
{
    *size = 0;
    fd_entry *e;
    int rc = fd_get_present(s, file_id, &e);
    if (rc)
        return rc > 0 ? 0 : rc;
    struct stat st;
    uint64_t covered = 0;
    if (fstat(e->fd, &st) != 0)
        rc = -errno;
    else if (__atomic_load_n(&e->cfd, __ATOMIC_ACQUIRE) >= 0)
        rc = ios_csum_covered_bytes(e->cfd, &e->csum, &covered);
    if (rc == 0)
        *size = (uint64_t)st.st_size > covered ? (uint64_t)st.st_size : covered;
    fd_put(s, e);
    return rc;
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

uint64_t ios_strips_csum_errors(ios_strips *s)
{
    return __atomic_load_n(&s->csum_errors, __ATOMIC_RELAXED);
}

unsigned ios_strips_cached(ios_strips *s)
{
    pthread_mutex_lock(&s->mu);
    unsigned n = s->n_open;
    pthread_mutex_unlock(&s->mu);
    return n;
}
