/* test_ioserver_store.c - the ioserver's strip store (ioserver/strips.c) on a
 * real temp directory, its durable state (ioserver/state.c, real LevelDB),
 * and the IoOp handlers (ioserver/handlers.c) driven through ios_process
 * with real protobuf-c headers: extents, zero fill, truncate, remove, names
 * from the id only, the descriptor cache bound, early writeback of large
 * writes, the server's read-ahead of a fault-free reader, lock-on-read,
 * unlock-on-write, dirty records, rebuild state, and bad requests. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ioserver/handlers.h"
#include "kvstore.h"
#include "ioserver/state.h"
#include "ioserver/strip_csum.h"
#include "ioserver/strips.h"

#define SU_BYTES 4096u
#define FILE_X 0x00ab00cd00ef0012ull
#define MAX_BULK_BYTES (1u << 20)

static char tmpdir[64];
static ios_strips *st;

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

static void setup(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/depfs-ios-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    ck_assert_int_eq(ios_strips_open(tmpdir, 0, &st), 0);
}

static void teardown(void)
{
    ios_strips_close(st);
    st = NULL;
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void fill(uint8_t *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(seed * 31u + i * 7u + 1u);
}

static int all_zero(const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}

static int strip_exists(uint64_t id)
{
    char name[IOS_STRIP_NAME_LEN], path[256];
    struct stat sb;
    ios_strip_name(id, name);
    snprintf(path, sizeof(path), "%s/%s/%s", tmpdir, IOS_STRIPS_SUBDIR, name);
    return stat(path, &sb) == 0;
}

/* ------------------------------------------------------------ strip store */
START_TEST(write_read_extents)
{
    uint8_t w[3 * SU_BYTES], r[3 * SU_BYTES];
    fill(w, sizeof(w), 1);
    ios_extent ext[3] = { { 0, SU_BYTES }, { 5 * SU_BYTES, SU_BYTES }, { 2 * SU_BYTES + 100, SU_BYTES } };
    ck_assert_int_eq(ios_strips_write(st, FILE_X, ext, 3, w, 0, NULL), 0);
    ck_assert_int_eq(ios_strips_read(st, FILE_X, ext, 3, r, NULL, NULL), 0);
    ck_assert_mem_eq(r, w, sizeof(w));
    /* read back in another order and cut: bytes land where asked */
    ios_extent back[2] = { { 5 * SU_BYTES + 10, 20 }, { 0, 5 } };
    uint8_t r2[25];
    ck_assert_int_eq(ios_strips_read(st, FILE_X, back, 2, r2, NULL, NULL), 0);
    ck_assert_mem_eq(r2, w + SU_BYTES + 10, 20);
    ck_assert_mem_eq(r2 + 20, w, 5);
    uint64_t size;
    ck_assert_int_eq(ios_strips_size(st, FILE_X, &size), 0);
    ck_assert_uint_eq(size, 6 * SU_BYTES);
}
END_TEST

START_TEST(zero_fill_past_eof_and_absent)
{
    uint8_t w[100], r[300];
    fill(w, sizeof(w), 2);
    ios_extent e = { 0, sizeof(w) };
    ck_assert_int_eq(ios_strips_write(st, FILE_X, &e, 1, w, 0, NULL), 0);
    memset(r, 0xee, sizeof(r));
    ios_extent across = { 50, 250 }; /* 50 bytes of data, then 200 past EOF */
    ck_assert_int_eq(ios_strips_read(st, FILE_X, &across, 1, r, NULL, NULL), 0);
    ck_assert_mem_eq(r, w + 50, 50);
    ck_assert(all_zero(r + 50, 200));
    /* a hole in the middle reads as zeros too */
    ios_extent far = { 10 * SU_BYTES, 10 };
    ck_assert_int_eq(ios_strips_write(st, FILE_X, &far, 1, w, 0, NULL), 0);
    ios_extent hole = { 200, 300 };
    memset(r, 0xee, sizeof(r));
    ck_assert_int_eq(ios_strips_read(st, FILE_X, &hole, 1, r, NULL, NULL), 0);
    ck_assert(all_zero(r, 300));
    /* an absent file reads as zeros and is not created */
    memset(r, 0xee, sizeof(r));
    ios_extent e2 = { 12345, 300 };
    ck_assert_int_eq(ios_strips_read(st, 77, &e2, 1, r, NULL, NULL), 0);
    ck_assert(all_zero(r, 300));
    ck_assert(!strip_exists(77));
}
END_TEST

START_TEST(truncate_strip)
{
    uint8_t w[2 * SU_BYTES], r[2 * SU_BYTES];
    fill(w, sizeof(w), 3);
    ios_extent e = { 0, sizeof(w) };
    ck_assert_int_eq(ios_strips_write(st, FILE_X, &e, 1, w, 0, NULL), 0);
    ck_assert_int_eq(ios_strips_truncate(st, FILE_X, SU_BYTES + 10), 0);
    uint64_t size;
    ck_assert_int_eq(ios_strips_size(st, FILE_X, &size), 0);
    ck_assert_uint_eq(size, SU_BYTES + 10);
    ck_assert_int_eq(ios_strips_read(st, FILE_X, &e, 1, r, NULL, NULL), 0);
    ck_assert_mem_eq(r, w, SU_BYTES + 10);
    ck_assert(all_zero(r + SU_BYTES + 10, SU_BYTES - 10));
    /* growing is sparse and reads zeros */
    ck_assert_int_eq(ios_strips_truncate(st, FILE_X, 4 * SU_BYTES), 0);
    ck_assert_int_eq(ios_strips_size(st, FILE_X, &size), 0);
    ck_assert_uint_eq(size, 4 * SU_BYTES);
    /* an absent file stays absent */
    ck_assert_int_eq(ios_strips_truncate(st, 99, SU_BYTES), 0);
    ck_assert(!strip_exists(99));
    ck_assert_int_eq(ios_strips_size(st, 99, &size), 0);
    ck_assert_uint_eq(size, 0);
}
END_TEST

