/* ad_depfs_stripe_gather.c - MPI_File_sync and a collective close: the
 * pieces of stripes that the processes' write-behinds hold in part go to
 * one process per stripe, which writes each such stripe once.
 *
 * Why: every process is a libdepfs client of its own. Small independent
 * writes interleaved across the processes (1000-byte records, IO500's
 * ior-hard) leave each client holding a few bytes of every stripe; flushed
 * by each client, every stripe is read-modify-written once per process,
 * one after the other under its lock, each pre-reading what the others
 * wrote. The mount's single client gathers them into whole stripes. Sync
 * and close are collective, so there the processes can do the same:
 *   1. each writes out the stripes it holds whole and hands over the rest
 *      (depfs_flush_hand_partial);
 *   2. they agree on the stripes held in part by anyone, cut them into one
 *      contiguous range per process (a write round locks from its first
 *      stripe to its last: owners of interleaved stripes would meet in
 *      each other's ranges), and send each piece to its stripe's owner;
 *   3. each owner writes what it got (depfs_write_pieces), touching pieces
 *      joined: a stripe they cover whole needs no pre-read, and no two
 *      processes write one stripe;
 *   4. they agree on the outcome: every process reports a failure of any
 *      (its bytes may be among those that failed), and none goes on
 *      (to commit its size, or past the close) before every piece landed.
 * MPI's rules hold: a process's writes need to be visible to the others
 * only after the sync (or the close), and by then they have landed.
 * Overlapping writes of two processes are undefined in MPI outside atomic
 * mode, and atomic mode writes through (nothing is held then); where
 * pieces overlap, one process's bytes win each byte.
 * Collective over fd->comm; only where every process holds the file open
 * and wants it (file->gather, agreed at the open: hint depfs_stripe_gather).
 * Its "auto" (the default) wants it unless a node runs more of the job's
 * processes than it has CPUs: MPI's collective calls wait by spinning, so
 * there the processes that reach the sync first spin against the late
 * ones' writes and the servers for the CPUs, and every process waits for
 * the last before it flushes (measured in docs/BENCH-RESULTS.md: slower
 * with 4 processes on 2 CPUs, faster with 2).
 * Four collective calls when anything is held (the agreement, the counts,
 * the pieces, the outcome), one when nothing is: on a node with more
 * processes than cores each collective call costs a scheduler slice. When
 * the pieces of all processes together do not fit MPI's int counts, every
 * process writes its own instead. Buffers come from ADIOI_Malloc, which
 * ends the job when memory runs out, as ROMIO's own two-phase I/O does. */
#include "ad_depfs.h"
#include "adioi.h"
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* what the processes agree on first (agree_fn): whether anyone holds a
 * piece, the first and last stripe held in part anywhere, all pieces'
 * bytes with their headers */
enum { AGREE_ANY, AGREE_FIRST, AGREE_LAST, AGREE_BYTES, AGREE_N };

/* a piece's header in the stream to its owner (its bytes follow the headers) */
typedef struct piece_hdr {
    uint64_t off, len;
} piece_hdr;

/* a received piece: data points into the receive stream */
typedef struct gather_piece {
    uint64_t off, len;
    const uint8_t *data;
    int src;
} gather_piece;

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* MPI_Op of the agreement, over *len agreements of AGREE_N int64 each:
 * max, min, max, sum. A process's byte count is at most INT_MAX + 1, so
 * the sum cannot overflow. */
static void agree_fn(void *in, void *inout, int *len, MPI_Datatype *type)
{
    const int64_t *a = in;
    int64_t *b = inout;
    (void) type;
    for (int e = 0; e < *len; e++, a += AGREE_N, b += AGREE_N) {
        b[AGREE_ANY] = max64(a[AGREE_ANY], b[AGREE_ANY]);
        b[AGREE_FIRST] = min64(a[AGREE_FIRST], b[AGREE_FIRST]);
        b[AGREE_LAST] = max64(a[AGREE_LAST], b[AGREE_LAST]);
        b[AGREE_BYTES] += a[AGREE_BYTES];
    }
}

/* The agreement's type and op, made at the first gather of the process
 * (and never freed: MPI_Finalize does). A failure is MPI's error, fatal by
 * default, as for the collective calls. */
static void agree_type(MPI_Datatype *type, MPI_Op *op)
{
    static MPI_Datatype t = MPI_DATATYPE_NULL;
    static MPI_Op o = MPI_OP_NULL;
    if (t == MPI_DATATYPE_NULL) {
        MPI_Type_contiguous(AGREE_N, MPI_INT64_T, &t);
        MPI_Type_commit(&t);
        MPI_Op_create(agree_fn, 1, &o);
    }
    *type = t;
    *op = o;
}

