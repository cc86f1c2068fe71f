/* mpiio_shared.c - DePFS MPI-IO driver test: a shared file written from every
 * rank collectively (interleaved blocks through a file view) and
 * independently (contiguous and strided), read back both ways, plus the
 * driver's own behaviour: layout reported by MPI_File_get_info, hints, label
 * errors, get/set size and preallocate; and what the write-behind hint
 * promises: with it on (the default) small writes left in each rank's client
 * are read by rank 0 in an open right after MPI_File_close (close-open, no
 * barrier of the program's own) and by a neighbour after sync-barrier-sync;
 * with it off, after a barrier alone; and the node read cache of read-only
 * opens (shared, gone with the close, none for read-write opens).
 *
 *   mpiio_shared -fname depfs@8@6:/dir/base [-n 8 -k 6] [-blocks B]
 *
 * Files left behind for the caller to check (FUSE mount, depfs scrub):
 *   BASE.coll and BASE.indep, each nprocs * blocks * BLOCK_BYTES bytes with
 *   byte o = pattern(o). Exit 0 and "PASS" on success. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_BYTES 100000      /* deliberately not stripe-aligned */
#define DEFAULT_BLOCKS 8
#define STRIDED_PIECES 16
#define PREALLOC_BYTES (5 * 1024 * 1024)
/* close-open: SMALL_PIECES pieces of SMALL_BYTES per rank, interleaved with
 * the other ranks' (each a partial stripe: its flush takes a while) */
#define SMALL_BYTES 1000
#define SMALL_PIECES 512
#define RANDOM_READS 200        /* per rank, node cache check */
#define EVICTION_MIB 40         /* a file larger than the node cache */

static int rank, nprocs, failures;

static unsigned char pattern(uint64_t off)
{
    return (unsigned char) (((off * 31u) + (off >> 11)) ^ 0x5a);
}

#define CHECK(cond, ...) do { if (!(cond)) { failures++; fprintf(stderr, "[%d] FAIL %s:%d: ", rank, __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); } } while (0)

static int mpi_ok(int rc, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (rc == MPI_SUCCESS)
        return 1;
    MPI_Error_string(rc, msg, &len);
    failures++;
    fprintf(stderr, "[%d] FAIL %s: %s\n", rank, what, msg);
    return 0;
}

static void fill(unsigned char *buf, uint64_t off, size_t len)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = pattern(off + i);
}

static size_t verify(const unsigned char *buf, uint64_t off, size_t len)
{
    size_t bad = 0;
    for (size_t i = 0; i < len; i++)
        if (buf[i] != pattern(off + i))
            bad++;
    return bad;
}

static void expect_layout(MPI_File fh, unsigned n, unsigned k, const char *what)
{
    MPI_Info info;
    char v[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    if (!mpi_ok(MPI_File_get_info(fh, &info), "get_info"))
        return;
    MPI_Info_get(info, "depfs_layout", MPI_MAX_INFO_VAL, v, &flag);
    CHECK(flag, "%s: no depfs_layout in MPI_File_get_info", what);
    if (rank == 0 && flag)
        printf("%s: layout %s\n", what, v);
    if (flag && n && k) {
        unsigned gn = 0, gk = 0, gsu = 0;
        sscanf(v, "%u@%u@%u", &gn, &gk, &gsu);
        CHECK(gn == n && gk == k, "%s: layout %s, want %u@%u", what, v, n, k);
        MPI_Info_get(info, "striping_unit", MPI_MAX_INFO_VAL, v, &flag);
        CHECK(flag && (unsigned) atoi(v) == gk * gsu, "%s: striping_unit %s != k*su", what,
              flag ? v : "(none)");
    }
    MPI_Info_free(&info);
}

/* rank r owns blocks r, r+P, r+2P, ...: one vector file view, one write_all */
static void collective_file(const char *name, int blocks, unsigned n, unsigned k)
{
    MPI_File fh;
    MPI_Datatype ftype;
    size_t bytes = (size_t) blocks * BLOCK_BYTES;
    unsigned char *buf = malloc(bytes);
    MPI_Status st;
    int count = 0;

    if (!mpi_ok(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR,
                              MPI_INFO_NULL, &fh), name))
        goto out;
    expect_layout(fh, n, k, "collective file");
    MPI_Type_vector(blocks, BLOCK_BYTES, BLOCK_BYTES * nprocs, MPI_BYTE, &ftype);
    MPI_Type_commit(&ftype);
    MPI_File_set_view(fh, (MPI_Offset) rank * BLOCK_BYTES, MPI_BYTE, ftype, "native",
                      MPI_INFO_NULL);
    for (int b = 0; b < blocks; b++)
        fill(buf + (size_t) b * BLOCK_BYTES,
             ((uint64_t) b * nprocs + rank) * BLOCK_BYTES, BLOCK_BYTES);
    mpi_ok(MPI_File_write_all(fh, buf, (int) bytes, MPI_BYTE, &st), "write_all");
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK((size_t) count == bytes, "write_all wrote %d of %zu", count, bytes);
    mpi_ok(MPI_File_sync(fh), "sync");
    MPI_Barrier(MPI_COMM_WORLD);
    mpi_ok(MPI_File_sync(fh), "sync");
    memset(buf, 0, bytes);
    mpi_ok(MPI_File_read_at_all(fh, 0, buf, (int) bytes, MPI_BYTE, &st), "read_at_all");
    size_t bad = 0;
    for (int b = 0; b < blocks; b++)
        bad += verify(buf + (size_t) b * BLOCK_BYTES,
                      ((uint64_t) b * nprocs + rank) * BLOCK_BYTES, BLOCK_BYTES);
    CHECK(bad == 0, "collective read back: %zu bad bytes", bad);
    MPI_Type_free(&ftype);
    mpi_ok(MPI_File_close(&fh), "close");
  out:
    free(buf);
}