START_TEST(remove_strip)
{
    uint8_t w[64], r[64];
    fill(w, sizeof(w), 4);
    ios_extent e = { 0, sizeof(w) };
    ck_assert_int_eq(ios_strips_write(st, FILE_X, &e, 1, w, 0, NULL), 0);
    ck_assert(strip_exists(FILE_X));
    ck_assert_int_eq(ios_strips_remove(st, FILE_X), 0);
    ck_assert(!strip_exists(FILE_X));
    ck_assert_int_eq(ios_strips_read(st, FILE_X, &e, 1, r, NULL, NULL), 0);
    ck_assert(all_zero(r, sizeof(r)));
    ck_assert_int_eq(ios_strips_remove(st, FILE_X), 0); /* absent is fine */
    ck_assert_int_eq(ios_strips_fsync(st, FILE_X), 0);
    /* a later write starts a fresh file, not the unlinked one */
    ck_assert_int_eq(ios_strips_write(st, FILE_X, &e, 1, w, 0, NULL), 0);
    ck_assert(strip_exists(FILE_X));
    ck_assert_int_eq(ios_strips_read(st, FILE_X, &e, 1, r, NULL, NULL), 0);
    ck_assert_mem_eq(r, w, sizeof(w));
}
END_TEST

/* A walk beside a remover: a strip removed while the walk passes its
 * sidecar is gone, not lost (the background scrub counted such strips as
 * damaged). Bounded: WALK_RACE_ROUNDS create/remove rounds. */
#define WALK_RACE_ROUNDS 3000u
#define WALK_RACE_FILES 16u
static atomic_bool walk_race_done;

static void *walk_race_remover(void *arg)
{
    (void)arg;
    uint8_t w[64];
    fill(w, sizeof(w), 9);
    ios_extent e = { 0, sizeof(w) };
    for (unsigned r = 0; r < WALK_RACE_ROUNDS; r++) {
        uint64_t id = FILE_X + 1 + r % WALK_RACE_FILES;
        if (ios_strips_write(st, id, &e, 1, w, 0, NULL) != 0 || ios_strips_remove(st, id) != 0)
            break;
    }
    atomic_store(&walk_race_done, true);
    return NULL;
}

static bool walk_count_lost(void *arg, uint64_t file_id, bool lost)
{
    (void)file_id;
    if (lost)
        (*(unsigned *)arg)++;
    return true;
}

START_TEST(walk_beside_removals_finds_nothing_lost)
{
    uint8_t w[64];
    fill(w, sizeof(w), 8);
    ios_extent e = { 0, sizeof(w) };
    for (unsigned i = 0; i < WALK_RACE_FILES; i++) /* other strips the walk passes */
        ck_assert_int_eq(ios_strips_write(st, FILE_X + 100 + i, &e, 1, w, 0, NULL), 0);
    atomic_store(&walk_race_done, false);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, walk_race_remover, NULL), 0);
    unsigned lost = 0, walks = 0;
    while (!atomic_load(&walk_race_done)) {
        ck_assert_int_eq(ios_strips_walk(st, walk_count_lost, &lost), 0);
        walks++;
    }
    pthread_join(t, NULL);
    ck_assert_msg(lost == 0, "%u removed strips reported lost in %u walks", lost, walks);
}
END_TEST

START_TEST(names_from_id_only)
{
    char name[IOS_STRIP_NAME_LEN];
    ios_strip_name(0, name);
    ck_assert_str_eq(name, "0000000000000000");
    ios_strip_name(UINT64_MAX, name);
    ck_assert_str_eq(name, "ffffffffffffffff");
    ios_strip_name(FILE_X, name);
    ck_assert_str_eq(name, "00ab00cd00ef0012");

    uint8_t w[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    ios_extent e = { 0, sizeof(w) };
    const uint64_t ids[] = { 0, 1, 0x2f2e2e2f, UINT64_MAX }; /* "/../" as bytes */
    for (size_t i = 0; i < 4; i++)
        ck_assert_int_eq(ios_strips_write(st, ids[i], &e, 1, w, 0, NULL), 0);

    /* the data dir holds only strips/, which holds only 16-hex-digit names
     * (strip files) and the same + ".crc" (their checksum sidecars) */
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, IOS_STRIPS_SUBDIR);
    DIR *d = opendir(path);
    ck_assert_ptr_nonnull(d);
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        size_t len = strlen(de->d_name);
        ck_assert(len == 16 || (len == 16 + strlen(IOS_CSUM_SUFFIX) &&
                                strcmp(de->d_name + 16, IOS_CSUM_SUFFIX) == 0));
        ck_assert_uint_eq(strspn(de->d_name, "0123456789abcdef"), 16);
        n++;
    }
    closedir(d);
    ck_assert_int_eq(n, 8);
    ck_assert(strip_exists(0x2f2e2e2f));
    d = opendir(tmpdir);
    ck_assert_ptr_nonnull(d);
    n = 0;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            ck_assert_str_eq(de->d_name, IOS_STRIPS_SUBDIR);
            n++;
        }
    closedir(d);
    ck_assert_int_eq(n, 1);
}
END_TEST

START_TEST(fd_cache_is_bounded)
{
    ios_strips *small;
    ck_assert_int_eq(ios_strips_open(tmpdir, 2, &small), 0);
    uint8_t w[32], r[32];
    ios_extent e = { 0, sizeof(w) };
    for (unsigned id = 1; id <= 10; id++) {
        fill(w, sizeof(w), id);
        ck_assert_int_eq(ios_strips_write(small, id, &e, 1, w, 0, NULL), 0);
        ck_assert_uint_le(ios_strips_cached(small), 2);
    }
    for (unsigned id = 1; id <= 10; id++) {
        fill(w, sizeof(w), id);
        ck_assert_int_eq(ios_strips_read(small, id, &e, 1, r, NULL, NULL), 0);
        ck_assert_mem_eq(r, w, sizeof(w));
    }
    ck_assert_uint_le(ios_strips_cached(small), 2);
    ios_strips_close(small);
}
END_TEST

START_TEST(usage_and_fsync)
{
    uint64_t used = 0, avail = 0;
    ck_assert_int_eq(ios_strips_usage(st, &used, &avail), 0);
    ck_assert_uint_gt(used + avail, 0);
    uint8_t w[16] = { 9 };
    ios_extent e = { 0, sizeof(w) };
    ck_assert_int_eq(ios_strips_write(st, FILE_X, &e, 1, w, 0, NULL), 0);
    ck_assert_int_eq(ios_strips_fsync(st, FILE_X), 0);
}
END_TEST

/* cachestat(2) (Linux 6.5): how many of a file's cached pages are dirty.
 * Debian 12's headers predate it, hence the number and struct here. */
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif
struct wb_cachestat_range { uint64_t off, len; };
struct wb_cachestat { uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted; };