static int by_offset(const void *a, const void *b)
{
    const gather_piece *x = a, *y = b;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    return x->src < y->src ? -1 : x->src > y->src;
}

/* Writes the received pieces, touching and overlapping ones joined into
 * one (in source order where they overlap). 0 or negative errno. */
static int write_received(ADIOI_DEPFS_File *file, gather_piece *got, size_t n)
{
    depfs_piece *spans;
    size_t ns = 0, i = 0;
    int rc;

    if (n == 0)
        return 0;
    spans = ADIOI_Malloc(n * sizeof(*spans));
    qsort(got, n, sizeof(*got), by_offset);
    while (i < n) {
        uint64_t start = got[i].off, end = got[i].off + got[i].len;
        size_t j = i + 1;
        while (j < n && got[j].off <= end) {
            if (got[j].off + got[j].len > end)
                end = got[j].off + got[j].len;
            j++;
        }
        uint8_t *data = ADIOI_Malloc(end - start);
        for (size_t q = i; q < j; q++)
            memcpy(data + (got[q].off - start), got[q].data, got[q].len);
        spans[ns++] = (depfs_piece) {.off = start, .len = end - start, .data = data};
        i = j;
    }
    rc = depfs_write_pieces(file->fh, spans, ns);
    for (size_t k = 0; k < ns; k++)
        ADIOI_Free(spans[k].data);
    ADIOI_Free(spans);
    return rc;
}

/* Per destination: the pieces and the bytes of the stream (headers, then
 * the pieces' bytes), and the streams' places in one buffer. */
typedef struct gather_counts {
    int *n;                     /* [2 * nprocs]: pieces, stream bytes */
    int *bytes, *at;            /* [nprocs]: stream bytes, displacement */
} gather_counts;

static void counts_init(gather_counts *c, int nprocs)
{
    c->n = ADIOI_Calloc((size_t) nprocs * 2, sizeof(int));
    c->bytes = ADIOI_Calloc((size_t) nprocs, sizeof(int));
    c->at = ADIOI_Calloc((size_t) nprocs, sizeof(int));
}

static void counts_free(gather_counts *c)
{
    ADIOI_Free(c->n);
    ADIOI_Free(c->bytes);
    ADIOI_Free(c->at);
}

/* bytes[] and at[] from n[]; the total (below INT_MAX: agreed) */
static size_t counts_place(gather_counts *c, int nprocs)
{
    size_t total = 0;
    for (int p = 0; p < nprocs; p++) {
        c->bytes[p] = c->n[2 * p + 1];
        c->at[p] = (int) total;
        total += (size_t) c->bytes[p];
    }
    return total;
}

/* Steps 2-3: each piece to the owner of its stripe, and the owner's write
 * of what it got. The stripes first..last go to the processes in nprocs
 * contiguous ranges. */