/* rank r writes its half-region contiguously and the other half as strided
 * pieces (independent I/O), then every rank reads another rank's region */
static void independent_file(const char *name, int blocks)
{
    MPI_File fh;
    MPI_Datatype ftype;
    uint64_t region = (uint64_t) blocks * BLOCK_BYTES, base = rank * region;
    uint64_t half = region / 2, piece = (region - half) / STRIDED_PIECES;
    unsigned char *buf = malloc(region);
    MPI_Status st;

    if (!mpi_ok(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR,
                              MPI_INFO_NULL, &fh), name))
        goto out;
    fill(buf, base, region);
    mpi_ok(MPI_File_write_at(fh, (MPI_Offset) base, buf, (int) half, MPI_BYTE, &st),
           "write_at");
    /* even pieces first, odd pieces second: two strided independent writes */
    for (int pass = 0; pass < 2; pass++) {
        int nsel = STRIDED_PIECES / 2;
        MPI_Type_vector(nsel, (int) piece, (int) (2 * piece), MPI_BYTE, &ftype);
        MPI_Type_commit(&ftype);
        MPI_File_set_view(fh, (MPI_Offset) (base + half + pass * piece), MPI_BYTE, ftype,
                          "native", MPI_INFO_NULL);
        unsigned char *sel = malloc((size_t) nsel * piece);
        for (int i = 0; i < nsel; i++)
            fill(sel + (size_t) i * piece, base + half + (uint64_t) (2 * i + pass) * piece, piece);
        mpi_ok(MPI_File_write(fh, sel, (int) (nsel * piece), MPI_BYTE, &st), "strided write");
        free(sel);
        MPI_Type_free(&ftype);
    }
    /* the tail left over by the piece rounding, contiguous again */
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    uint64_t tail = half + piece * STRIDED_PIECES;
    if (tail < region)
        mpi_ok(MPI_File_write_at(fh, (MPI_Offset) (base + tail), buf + tail, (int) (region - tail),
                                 MPI_BYTE, &st), "tail write");
    /* MPI consistency: sync - barrier - sync */
    mpi_ok(MPI_File_sync(fh), "sync");
    MPI_Barrier(MPI_COMM_WORLD);
    mpi_ok(MPI_File_sync(fh), "sync");
    int peer = (rank + 1) % nprocs;
    memset(buf, 0, region);
    mpi_ok(MPI_File_read_at(fh, (MPI_Offset) (peer * region), buf, (int) region, MPI_BYTE, &st),
           "read_at");
    CHECK(verify(buf, peer * region, region) == 0, "independent read of rank %d's region", peer);

    MPI_Offset size = 0;
    mpi_ok(MPI_File_get_size(fh, &size), "get_size");
    CHECK((uint64_t) size == region * nprocs, "size %lld, want %llu", (long long) size,
          (unsigned long long) (region * nprocs));
    mpi_ok(MPI_File_close(&fh), "close");
  out:
    free(buf);
}