/* Dirty pages of FILE_X's strip file: 0 and *dirty, or -errno. */
static int strip_dirty_pages(uint64_t *dirty)
{
    char name[IOS_STRIP_NAME_LEN], path[PATH_MAX];
    ios_strip_name(FILE_X, name);
    snprintf(path, sizeof path, "%s/%s/%s", tmpdir, IOS_STRIPS_SUBDIR, name);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -errno;
    struct wb_cachestat_range r = {0, 0}; /* 0: to the end */
    struct wb_cachestat cs;
    int rc = syscall(__NR_cachestat, fd, &r, &cs, 0) == 0 ? 0 : -errno;
    close(fd);
    if (rc == 0)
        *dirty = cs.nr_dirty;
    return rc;
}

#define STREAM_BYTES (4u << 20)
#define SMALL_WRITES 64u
#define SMALL_BYTES 4096u
#define SMALL_STRIDE (2u * SMALL_BYTES)

/* Pages the scattered small writes touch (ascending offsets; one each on
 * 4 KiB pages). */
static uint64_t small_write_pages(uint64_t page)
{
    uint64_t pages = 0, next = 0; /* next: the first page not counted yet */
    for (unsigned i = 0; i < SMALL_WRITES; i++) {
        uint64_t first = (uint64_t)i * SMALL_STRIDE / page;
        uint64_t last = ((uint64_t)i * SMALL_STRIDE + SMALL_BYTES - 1) / page;
        first = first > next ? first : next;
        if (last >= first) {
            pages += last - first + 1;
            next = last + 1;
        }
    }
    return pages;
}

/* A long extent (a client streaming whole stripes) leaves its pages on
 * their way to the disk, not dirty in the page cache until the fsync;
 * short ones stay dirty there (rewrites of hot blocks are absorbed), even
 * many in one request (a client's set of random writes) adding up to as
 * many bytes as a long one. */
START_TEST(large_writes_start_writeback)
{
    _Static_assert(SMALL_WRITES * SMALL_BYTES >= (256u << 10), "as many bytes as a long extent");
    uint8_t *w = malloc(STREAM_BYTES);
    ck_assert_ptr_nonnull(w);
    fill(w, SMALL_WRITES * SMALL_BYTES, 3);
    ios_extent scattered[SMALL_WRITES];
    for (unsigned i = 0; i < SMALL_WRITES; i++)
        scattered[i] = (ios_extent){ (uint64_t)i * SMALL_STRIDE, SMALL_BYTES };
    ck_assert_int_eq(ios_strips_write(st, FILE_X, scattered, SMALL_WRITES, w, 0, NULL), 0);
    uint64_t dirty = 0;
    int rc = strip_dirty_pages(&dirty);
    if (rc == -ENOSYS || rc == -EPERM) {
        fprintf(stderr, "large_writes_start_writeback: SKIPPED, no cachestat(2) in this "
                        "kernel (%s): cannot see dirty pages\n", strerror(-rc));
        free(w);
        return;
    }
    struct statfs fs;
    ck_assert_int_eq(statfs(tmpdir, &fs), 0);
    if (fs.f_type == TMPFS_MAGIC) {
        fprintf(stderr, "large_writes_start_writeback: SKIPPED, %s is on tmpfs (no "
                        "writeback: its pages stay dirty)\n", tmpdir);
        free(w);
        return;
    }
    ck_assert_int_eq(rc, 0);
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    ck_assert_uint_eq(dirty, small_write_pages(page)); /* the small writes: still dirty */
    ck_assert_int_eq(ios_strips_fsync(st, FILE_X), 0);
    fill(w, STREAM_BYTES, 4);
    ios_extent big = { 0, STREAM_BYTES };
    ck_assert_int_eq(ios_strips_write(st, FILE_X, &big, 1, w, 0, NULL), 0);
    ck_assert_int_eq(strip_dirty_pages(&dirty), 0);
    ck_assert_uint_lt(dirty, STREAM_BYTES / page / 4);
    ck_assert_int_eq(ios_strips_fsync(st, FILE_X), 0);
    uint8_t *r = malloc(STREAM_BYTES);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(ios_strips_read(st, FILE_X, &big, 1, r, NULL, NULL), 0);
    ck_assert_int_eq(memcmp(w, r, STREAM_BYTES), 0);
    free(r);
    free(w);
}
END_TEST

/* The server's read-ahead (strip_readahead.h) of a fault-free reader: an
 * 8@6 strip file at position 0 (stripe s is parity there when s % 8 is 1
 * or 2), its pages dropped from the page cache, read a data unit at a time
 * from the start as a client does (IoRequest.data_units). The data units
 * after those read are then read ahead, and no parity unit is in the page
 * cache: the kernel's read-ahead would have read the parity units between
 * the data units. */
#define RA_N 8u
#define RA_K 6u
#define RA_SU (64u << 10)
#define RA_STRIPES 256u     /* a 16 MiB strip file */
#define RA_READ_STRIPES 16u /* read from the start */
#define RA_WAIT_MS 2000u    /* for the read-ahead's pages to be in the cache */

static bool ra_data_unit(uint64_t stripe)
{
    const layout l = { .n = RA_N, .k = RA_K, .su = RA_SU };
    return layout_pos_unit(&l, stripe, 0) < RA_K;
}

/* Pages of the strip file's data (or parity) units in the page cache, in
 * stripes [from, to): mincore(2) on a mapping, which reads nothing in. */
static uint64_t ra_cached_pages(int fd, bool data, uint64_t from, uint64_t to)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t len = (size_t)RA_STRIPES * RA_SU, pages = len / (size_t)page;
    void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    ck_assert_ptr_ne(map, MAP_FAILED);
    unsigned char *vec = malloc(pages);
    ck_assert_ptr_nonnull(vec);
    ck_assert_int_eq(mincore(map, len, vec), 0);
    uint64_t n = 0;
    for (size_t p = 0; p < pages; p++) {
        uint64_t stripe = (uint64_t)p * (uint64_t)page / RA_SU;
        if (stripe >= from && stripe < to && ra_data_unit(stripe) == data && (vec[p] & 1))
            n++;
    }
    free(vec);
    munmap(map, len);
    return n;
}