static int exchange(ADIO_File fd, ADIOI_DEPFS_File *file, const depfs_piece *mine, size_t nmine,
                    uint64_t sb, uint64_t first, uint64_t last)
{
    int nprocs, rc = 0;
    gather_counts snd, rcv;
    uint64_t per;
    size_t sbytes, rbytes, ngot = 0;
    uint8_t *sbuf, *rbuf;
    gather_piece *got;

    MPI_Comm_size(fd->comm, &nprocs);
    per = (last - first) / (uint64_t) nprocs + 1;     /* stripes per owner */
    counts_init(&snd, nprocs);
    counts_init(&rcv, nprocs);
    for (size_t i = 0; i < nmine; i++) {
        int to = (int) ((mine[i].off / sb - first) / per);
        snd.n[2 * to]++;
        snd.n[2 * to + 1] += (int) (sizeof(piece_hdr) + mine[i].len);
    }
    MPI_Alltoall(snd.n, 2, MPI_INT, rcv.n, 2, MPI_INT, fd->comm);
    sbytes = counts_place(&snd, nprocs);
    rbytes = counts_place(&rcv, nprocs);
    sbuf = ADIOI_Malloc(sbytes + 1);
    rbuf = ADIOI_Malloc(rbytes + 1);
    /* pieces are ascending and owners follow the stripes: each owner's
     * pieces are one run of mine, in order */
    for (size_t i = 0; i < nmine;) {
        int to = (int) ((mine[i].off / sb - first) / per);
        uint8_t *h = sbuf + snd.at[to], *d = h + (size_t) snd.n[2 * to] * sizeof(piece_hdr);
        for (int k = 0; k < snd.n[2 * to]; k++, i++) {
            piece_hdr ph = {.off = mine[i].off, .len = mine[i].len};
            memcpy(h + (size_t) k * sizeof(ph), &ph, sizeof(ph));
            memcpy(d, mine[i].data, mine[i].len);
            d += mine[i].len;
        }
    }
    MPI_Alltoallv(sbuf, snd.bytes, snd.at, MPI_BYTE, rbuf, rcv.bytes, rcv.at, MPI_BYTE, fd->comm);
    for (int p = 0; p < nprocs; p++)
        ngot += (size_t) rcv.n[2 * p];
    got = ADIOI_Malloc((ngot ? ngot : 1) * sizeof(*got));
    ngot = 0;
    for (int p = 0; p < nprocs && rc == 0; p++) {
        const uint8_t *h = rbuf + rcv.at[p], *end = h + rcv.bytes[p];
        size_t hdr_bytes = (size_t) rcv.n[2 * p] * sizeof(piece_hdr);
        const uint8_t *d = h + hdr_bytes;
        if (hdr_bytes > (size_t) rcv.bytes[p])
            rc = -EPROTO;       /* a stream that disagrees with its counts */
        for (int k = 0; k < rcv.n[2 * p] && rc == 0; k++) {
            piece_hdr ph;
            memcpy(&ph, h + (size_t) k * sizeof(ph), sizeof(ph));
            if (ph.len > (uint64_t) (end - d)) {
                rc = -EPROTO;
                break;
            }
            got[ngot++] = (gather_piece) {.off = ph.off, .len = ph.len, .data = d, .src = p};
            d += ph.len;
        }
    }
    if (rc == 0)
        rc = write_received(file, got, ngot);
    ADIOI_Free(got);
    ADIOI_Free(rbuf);
    ADIOI_Free(sbuf);
    counts_free(&rcv);
    counts_free(&snd);
    return rc;
}

/* MPICH's launcher (hydra) tells each process how many of the job's run
 * on its node; without it (another launcher) the answer is unknown. */
#define LOCAL_RANKS_ENV "MPI_LOCALNRANKS"

int ADIOI_DEPFS_Gather_pays(void)
{
    const char *env = getenv(LOCAL_RANKS_ENV);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    char *end;
    long local;

    if (!env || cpus <= 0)
        return 1;
    errno = 0;
    local = strtol(env, &end, 10);
    if (errno || end == env || *end || local <= 0)
        return 1;
    return local <= cpus;
}

int ADIOI_DEPFS_Stripe_gather(ADIO_File fd, ADIOI_DEPFS_File *file)
{
    uint64_t sb = (uint64_t) file->layout.k * file->layout.stripe_unit;
    int64_t local[AGREE_N] = {0, INT64_MAX, -1, 0}, agreed[AGREE_N];
    depfs_piece *mine = NULL;
    size_t nmine = 0;
    int rc, xrc, all_rc = 0;
    MPI_Datatype type;
    MPI_Op op;

    /* step 1 */
    rc = depfs_flush_hand_partial(file->fh, &mine, &nmine);
    if (nmine) {
        int64_t bytes = 0;
        for (size_t i = 0; i < nmine && bytes <= INT_MAX; i++)
            bytes += (int64_t) (sizeof(piece_hdr) + mine[i].len);
        local[AGREE_ANY] = 1;
        local[AGREE_FIRST] = (int64_t) (mine[0].off / sb);
        local[AGREE_LAST] = (int64_t) (mine[nmine - 1].off / sb);
        local[AGREE_BYTES] = bytes <= INT_MAX ? bytes : (int64_t) INT_MAX + 1;
    }
    agree_type(&type, &op);
    MPI_Allreduce(local, agreed, 1, type, op, fd->comm);
    if (!agreed[AGREE_ANY])
        return rc;      /* nothing handed anywhere: each flushed its own */
    if (agreed[AGREE_BYTES] > INT_MAX)  /* MPI's int counts: each writes its own */
        xrc = depfs_write_pieces(file->fh, mine, nmine);
    else    /* steps 2-3 */
        xrc = exchange(fd, file, mine, nmine, sb, (uint64_t) agreed[AGREE_FIRST],
                       (uint64_t) agreed[AGREE_LAST]);
    depfs_pieces_free(mine, nmine);
    if (rc == 0)
        rc = xrc;
    /* step 4 */
    MPI_Allreduce(&rc, &all_rc, 1, MPI_INT, MPI_MIN, fd->comm);
    return all_rc;
}