static MPI_File open_with_write_behind(MPI_Comm comm, const char *name, int amode,
                                       const char *write_behind)
{
    MPI_File fh = MPI_FILE_NULL;
    MPI_Info info;
    MPI_Info_create(&info);
    if (write_behind)
        MPI_Info_set(info, "depfs_write_behind", write_behind);
    if (!mpi_ok(MPI_File_open(comm, name, amode, info, &fh), "open"))
        fh = MPI_FILE_NULL;
    MPI_Info_free(&info);
    return fh;
}

/* piece p of rank r sits at ((p * nprocs) + r) * SMALL_BYTES */
static uint64_t small_off(int r, int p)
{
    return ((uint64_t) p * (uint64_t) nprocs + (uint64_t) r) * SMALL_BYTES;
}

static void write_small_pieces(MPI_File fh, int collective)
{
    unsigned char buf[SMALL_BYTES];
    MPI_Status st;
    for (int p = 0; p < SMALL_PIECES; p++) {
        uint64_t off = small_off(rank, p);
        fill(buf, off, sizeof(buf));
        int rc = collective
                     ? MPI_File_write_at_all(fh, (MPI_Offset) off, buf, SMALL_BYTES, MPI_BYTE, &st)
                     : MPI_File_write_at(fh, (MPI_Offset) off, buf, SMALL_BYTES, MPI_BYTE, &st);
        if (!mpi_ok(rc, "small write"))
            return;
    }
}

/* the pieces of rank r, read through fh; returns the bad bytes */
static size_t check_small_pieces(MPI_File fh, int r)
{
    unsigned char buf[SMALL_BYTES];
    MPI_Status st;
    size_t bad = 0;
    for (int p = 0; p < SMALL_PIECES; p++) {
        uint64_t off = small_off(r, p);
        memset(buf, 0, sizeof(buf));
        if (!mpi_ok(MPI_File_read_at(fh, (MPI_Offset) off, buf, SMALL_BYTES, MPI_BYTE, &st),
                    "small read"))
            return SMALL_BYTES;
        bad += verify(buf, off, sizeof(buf));
    }
    return bad;
}

/* Close-open: every other rank's pieces wait in its write-behind until its
 * close; rank 0, with nothing of its own to flush, opens again at once
 * (MPI_File_close is the only synchronisation) and must read them all. */
static void close_open_file(const char *name, int collective)
{
    MPI_File fh = open_with_write_behind(MPI_COMM_WORLD, name,
                                         MPI_MODE_CREATE | MPI_MODE_RDWR, "enable");
    if (fh == MPI_FILE_NULL)
        return;
    if (rank != 0 || collective) /* a collective call needs every rank */
        write_small_pieces(fh, collective);
    mpi_ok(MPI_File_close(&fh), "close");
    if (rank != 0)
        return;
    fh = open_with_write_behind(MPI_COMM_SELF, name, MPI_MODE_RDONLY, NULL);
    if (fh == MPI_FILE_NULL)
        return;
    for (int r = collective ? 0 : 1; r < nprocs; r++) {
        size_t bad = check_small_pieces(fh, r);
        CHECK(bad == 0, "%s close-open (%s): rank %d's pieces have %zu wrong bytes", name,
              collective ? "collective" : "independent", r, bad);
    }
    mpi_ok(MPI_File_close(&fh), "close");
}

/* One handle: each rank reads its neighbour's pieces, after sync-barrier-
 * sync with write-behind on, after a barrier alone with it off. */
static void neighbour_file(const char *name, const char *write_behind)
{
    int on = !strcmp(write_behind, "enable");
    MPI_File fh = open_with_write_behind(MPI_COMM_WORLD, name,
                                         MPI_MODE_CREATE | MPI_MODE_RDWR, write_behind);
    if (fh == MPI_FILE_NULL)
        return;
    write_small_pieces(fh, 0);
    if (on)
        mpi_ok(MPI_File_sync(fh), "sync");
    MPI_Barrier(MPI_COMM_WORLD);
    if (on)
        mpi_ok(MPI_File_sync(fh), "sync");
    int peer = (rank + 1) % nprocs;
    size_t bad = check_small_pieces(fh, peer);
    CHECK(bad == 0, "%s write-behind %s: rank %d's pieces have %zu wrong bytes", name,
          write_behind, peer, bad);
    mpi_ok(MPI_File_close(&fh), "close");
}