START_TEST(sequential_data_reads_read_ahead_no_parity)
{
    size_t len = (size_t)RA_STRIPES * RA_SU;
    uint8_t *w = malloc(len);
    ck_assert_ptr_nonnull(w);
    fill(w, len, 11);
    ios_extent all = { 0, len };
    ck_assert_int_eq(ios_strips_write(st, FILE_X, &all, 1, w, RA_SU, NULL), 0);
    ck_assert_int_eq(ios_strips_fsync(st, FILE_X), 0);
    char name[IOS_STRIP_NAME_LEN], path[PATH_MAX];
    ios_strip_name(FILE_X, name);
    snprintf(path, sizeof(path), "%s/%s/%s", tmpdir, IOS_STRIPS_SUBDIR, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    if (ra_cached_pages(fd, true, 0, RA_STRIPES) + ra_cached_pages(fd, false, 0, RA_STRIPES)) {
        fprintf(stderr, "sequential_data_reads_read_ahead_no_parity: SKIPPED, the pages of "
                        "%s stay in memory (tmpfs?): nothing to read ahead\n", path);
        close(fd);
        free(w);
        return;
    }
    const ios_data_units want = { .n = RA_N, .k = RA_K, .pos = 0, .su = RA_SU };
    uint8_t *r = malloc(RA_SU);
    ck_assert_ptr_nonnull(r);
    for (uint64_t s = 0; s < RA_READ_STRIPES; s++) {
        if (!ra_data_unit(s))
            continue;
        ios_extent unit = { s * RA_SU, RA_SU };
        ck_assert_int_eq(ios_strips_read(st, FILE_X, &unit, 1, r, NULL, &want), 0);
        ck_assert_int_eq(memcmp(r, w + unit.offset, RA_SU), 0);
    }
    uint64_t ahead = 0;
    for (unsigned waited = 0; ahead == 0 && waited < RA_WAIT_MS; waited += 10) {
        ahead = ra_cached_pages(fd, true, RA_READ_STRIPES, RA_STRIPES);
        if (ahead == 0)
            usleep(10 * 1000);
    }
    ck_assert_uint_gt(ahead, 0);
    ck_assert_uint_eq(ra_cached_pages(fd, false, 0, RA_STRIPES), 0);
    close(fd);
    free(r);
    free(w);
}
END_TEST

/* Threads write and read back their own files, through a cache smaller
 * than the number of files, while another thread removes a scratch file. */
#define PAR_THREADS 8
#define PAR_ROUNDS 200
static ios_strips *par_st;

static void *par_worker(void *arg)
{
    uint64_t id = 1000 + (uint64_t)(uintptr_t)arg;
    uint8_t w[512], r[512];
    for (int i = 0; i < PAR_ROUNDS; i++) {
        fill(w, sizeof(w), (unsigned)(id + (uint64_t)i));
        ios_extent e = { (uint64_t)(i % 7) * sizeof(w), sizeof(w) };
        if (ios_strips_write(par_st, id, &e, 1, w, 0, NULL) ||
            ios_strips_read(par_st, id, &e, 1, r, NULL, NULL) || memcmp(w, r, sizeof(w)) != 0)
            return (void *)1;
        if (ios_strips_remove(par_st, 5) != 0)
            return (void *)1;
    }
    return NULL;
}

START_TEST(parallel_files)
{
    ck_assert_int_eq(ios_strips_open(tmpdir, 3, &par_st), 0);
    pthread_t th[PAR_THREADS];
    for (uintptr_t i = 0; i < PAR_THREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, par_worker, (void *)i), 0);
    for (int i = 0; i < PAR_THREADS; i++) {
        void *ret;
        pthread_join(th[i], &ret);
        ck_assert_ptr_null(ret);
    }
    ios_strips_close(par_st);
}
END_TEST