static void label_and_hint_checks(const char *dir)
{
    MPI_File fh;
    MPI_Info info;
    char name[1024], msg[MPI_MAX_ERROR_STRING];
    int rc, len = 0;

    /* malformed label: the open fails with a message naming the problem */
    snprintf(name, sizeof(name), "depfs@8@x:%s/bad", dir);
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    rc = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    CHECK(rc != MPI_SUCCESS, "open of %s succeeded", name);
    if (rc != MPI_SUCCESS) {
        MPI_Error_string(rc, msg, &len);
        CHECK(strstr(msg, "bad DePFS label") != NULL, "error for %s: %s", name, msg);
        if (rank == 0)
            printf("malformed label error: %s\n", msg);
    }
    snprintf(name, sizeof(name), "depfs@4@6:%s/bad", dir);
    rc = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    CHECK(rc != MPI_SUCCESS, "open of %s (k > n) succeeded", name);

    /* hints give the layout when the label has none */
    snprintf(name, sizeof(name), "DePFS:%s/hinted", dir);
    MPI_Info_create(&info);
    MPI_Info_set(info, "depfs_n", "4");
    MPI_Info_set(info, "depfs_k", "2");
    MPI_Info_set(info, "depfs_su", "32768");
    if (mpi_ok(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh),
               name)) {
        expect_layout(fh, 4, 2, "hinted file");
        /* set_size, get_size, preallocate */
        mpi_ok(MPI_File_set_size(fh, 123456), "set_size");
        MPI_Offset size = 0;
        mpi_ok(MPI_File_get_size(fh, &size), "get_size");
        CHECK(size == 123456, "size after set_size: %lld", (long long) size);
        mpi_ok(MPI_File_preallocate(fh, PREALLOC_BYTES), "preallocate");
        mpi_ok(MPI_File_get_size(fh, &size), "get_size");
        CHECK(size == PREALLOC_BYTES, "size after preallocate: %lld", (long long) size);
        mpi_ok(MPI_File_set_size(fh, 1000), "shrink");
        mpi_ok(MPI_File_get_size(fh, &size), "get_size");
        CHECK(size == 1000, "size after shrink: %lld", (long long) size);
        mpi_ok(MPI_File_close(&fh), "close");
    }
    /* the label wins over hints */
    snprintf(name, sizeof(name), "depfs@8@6:%s/labelled", dir);
    if (mpi_ok(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh),
               name)) {
        expect_layout(fh, 8, 6, "label over hints");
        mpi_ok(MPI_File_close(&fh), "close");
    }
    MPI_Info_free(&info);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        mpi_ok(MPI_File_delete(name, MPI_INFO_NULL), "delete");
        rc = MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
        CHECK(rc != MPI_SUCCESS, "open after delete succeeded");
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* the node read cache's size an open reports (0: none) */
static unsigned long long node_cache_bytes(MPI_File fh)
{
    MPI_Info info;
    char v[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    if (!mpi_ok(MPI_File_get_info(fh, &info), "get_info"))
        return 0;
    MPI_Info_get(info, "depfs_node_cache_bytes", MPI_MAX_INFO_VAL, v, &flag);
    MPI_Info_free(&info);
    CHECK(flag, "no depfs_node_cache_bytes in MPI_File_get_info");
    return flag ? strtoull(v, NULL, 10) : 0;
}

/* 1000 bytes at off through fh; the bytes it got */
static int read_small(MPI_File fh, uint64_t off, unsigned char *buf)
{
    MPI_Status st;
    int count = 0;
    mpi_ok(MPI_File_read_at(fh, (MPI_Offset) off, buf, SMALL_BYTES, MPI_BYTE, &st), "read_at");
    MPI_Get_count(&st, MPI_BYTE, &count);
    return count;
}

/* interleaved small reads of a fresh read-only open: every byte as written
 * (the pattern), the last piece short */
static void interleaved_small_reads(const char *name, uint64_t size)
{
    unsigned char got_buf[SMALL_BYTES];
    MPI_File fh;
    size_t bad = 0;
    int got;

    if (!mpi_ok(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), name))
        return;
    for (uint64_t i = (uint64_t) rank; i * SMALL_BYTES < size; i += (uint64_t) nprocs) {
        uint64_t off = i * SMALL_BYTES;
        uint64_t want = size - off < SMALL_BYTES ? size - off : SMALL_BYTES;
        got = read_small(fh, off, got_buf);
        CHECK((uint64_t) got == want, "node cache: read at %llu got %d of %llu bytes",
              (unsigned long long) off, got, (unsigned long long) want);
        bad += verify(got_buf, off, (size_t) (got > 0 ? got : 0));
    }
    CHECK(bad == 0, "node cache: %zu bad bytes in the interleaved reads", bad);
    mpi_ok(MPI_File_close(&fh), "close");
}