/* -------------------------------------------------------- durable state */
START_TEST(state_and_dirty_records_persist)
{
    ios_state *s;
    char err[256];
    ck_assert_int_eq(ios_state_open(tmpdir, &s, err, sizeof(err)), 0);
    ck_assert_uint_eq(ios_state_get(s), DEPFS__SERVER_STATE__SERVER_UP);
    ck_assert_int_eq(ios_state_set(s, DEPFS__SERVER_STATE__SERVER_REBUILDING), 0);
    const uint32_t down[2] = { 3, 300 };
    ck_assert_int_eq(ios_dirty_add(s, down, 2, 42), 0);
    ck_assert_int_eq(ios_dirty_add(s, down, 1, 7), 0);
    ck_assert_int_eq(ios_dirty_add(s, down, 1, 42), 0); /* again: no duplicate */
    ck_assert_int_eq(ios_dirty_add(s, down, 1, UINT64_MAX), 0);
    ios_state_close(s);

    ck_assert_int_eq(ios_state_open(tmpdir, &s, err, sizeof(err)), 0);
    ck_assert_uint_eq(ios_state_get(s), DEPFS__SERVER_STATE__SERVER_REBUILDING);
    uint64_t ids[8];
    size_t n;
    bool more;
    ck_assert_int_eq(ios_dirty_list(s, 3, 0, ids, 8, &n, &more), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert(!more);
    ck_assert_uint_eq(ids[0], 7);
    ck_assert_uint_eq(ids[1], 42);
    ck_assert_uint_eq(ids[2], UINT64_MAX);
    ck_assert_int_eq(ios_dirty_list(s, 300, 0, ids, 8, &n, &more), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(ids[0], 42);
    ck_assert_int_eq(ios_dirty_list(s, 4, 0, ids, 8, &n, &more), 0);
    ck_assert_uint_eq(n, 0);
    /* paging */
    ck_assert_int_eq(ios_dirty_list(s, 3, 0, ids, 1, &n, &more), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert(more);
    ck_assert_int_eq(ios_dirty_list(s, 3, ids[0] + 1, ids, 8, &n, &more), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(ids[0], 42);
    /* clear: only a claimed record goes */
    bool kept;
    ck_assert_int_eq(ios_dirty_clear(s, 3, 42, &kept), 0);
    ck_assert(kept); /* never claimed */
    ck_assert_int_eq(ios_dirty_claim(s, 3, 42), 0);
    ck_assert_int_eq(ios_dirty_clear(s, 3, 42, &kept), 0);
    ck_assert(!kept);
    ck_assert_int_eq(ios_dirty_clear(s, 3, 42, &kept), 0); /* absent is fine */
    ck_assert(!kept);
    ck_assert_int_eq(ios_dirty_list(s, 3, 0, ids, 8, &n, &more), 0);
    ck_assert_uint_eq(n, 2);
    ios_state_close(s);
}
END_TEST

/* A write that records (S, F) while a rejoin rebuilds F (after its claim)
 * keeps the record: the rejoin's clear must not swallow it. */
START_TEST(dirty_record_added_after_claim_survives_clear)
{
    ios_state *s;
    char err[256];
    ck_assert_int_eq(ios_state_open(tmpdir, &s, err, sizeof(err)), 0);
    const uint32_t down[1] = { 5 };
    bool kept;
    ck_assert_int_eq(ios_dirty_add(s, down, 1, 9), 0);
    ck_assert_int_eq(ios_dirty_claim(s, 5, 9), 0);
    ck_assert_int_eq(ios_dirty_add(s, down, 1, 9), 0); /* the racing write */
    ck_assert_int_eq(ios_dirty_clear(s, 5, 9, &kept), 0);
    ck_assert(kept);
    uint64_t ids[4];
    size_t n;
    bool more;
    ck_assert_int_eq(ios_dirty_list(s, 5, 0, ids, 4, &n, &more), 0);
    ck_assert_uint_eq(n, 1);
    /* claimed records still count for a probe (the unit is not trusted yet) */
    ck_assert_int_eq(ios_dirty_claim(s, 5, 9), 0);
    const uint32_t probe[3] = { 4, 5, 6 };
    uint32_t found[3];
    ck_assert_int_eq(ios_dirty_probe(s, 9, probe, 3, found, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(found[0], 5);
    ck_assert_int_eq(ios_dirty_clear(s, 5, 9, &kept), 0);
    ck_assert(!kept);
    ck_assert_int_eq(ios_dirty_probe(s, 9, probe, 3, found, &n), 0);
    ck_assert_uint_eq(n, 0);
    ios_state_close(s);
}
END_TEST

/* A lock's reply names the servers with a record for the file
 * (ios_dirty_servers_of): counted at open, kept through claims and
 * re-records, dropped with the clear, and nothing for other files. */
START_TEST(dirty_servers_of_a_file)
{
    ios_state *s;
    char err[256];
    uint32_t found[4];
    size_t n;
    bool kept;
    ck_assert_int_eq(ios_state_open(tmpdir, &s, err, sizeof(err)), 0);
    ck_assert_int_eq(ios_dirty_servers_of(s, 9, found, 4, &n), 0);
    ck_assert_uint_eq(n, 0);
    const uint32_t down[3] = { 5, 7, 5 }; /* one named twice */
    ck_assert_int_eq(ios_dirty_add(s, down, 3, 9), 0);
    ck_assert_int_eq(ios_dirty_add(s, down, 1, 11), 0);
    ios_state_close(s);

    ck_assert_int_eq(ios_state_open(tmpdir, &s, err, sizeof(err)), 0);
    ck_assert_int_eq(ios_dirty_servers_of(s, 9, found, 4, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert(found[0] + found[1] == 12 && (found[0] == 5 || found[0] == 7));
    ck_assert_int_eq(ios_dirty_servers_of(s, 10, found, 4, &n), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(ios_dirty_servers_of(s, 9, found, 1, &n), -EOVERFLOW);
    /* claimed, then recorded again: still named; cleared: gone */
    ck_assert_int_eq(ios_dirty_claim(s, 5, 9), 0);
    ck_assert_int_eq(ios_dirty_add(s, down, 1, 9), 0);
    ck_assert_int_eq(ios_dirty_clear(s, 5, 9, &kept), 0);
    ck_assert(kept);
    ck_assert_int_eq(ios_dirty_servers_of(s, 9, found, 4, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(ios_dirty_claim(s, 5, 9), 0);
    ck_assert_int_eq(ios_dirty_clear(s, 5, 9, &kept), 0);
    ck_assert_int_eq(ios_dirty_servers_of(s, 9, found, 4, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(found[0], 7);
    ck_assert_int_eq(ios_dirty_servers_of(s, 11, found, 4, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(found[0], 5);
    ck_assert_int_eq(ios_dirty_claim(s, 7, 9), 0);
    ck_assert_int_eq(ios_dirty_clear(s, 7, 9, &kept), 0);
    ck_assert_int_eq(ios_dirty_claim(s, 5, 11), 0);
    ck_assert_int_eq(ios_dirty_clear(s, 5, 11, &kept), 0);
    ck_assert_int_eq(ios_dirty_servers_of(s, 9, found, 4, &n), 0);
    ck_assert_uint_eq(n, 0);
    ios_state_close(s);
}
END_TEST

static void intent_collect(void *arg, uint64_t file_id, uint64_t client, uint64_t op,
                           uint64_t first, uint64_t end, bool writes)
{
    uint64_t *v = arg;
    v[0]++;
    v[1] = file_id;
    v[2] = client;
    v[3] = op;
    v[4] = first;
    v[5] = end;
    v[6] = writes;
}

/* Lock intents outlive the process with their mode; a released one is gone. */
START_TEST(lock_intents_persist)
{
    ios_state *s;
    char err[256];
    ck_assert_int_eq(ios_state_open(tmpdir, &s, err, sizeof(err)), 0);
    ck_assert_int_eq(ios_intent_set(s, 77, 3, 4, true, 10, 20, false), 0);
    ck_assert_int_eq(ios_intent_set(s, 78, 3, 5, true, 0, 1, true), 0);
    ck_assert_int_eq(ios_intent_set(s, 78, 3, 5, false, 0, 0, false), 0);
    ios_state_close(s);
    ck_assert_int_eq(ios_state_open(tmpdir, &s, err, sizeof(err)), 0);
    uint64_t v[7] = {0};
    ck_assert_int_eq(ios_intent_each(s, intent_collect, v), 1);
    ck_assert_uint_eq(v[0], 1);
    ck_assert_uint_eq(v[1], 77);
    ck_assert_uint_eq(v[2], 3);
    ck_assert_uint_eq(v[3], 4);
    ck_assert_uint_eq(v[4], 10);
    ck_assert_uint_eq(v[5], 20);
    ck_assert_uint_eq(v[6], 0); /* a reader's */
    ck_assert_int_eq(ios_intent_set(s, 77, 3, 4, true, 10, 20, true), 0);
    memset(v, 0, sizeof v);
    ck_assert_int_eq(ios_intent_each(s, intent_collect, v), 1);
    ck_assert_uint_eq(v[6], 1);
    ios_state_close(s);
}
END_TEST

/* An intent stored before lock modes (16 bytes: the span alone) came from
 * a writer's lock: it is restored as a writing one. */
START_TEST(lock_intents_without_mode_write)
{
    char path[PATH_MAX], err[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, IOS_STATE_SUBDIR);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    kvstore *kv;
    ck_assert_int_eq(kv_open(path, true, &kv, err, sizeof err), 0);
    uint8_t key[25] = { 'L' }, val[16] = {0};
    key[8] = 9;   /* be64 file 9 */
    key[16] = 2;  /* be64 client 2 */
    key[24] = 31; /* be64 op 31 */
    val[0] = 5;   /* le64 first 5 */
    val[8] = 6;   /* le64 end 6 */
    ck_assert_int_eq(kv_put(kv, key, sizeof key, val, sizeof val), 0);
    kv_close(kv);
    ios_state *s;
    ck_assert_int_eq(ios_state_open(tmpdir, &s, err, sizeof(err)), 0);
    uint64_t v[7] = {0};
    ck_assert_int_eq(ios_intent_each(s, intent_collect, v), 1);
    ck_assert_uint_eq(v[1], 9);
    ck_assert_uint_eq(v[2], 2);
    ck_assert_uint_eq(v[3], 31);
    ck_assert_uint_eq(v[4], 5);
    ck_assert_uint_eq(v[5], 6);
    ck_assert_uint_eq(v[6], 1);
    ios_state_close(s);
}
END_TEST

/* ------------------------------------------------------------- handlers */
static ios_ctx hctx;

static void hsetup(void)
{
    char err[256];
    setup();
    memset(&hctx, 0, sizeof(hctx));
    hctx.server_id = 1;
    hctx.strips = st;
    hctx.max_bulk_bytes = MAX_BULK_BYTES;
    hctx.lock_lease_ms = 0;
    ck_assert_int_eq(ios_locks_create(0, &hctx.locks), 0);
    ck_assert_int_eq(ios_state_open(tmpdir, &hctx.state, err, sizeof(err)), 0);
}

static void hteardown(void)
{
    ios_locks_free(hctx.locks);
    ios_state_close(hctx.state);
    teardown();
}

/* A request under construction. */
typedef struct req {
    Depfs__IoRequest q;
    Depfs__Extent ext[4];
    Depfs__Extent *extp[4];
    Depfs__LockSpec lock;
} req;

static void req_init(req *r, uint64_t file_id)
{
    depfs__io_request__init(&r->q);
    r->q.file_id = file_id;
    r->q.extents = r->extp;
    for (int i = 0; i < 4; i++) {
        depfs__extent__init(&r->ext[i]);
        r->extp[i] = &r->ext[i];
    }
    depfs__lock_spec__init(&r->lock);
}

static void req_extent(req *r, uint64_t off, uint64_t len)
{
    ck_assert_uint_lt(r->q.n_extents, 4);
    r->ext[r->q.n_extents].offset = off;
    r->ext[r->q.n_extents].length = len;
    r->q.n_extents++;
}

static void req_lock(req *r, uint64_t first, uint64_t count, uint64_t client, uint64_t op)
{
    r->lock.first_stripe = first;
    r->lock.stripe_count = count;
    r->lock.owner_client = client;
    r->lock.owner_op = op;
    r->q.lock = &r->lock;
}

/* Packs and processes; returns reply.err. */
static int run(req *r, uint16_t type, const uint8_t *bulk, size_t bulk_len, ios_result *res)
{
    size_t len = depfs__io_request__get_packed_size(&r->q);
    uint8_t *buf = malloc(len + 1);
    ck_assert_ptr_nonnull(buf);
    depfs__io_request__pack(&r->q, buf);
    ios_process(&hctx, type, buf, len, bulk, bulk_len, "test", NULL, res);
    free(buf);
    ck_assert(res->reply.has_state);
    if (res->reply.err)
        ck_assert_ptr_nonnull(res->reply.message);
    return res->reply.err;
}

static int run_free(req *r, uint16_t type, const uint8_t *bulk, size_t bulk_len)
{
    ios_result res;
    int err = run(r, type, bulk, bulk_len, &res);
    ios_result_free(&res);
    return err;
}

START_TEST(h_write_read)
{
    uint8_t w[2 * 100];
    fill(w, sizeof(w), 5);
    req r;
    req_init(&r, FILE_X);
    req_extent(&r, 0, 100);
    req_extent(&r, SU_BYTES, 100);
    r.q.has_sync = r.q.sync = 1;
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_WRITE, w, sizeof(w)), 0);

    ios_result res;
    req_init(&r, FILE_X);
    req_extent(&r, SU_BYTES, 100);
    req_extent(&r, 50, 60); /* 50 bytes of data + 10 of hole */
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_READ, NULL, 0, &res), 0);
    ck_assert_uint_eq(res.bulk_len, 160);
    ck_assert_mem_eq(res.bulk, w + 100, 100);
    ck_assert_mem_eq(res.bulk + 100, w + 50, 50);
    ck_assert(all_zero(res.bulk + 150, 10));
    ios_result_free(&res);

    req_init(&r, FILE_X);
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_STAT, NULL, 0, &res), 0);
    ck_assert(res.reply.has_local_size);
    ck_assert_uint_eq(res.reply.local_size, SU_BYTES + 100);
    ck_assert(res.reply.has_bytes_free && res.reply.has_locks_held);
    ios_result_free(&res);

    req_init(&r, FILE_X);
    r.q.has_local_size = 1;
    r.q.local_size = 10;
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_TRUNCATE, NULL, 0), 0);
    req_init(&r, FILE_X);
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_STAT, NULL, 0, &res), 0);
    ck_assert_uint_eq(res.reply.local_size, 10);
    ios_result_free(&res);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_FSYNC, NULL, 0), 0);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_REMOVE, NULL, 0), 0);
    ck_assert(!strip_exists(FILE_X));
}
END_TEST

START_TEST(h_lock_rides_on_read_unlock_on_write)
{
    ios_result res;
    req a, b;
    /* A: READ+LOCK stripes 0..1 */
    req_init(&a, FILE_X);
    req_extent(&a, 0, 64);
    req_lock(&a, 0, 2, 1, 1);
    ck_assert_int_eq(run(&a, DEPFS__IO_OP__IO_READ, NULL, 0, &res), 0);
    ck_assert_uint_eq(res.bulk_len, 64);
    ios_result_free(&res);
    /* B: READ+LOCK stripe 1 -> NACK, no data */
    req_init(&b, FILE_X);
    req_extent(&b, SU_BYTES, 64);
    req_lock(&b, 1, 1, 2, 1);
    ck_assert_int_eq(run(&b, DEPFS__IO_OP__IO_READ, NULL, 0, &res), EAGAIN);
    ck_assert_uint_eq(res.bulk_len, 0);
    ck_assert_ptr_null(res.bulk);
    ios_result_free(&res);
    ck_assert_int_eq(run_free(&b, DEPFS__IO_OP__IO_LOCK, NULL, 0), EAGAIN);
    /* B may not write under A's lock, nor unlock it */
    uint8_t w[64];
    fill(w, sizeof(w), 6);
    req_init(&b, FILE_X);
    req_extent(&b, SU_BYTES, 64);
    req_lock(&b, 1, 1, 2, 1);
    b.q.has_unlock = b.q.unlock = 1;
    ck_assert_int_eq(run_free(&b, DEPFS__IO_OP__IO_WRITE, w, sizeof(w)), EPERM);
    ck_assert_int_eq(run_free(&b, DEPFS__IO_OP__IO_UNLOCK, NULL, 0), EPERM);
    /* the recovery module may read ignoring locks */
    req_init(&b, FILE_X);
    req_extent(&b, 0, 64);
    req_lock(&b, 0, 1, 0, 0);
    b.q.has_ignore_locks = b.q.ignore_locks = 1;
    ck_assert_int_eq(run_free(&b, DEPFS__IO_OP__IO_READ, NULL, 0), 0);
    /* heartbeat with a 0 ms lease reports A's lock */
    req_init(&b, 0);
    ck_assert_int_eq(run(&b, DEPFS__IO_OP__IO_HEARTBEAT, NULL, 0, &res), 0);
    ck_assert_uint_eq(res.reply.n_stale_locks, 1);
    ck_assert_uint_eq(res.reply.stale_locks[0]->file_id, FILE_X);
    ck_assert_uint_eq(res.reply.stale_locks[0]->lock->owner_client, 1);
    ck_assert_uint_eq(res.reply.stale_locks[0]->lock->stripe_count, 2);
    ios_result_free(&res);
    /* A: WRITE+UNLOCK stores and releases */
    req_init(&a, FILE_X);
    req_extent(&a, SU_BYTES, 64);
    req_lock(&a, 0, 2, 1, 1);
    a.q.has_unlock = a.q.unlock = 1;
    ck_assert_int_eq(run_free(&a, DEPFS__IO_OP__IO_WRITE, w, sizeof(w)), 0);
    req_init(&b, FILE_X);
    req_lock(&b, 0, 2, 2, 1);
    ck_assert_int_eq(run_free(&b, DEPFS__IO_OP__IO_LOCK, NULL, 0), 0);
    ck_assert_int_eq(run_free(&b, DEPFS__IO_OP__IO_UNLOCK, NULL, 0), 0);
    req_init(&b, 0);
    ck_assert_int_eq(run(&b, DEPFS__IO_OP__IO_STAT, NULL, 0, &res), 0);
    ck_assert_uint_eq(res.reply.locks_held, 0);
    ck_assert_uint_eq(res.reply.locks_granted, 2);
    ck_assert_uint_eq(res.reply.locks_nacked, 2);
    ck_assert(!res.reply.has_local_size);
    ios_result_free(&res);
    /* REMOVE drops the file's locks */
    req_init(&a, FILE_X);
    req_lock(&a, 0, 2, 1, 2);
    ck_assert_int_eq(run_free(&a, DEPFS__IO_OP__IO_LOCK, NULL, 0), 0);
    ck_assert_int_eq(run_free(&a, DEPFS__IO_OP__IO_REMOVE, NULL, 0), 0);
    req_init(&b, FILE_X);
    req_lock(&b, 0, 2, 2, 2);
    ck_assert_int_eq(run_free(&b, DEPFS__IO_OP__IO_LOCK, NULL, 0), 0);
}
END_TEST

START_TEST(h_dirty_records_and_rebuild)
{
    ios_result res;
    req r;
    uint8_t w[8] = { 1 };
    const uint32_t down[2] = { 4, 6 };
    for (uint64_t f = 10; f < 13; f++) {
        req_init(&r, f);
        req_extent(&r, 0, sizeof(w));
        r.q.down_servers = (uint32_t *)down;
        r.q.n_down_servers = 2;
        ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_WRITE, w, sizeof(w)), 0);
    }
    req_init(&r, 0);
    r.q.has_local_size = 1;
    r.q.local_size = 4;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_DIRTY, NULL, 0, &res), 0);
    ck_assert_uint_eq(res.reply.n_dirty_files, 3);
    ck_assert_uint_eq(res.reply.dirty_files[0], 10);
    ck_assert_uint_eq(res.reply.dirty_files[2], 12);
    ck_assert(!res.reply.has_local_size);
    ios_result_free(&res);
    /* clear (4, 11): refused until claimed, then gone */
    req_init(&r, 11);
    r.q.has_local_size = 1;
    r.q.local_size = 4;
    r.q.has_unlock = r.q.unlock = 1;
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_DIRTY, NULL, 0), EAGAIN);
    req_init(&r, 11);
    r.q.has_local_size = 1;
    r.q.local_size = 4;
    r.q.has_dirty_action = 1;
    r.q.dirty_action = DEPFS__DIRTY_ACTION__DIRTY_CLAIM;
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_DIRTY, NULL, 0), 0);
    req_init(&r, 11);
    r.q.has_local_size = 1;
    r.q.local_size = 4;
    r.q.has_dirty_action = 1;
    r.q.dirty_action = DEPFS__DIRTY_ACTION__DIRTY_CLEAR;
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_DIRTY, NULL, 0), 0);
    /* probe: which of 4, 5, 6 have (S, 12) */
    const uint32_t probe[3] = { 4, 5, 6 };
    req_init(&r, 12);
    r.q.has_dirty_action = 1;
    r.q.dirty_action = DEPFS__DIRTY_ACTION__DIRTY_PROBE;
    r.q.down_servers = (uint32_t *)probe;
    r.q.n_down_servers = 3;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_DIRTY, NULL, 0, &res), 0);
    ck_assert_uint_eq(res.reply.n_dirty_files, 2);
    ck_assert_uint_eq(res.reply.dirty_files[0], 4);
    ck_assert_uint_eq(res.reply.dirty_files[1], 6);
    ios_result_free(&res);
    req_init(&r, 0);
    r.q.has_local_size = 1;
    r.q.local_size = 4;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_DIRTY, NULL, 0, &res), 0);
    ck_assert_uint_eq(res.reply.n_dirty_files, 2);
    ck_assert_uint_eq(res.reply.dirty_files[1], 12);
    ios_result_free(&res);
    req_init(&r, 0); /* no server named */
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_DIRTY, NULL, 0), EINVAL);

    /* REBUILDING: reported, client reads refused, rejoin via IO_DIRTY sync */
    ck_assert_int_eq(ios_state_set(hctx.state, DEPFS__SERVER_STATE__SERVER_REBUILDING), 0);
    req_init(&r, 10);
    req_extent(&r, 0, 8);
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_READ, NULL, 0, &res), EIO);
    ck_assert_uint_eq(res.reply.state, DEPFS__SERVER_STATE__SERVER_REBUILDING);
    ios_result_free(&res);
    r.q.has_ignore_locks = r.q.ignore_locks = 1;
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_READ, NULL, 0), 0);
    req_init(&r, 0);
    r.q.has_sync = r.q.sync = 1;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_DIRTY, NULL, 0, &res), 0);
    ck_assert_uint_eq(res.reply.state, DEPFS__SERVER_STATE__SERVER_UP);
    ios_result_free(&res);
}
END_TEST

START_TEST(h_bad_requests)
{
    req r;
    uint8_t w[16] = { 0 };
    /* bulk length != extents */
    req_init(&r, FILE_X);
    req_extent(&r, 0, 8);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_WRITE, w, sizeof(w)), EINVAL);
    /* extent beyond the max local size / overflowing */
    req_init(&r, FILE_X);
    req_extent(&r, IOS_MAX_LOCAL_BYTES, 1);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_READ, NULL, 0), EFBIG);
    req_init(&r, FILE_X);
    req_extent(&r, UINT64_MAX - 1, 16);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_WRITE, w, sizeof(w)), EFBIG);
    /* read larger than max bulk */
    req_init(&r, FILE_X);
    req_extent(&r, 0, MAX_BULK_BYTES);
    req_extent(&r, 0, 1);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_READ, NULL, 0), EINVAL);
    /* lock with no stripes, overflowing, missing */
    req_init(&r, FILE_X);
    req_lock(&r, 0, 0, 1, 1);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_LOCK, NULL, 0), EINVAL);
    req_lock(&r, UINT64_MAX, 2, 1, 1);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_LOCK, NULL, 0), EINVAL);
    req_init(&r, FILE_X);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_UNLOCK, NULL, 0), EINVAL);
    r.q.has_unlock = r.q.unlock = 1;
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_WRITE, NULL, 0), EINVAL);
    /* truncate without size / too large */
    req_init(&r, FILE_X);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_TRUNCATE, NULL, 0), EINVAL);
    r.q.has_local_size = 1;
    r.q.local_size = UINT64_MAX;
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_TRUNCATE, NULL, 0), EFBIG);
    /* bulk on a non-write, unknown op */
    req_init(&r, FILE_X);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_FSYNC, w, 4), EINVAL);
    ck_assert_int_eq(run_free(&r, 999, NULL, 0), EOPNOTSUPP);
    /* too many extents */
    Depfs__Extent one = DEPFS__EXTENT__INIT;
    Depfs__Extent **many = calloc(IOS_MAX_EXTENTS + 1, sizeof(*many));
    for (unsigned i = 0; i <= IOS_MAX_EXTENTS; i++)
        many[i] = &one;
    req_init(&r, FILE_X);
    r.q.extents = many;
    r.q.n_extents = IOS_MAX_EXTENTS + 1;
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_READ, NULL, 0), EINVAL);
    free(many);
    /* IO_DIRTY that is a clear (unlock) labelled a probe, without the
     * server id a clear needs: refused at the boundary (it reached the
     * handler's assertion: fuzz_ioserver's crash-dirty-probe-unlock) */
    req_init(&r, FILE_X);
    r.q.has_dirty_action = true;
    r.q.dirty_action = DEPFS__DIRTY_ACTION__DIRTY_PROBE;
    r.q.has_unlock = r.q.unlock = true;
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_DIRTY, NULL, 0), EINVAL);
    r.q.dirty_action = (Depfs__DirtyAction)77; /* no such action */
    r.q.has_unlock = r.q.unlock = false;
    r.q.has_local_size = true;
    r.q.local_size = 1;
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_DIRTY, NULL, 0), EINVAL);
    /* data_units: on a write, without a stripe unit, in no layout */
    Depfs__DataUnits du = DEPFS__DATA_UNITS__INIT;
    du.n = 8;
    du.k = 6;
    du.position = 7;
    req_init(&r, FILE_X);
    req_extent(&r, 0, 8);
    r.q.data_units = &du;
    r.q.has_stripe_unit = true;
    r.q.stripe_unit = SU_BYTES;
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_WRITE, w, 8), EINVAL);
    r.q.has_stripe_unit = false;
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_READ, NULL, 0), EINVAL);
    r.q.has_stripe_unit = true;
    const uint32_t bad_units[][3] = { { 8, 6, 8 }, { 8, 9, 0 }, { 8, 0, 0 }, { 0, 0, 0 },
                                      { LAYOUT_MAX_N + 1, 6, 0 } };
    for (size_t i = 0; i < sizeof(bad_units) / sizeof(bad_units[0]); i++) {
        du.n = bad_units[i][0];
        du.k = bad_units[i][1];
        du.position = bad_units[i][2];
        ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_READ, NULL, 0), EINVAL);
    }
    /* garbage header */
    ios_result res;
    const uint8_t junk[] = { 0xff, 0xff, 0xff, 0xff, 0x0f, 0x08 };
    ios_process(&hctx, DEPFS__IO_OP__IO_READ, junk, sizeof(junk), NULL, 0, "test", NULL, &res);
    ck_assert_int_eq(res.reply.err, EINVAL);
    ios_result_free(&res);
    ios_process(&hctx, DEPFS__IO_OP__IO_READ, junk, 0, NULL, 0, "test", NULL, &res);
    ck_assert_int_eq(res.reply.err, EINVAL); /* file_id is required */
    ios_result_free(&res);
    /* nothing was stored by any of it */
    ck_assert(!strip_exists(FILE_X));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ioserver_store");
    TCase *tc = tcase_create("strips");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, write_read_extents);
    tcase_add_test(tc, zero_fill_past_eof_and_absent);
    tcase_add_test(tc, truncate_strip);
    tcase_add_test(tc, remove_strip);
    tcase_add_test(tc, walk_beside_removals_finds_nothing_lost);
    tcase_add_test(tc, names_from_id_only);
    tcase_add_test(tc, fd_cache_is_bounded);
    tcase_add_test(tc, usage_and_fsync);
    tcase_add_test(tc, large_writes_start_writeback);
    tcase_add_test(tc, sequential_data_reads_read_ahead_no_parity);
    tcase_add_test(tc, parallel_files);
    tcase_add_test(tc, state_and_dirty_records_persist);
    tcase_add_test(tc, dirty_record_added_after_claim_survives_clear);
    tcase_add_test(tc, dirty_servers_of_a_file);
    tcase_add_test(tc, lock_intents_persist);
    tcase_add_test(tc, lock_intents_without_mode_write);
    suite_add_tcase(s, tc);
    TCase *th = tcase_create("handlers");
    tcase_add_checked_fixture(th, hsetup, hteardown);
    tcase_add_test(th, h_write_read);
    tcase_add_test(th, h_lock_rides_on_read_unlock_on_write);
    tcase_add_test(th, h_dirty_records_and_rebuild);
    tcase_add_test(th, h_bad_requests);
    suite_add_tcase(s, th);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