/* small reads at random offsets of a fresh read-only open (the node cache
 * serves what is in and leaves the rest to the process): every byte right */
static void random_small_reads(const char *name, uint64_t size)
{
    unsigned char got_buf[SMALL_BYTES];
    uint64_t x = 88172645463325252ull + (uint64_t) rank;
    MPI_File fh;
    size_t bad = 0;
    int got;

    if (!mpi_ok(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), name))
        return;
    for (int i = 0; i < RANDOM_READS; i++) {
        x ^= x << 13;   /* xorshift64 */
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t off = x % (size - SMALL_BYTES);
        got = read_small(fh, off, got_buf);
        CHECK(got == SMALL_BYTES, "node cache: random read at %llu got %d bytes",
              (unsigned long long) off, got);
        bad += verify(got_buf, off, (size_t) (got > 0 ? got : 0));
    }
    CHECK(bad == 0, "node cache: %zu bad bytes in the random reads", bad);
    mpi_ok(MPI_File_close(&fh), "close");
}

/* A file larger than the node cache (32 MiB), written by rank 0 and read
 * in interleaved small pieces: the chunks behind the ranks are evicted as
 * they go (a slow rank's chunk may be taken from under it), every byte
 * still right. */
static void node_cache_eviction(const char *name)
{
    const uint64_t size = (uint64_t) EVICTION_MIB << 20;
    unsigned char *buf;
    MPI_File wh;
    MPI_Status st;

    if (nprocs < 2)
        return;
    if (rank == 0) {
        buf = malloc(size);
        fill(buf, 0, size);
        if (mpi_ok(MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                                 MPI_INFO_NULL, &wh), name)) {
            mpi_ok(MPI_File_write_at(wh, 0, buf, (int) size, MPI_BYTE, &st), "write_at");
            mpi_ok(MPI_File_close(&wh), "close");
        }
        free(buf);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    interleaved_small_reads(name, size);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* What the node read cache promises (ad_depfs_node_cache.c): a read-only
 * open on one node shares what any of its processes read (a chunk rank 0
 * read comes to rank 1 as rank 0 read it, though another open changed it
 * meanwhile: a read-only handle cannot sync, MPI promises the change only
 * after close and open), the next open sees the change, small interleaved
 * and random reads give every byte right (up to the end of the file), and
 * read-write opens or the hint "disable" get no cache. */
static void node_cache_checks(const char *name)
{
    const uint64_t size = 3u << 20, changed_at = (3u << 20) / 2 + 12345;
    unsigned char *buf = malloc(size), got_buf[SMALL_BYTES];
    MPI_File fh, wh = MPI_FILE_NULL;
    MPI_Info info;
    MPI_Status st;
    size_t bad = 0;
    int got;

    if (nprocs < 2) {
        free(buf);
        return;
    }
    if (rank == 0) {
        fill(buf, 0, size);
        if (mpi_ok(MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_CREATE | MPI_MODE_RDWR,
                                 MPI_INFO_NULL, &wh), name)) {
            mpi_ok(MPI_File_write_at(wh, 0, buf, (int) size, MPI_BYTE, &st), "write_at");
            mpi_ok(MPI_File_sync(wh), "sync");
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (!mpi_ok(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), name))
        goto out;
    CHECK(node_cache_bytes(fh) > 0, "a read-only open of %d ranks on one node has no node cache",
          nprocs);
    /* shared: rank 1 gets what rank 0 read; its own client never fetched it */
    if (rank == 0) {
        got = read_small(fh, changed_at, got_buf);
        CHECK(got == SMALL_BYTES && verify(got_buf, changed_at, SMALL_BYTES) == 0,
              "node cache: first read wrong");
        memset(buf, 0xee, SMALL_BYTES);
        if (wh != MPI_FILE_NULL) {
            mpi_ok(MPI_File_write_at(wh, (MPI_Offset) changed_at, buf, SMALL_BYTES, MPI_BYTE, &st),
                   "write_at");
            mpi_ok(MPI_File_sync(wh), "sync");
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        got = read_small(fh, changed_at, got_buf);
        CHECK(got == SMALL_BYTES && verify(got_buf, changed_at, SMALL_BYTES) == 0,
              "node cache: rank 1 did not get the bytes rank 0 read (not shared)");
    }
    mpi_ok(MPI_File_close(&fh), "close");
    /* close-open: the next open sees the change */
    if (mpi_ok(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), name)) {
        got = read_small(fh, changed_at, got_buf);
        bad = 0;
        for (int i = 0; i < SMALL_BYTES; i++)
            bad += got_buf[i] != 0xee;
        CHECK(got == SMALL_BYTES && bad == 0,
              "node cache: %zu bytes as before the change in the next open", bad);
        mpi_ok(MPI_File_close(&fh), "close");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && wh != MPI_FILE_NULL) {   /* back to the pattern */
        fill(buf, changed_at, SMALL_BYTES);
        mpi_ok(MPI_File_write_at(wh, (MPI_Offset) changed_at, buf, SMALL_BYTES, MPI_BYTE, &st),
               "write_at");
        mpi_ok(MPI_File_close(&wh), "close");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    interleaved_small_reads(name, size);
    random_small_reads(name, size);

    /* none for the hint "disable", nor for a read-write open */
    MPI_Info_create(&info);
    MPI_Info_set(info, "depfs_node_cache", "disable");
    if (mpi_ok(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, info, &fh), name)) {
        CHECK(node_cache_bytes(fh) == 0, "node cache despite depfs_node_cache=disable");
        mpi_ok(MPI_File_close(&fh), "close");
    }
    MPI_Info_free(&info);
    if (mpi_ok(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh), name)) {
        CHECK(node_cache_bytes(fh) == 0, "node cache on a read-write open");
        mpi_ok(MPI_File_close(&fh), "close");
    }
  out:
    if (wh != MPI_FILE_NULL)
        MPI_File_close(&wh);
    free(buf);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    const char *fname = NULL;
    unsigned n = 0, k = 0;
    int blocks = DEFAULT_BLOCKS, total = 0;
    char name[1024], dir[1024];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-fname"))
            fname = argv[i + 1];
        else if (!strcmp(argv[i], "-n"))
            n = (unsigned) atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-k"))
            k = (unsigned) atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-blocks"))
            blocks = atoi(argv[i + 1]);
    }
    if (!fname || blocks < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: %s -fname depfs@N@K:/dir/base [-n N -k K] [-blocks B]\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    snprintf(name, sizeof(name), "%s.coll", fname);
    collective_file(name, blocks, n, k);
    snprintf(name, sizeof(name), "%s.indep", fname);
    independent_file(name, blocks);
    snprintf(name, sizeof(name), "%s.closeopen-indep", fname);
    close_open_file(name, 0);
    snprintf(name, sizeof(name), "%s.closeopen-coll", fname);
    close_open_file(name, 1);
    snprintf(name, sizeof(name), "%s.wb-on", fname);
    neighbour_file(name, "enable");
    snprintf(name, sizeof(name), "%s.wb-off", fname);
    neighbour_file(name, "disable");
    snprintf(name, sizeof(name), "%s.node-cache", fname);
    node_cache_checks(name);
    snprintf(name, sizeof(name), "%s.node-cache-big", fname);
    node_cache_eviction(name);
    /* the directory of base, in DePFS terms */
    const char *path = strchr(fname, ':') ? strchr(fname, ':') + 1 : fname;
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    label_and_hint_checks(dir);

    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %d ranks, %d failures\n", total ? "FAIL" : "PASS", nprocs, total);
    MPI_Finalize();
    return total ? 1 : 0;
}
