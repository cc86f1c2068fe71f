/* mpiio_bench.c - shared-file MPI-IO throughput, the program behind
 * tests/bench/bench-mpiio: the same binary runs on the DePFS driver
 * (depfs@8@6:/...) and on ROMIO's ufs: driver over the FUSE mount.
 *
 *   mpiio_bench -fname NAME -op write|read [-mib TOTAL | -segments S]
 *               [-xfer MIB | -xferb BYTES] [-indep] [-contig] [-shift]
 *               [-hint KEY=VALUE]...
 *
 * Pattern (IOR's N-1 strided checkpoint, and IO500's ior-hard with -xferb
 * 47008): TOTAL MiB (or S x nprocs blocks) in blocks of XFER MiB (BYTES);
 * block b of the file is written (read) by rank b % nprocs, in call
 * b / nprocs of that rank, so every call of all ranks together covers one
 * contiguous nprocs x XFER region. -contig (IO500's ior-easy on a shared
 * file): each rank's blocks are one contiguous region of the file instead.
 * -shift (IOR -C, reads only): every rank reads the blocks its neighbour
 * rank + 1 wrote, so no client reads back what it cached while writing.
 * Collective calls (MPI_File_write_at_all / read_at_all) by default,
 * -indep for MPI_File_write_at / read_at.
 *
 * Timing (max over ranks, open not included): write = first write call to
 * the end of MPI_File_sync + MPI_File_close; read = first read call to the
 * last one finished (the caller drops the page cache before). Content: each
 * 4 KiB page of the file holds its file offset in its first 8 bytes and a
 * fixed pseudo-random body, so stamping a page-aligned block costs one
 * store per page (an unaligned one is copied from the template at its
 * offset) and a read checks every byte. Rank 0 prints one line:
 *   RESULT op=write mode=coll np=4 bytes=N secs=S mbps=M
 * and the read prints "PASS" (exit 0) only if every page matched. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024ull * 1024ull)
#define PAGE_BYTES 4096u
#define DEFAULT_TOTAL_MIB 1024u
#define DEFAULT_XFER_MIB 4u
#define MAX_HINTS 16
#define BODY_SEED 0x9e3779b97f4a7c15ull

static int rank, nprocs;

struct opts {
    const char *fname, *op;
    unsigned long long total, xfer, segments;
    int indep, contig, shift;
    int nhints;
    char *hints[MAX_HINTS];
};

static void usage_die(const char *why)
{
    if (rank == 0)
        fprintf(stderr, "mpiio_bench: %s\nusage: mpiio_bench -fname NAME -op write|read "
                "[-mib TOTAL] [-xfer MIB] [-indep] [-hint KEY=VALUE]...\n", why);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void parse(int argc, char **argv, struct opts *o)
{
    memset(o, 0, sizeof(*o));
    o->total = DEFAULT_TOTAL_MIB * MIB;
    o->xfer = DEFAULT_XFER_MIB * MIB;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-indep") || !strcmp(a, "-contig") || !strcmp(a, "-shift")) {
            *(!strcmp(a, "-indep") ? &o->indep : !strcmp(a, "-contig") ? &o->contig : &o->shift) = 1;
            continue;
        }
        if (!v)
            usage_die("option without a value");
        if (!strcmp(a, "-fname"))
            o->fname = v;
        else if (!strcmp(a, "-op"))
            o->op = v;
        else if (!strcmp(a, "-mib"))
            o->total = strtoull(v, NULL, 10) * MIB;
        else if (!strcmp(a, "-xfer"))
            o->xfer = strtoull(v, NULL, 10) * MIB;
        else if (!strcmp(a, "-xferb"))
            o->xfer = strtoull(v, NULL, 10);
        else if (!strcmp(a, "-segments"))
            o->segments = strtoull(v, NULL, 10);
        else if (!strcmp(a, "-hint") && o->nhints < MAX_HINTS && strchr(v, '='))
            o->hints[o->nhints++] = argv[i + 1];
        else
            usage_die("unknown option or bad value");
        i++;
    }
    if (!o->fname || !o->op || (strcmp(o->op, "write") && strcmp(o->op, "read")))
        usage_die("need -fname and -op write|read");
    if (o->xfer == 0 || o->xfer > INT32_MAX)
        usage_die("XFER must be 1 byte .. 2 GiB");
    if (o->segments)
        o->total = o->segments * (unsigned) nprocs * o->xfer;
    if (o->total == 0 || o->total % (o->xfer * (unsigned) nprocs))
        usage_die("TOTAL must be a multiple of nprocs x XFER");
}

static MPI_Info make_info(const struct opts *o)
{
    MPI_Info info;
    MPI_Info_create(&info);
    for (int i = 0; i < o->nhints; i++) {
        char *eq = strchr(o->hints[i], '=');
        *eq = '\0';
        MPI_Info_set(info, o->hints[i], eq + 1);
        *eq = '=';
    }
    return info;
}

/* the fixed body every page shares (xorshift, same on all ranks) */
static void fill_template(unsigned char *page)
{
    uint64_t x = BODY_SEED;
    for (unsigned i = 0; i < PAGE_BYTES; i += sizeof(x)) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(page + i, &x, sizeof(x));
    }
}

static void build_block(unsigned char *buf, const unsigned char *tmpl, size_t len)
{
    for (size_t p = 0; p < len; p += PAGE_BYTES)
        memcpy(buf + p, tmpl, len - p < PAGE_BYTES ? len - p : PAGE_BYTES);
}

static void stamp(unsigned char *buf, uint64_t off, size_t len)
{
    for (size_t p = 0; p < len; p += PAGE_BYTES) {
        uint64_t at = off + p;
        memcpy(buf + p, &at, sizeof(at));
    }
}

static int page_aligned(uint64_t off, size_t len)
{
    return off % PAGE_BYTES == 0 && len % PAGE_BYTES == 0;
}

/* buf = what the file holds at [off, off+len), whatever the alignment */
static void fill_at(unsigned char *buf, const unsigned char *tmpl, uint64_t off, size_t len)
{
    for (size_t i = 0; i < len;) {
        uint64_t x = off + i, page = x - x % PAGE_BYTES;
        size_t in = (size_t)(x % PAGE_BYTES), n = PAGE_BYTES - in;
        if (n > len - i)
            n = len - i;
        unsigned char st[sizeof(page)]; /* the page's offset stamp, as stamp() stores it */
        memcpy(st, &page, sizeof(page));
        memcpy(buf + i, tmpl + in, n);
        for (size_t b = in; b < sizeof(page) && b < in + n; b++)
            buf[i + b - in] = st[b];
        i += n;
    }
}

/* Makes buf the block at off: the stamps of an aligned block (its body is
 * the template already), else every byte. */
static void make_block(unsigned char *buf, const unsigned char *tmpl, uint64_t off, size_t len)
{
    if (page_aligned(off, len))
        stamp(buf, off, len);
    else
        fill_at(buf, tmpl, off, len);
}

/* pages of buf that are not what offset off should hold (an unaligned
 * block: 1 if any byte differs) */
static unsigned long long check(const unsigned char *buf, const unsigned char *tmpl, uint64_t off,
                                size_t len)
{
    unsigned long long bad = 0;
    if (!page_aligned(off, len)) {
        unsigned char *want = malloc(len);
        if (!want)
            return 1;
        fill_at(want, tmpl, off, len);
        bad = memcmp(want, buf, len) != 0;
        free(want);
        return bad;
    }
    for (size_t p = 0; p < len; p += PAGE_BYTES) {
        uint64_t at;
        memcpy(&at, buf + p, sizeof(at));
        if (at != off + p || memcmp(buf + p + sizeof(at), tmpl + sizeof(at), PAGE_BYTES - sizeof(at)))
            bad++;
    }
    return bad;
}

static int mpi_ok(int rc, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (rc == MPI_SUCCESS)
        return 1;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "[%d] mpiio_bench: %s: %s\n", rank, what, msg);
    return 0;
}

/* The blocks this rank writes, or reads (-shift: its neighbour's). */
static unsigned owner_rank(const struct opts *o, int writing)
{
    return (unsigned)(writing || !o->shift ? rank : (rank + 1) % nprocs);
}

static uint64_t block_offset(const struct opts *o, unsigned long long call, unsigned who)
{
    unsigned long long calls = o->total / o->xfer / (unsigned) nprocs;
    if (o->contig)
        return (who * calls + call) * o->xfer;
    return (call * (unsigned) nprocs + who) * o->xfer;
}

/* A failed call does not end the loop: the other ranks' collective calls
 * (and the sync, collective too) still need this rank's; the failure is
 * reported at the end. */
static int do_write(MPI_File fh, const struct opts *o, unsigned char *buf,
                    const unsigned char *tmpl)
{
    unsigned long long calls = o->total / o->xfer / (unsigned) nprocs;
    int failed = 0;
    for (unsigned long long c = 0; c < calls; c++) {
        uint64_t off = block_offset(o, c, owner_rank(o, 1));
        int rc;
        make_block(buf, tmpl, off, o->xfer);
        if (o->indep)
            rc = MPI_File_write_at(fh, (MPI_Offset) off, buf, (int) o->xfer, MPI_BYTE,
                                   MPI_STATUS_IGNORE);
        else
            rc = MPI_File_write_at_all(fh, (MPI_Offset) off, buf, (int) o->xfer, MPI_BYTE,
                                       MPI_STATUS_IGNORE);
        failed |= !mpi_ok(rc, "write");
    }
    failed |= !mpi_ok(MPI_File_sync(fh), "sync");
    return failed ? -1 : 0;
}

/* reads this rank's blocks into all (timed); check_all looks at them after */
/* As do_write, a failed call does not end the loop. */
static int do_read(MPI_File fh, const struct opts *o, unsigned char *all)
{
    unsigned long long calls = o->total / o->xfer / (unsigned) nprocs;
    int failed = 0;
    for (unsigned long long c = 0; c < calls; c++) {
        uint64_t off = block_offset(o, c, owner_rank(o, 0));
        unsigned char *buf = all + c * o->xfer;
        MPI_Status st;
        int rc, got = 0;
        if (o->indep)
            rc = MPI_File_read_at(fh, (MPI_Offset) off, buf, (int) o->xfer, MPI_BYTE, &st);
        else
            rc = MPI_File_read_at_all(fh, (MPI_Offset) off, buf, (int) o->xfer, MPI_BYTE, &st);
        if (!mpi_ok(rc, "read")) {
            failed = 1;
            continue;
        }
        MPI_Get_count(&st, MPI_BYTE, &got);
        if ((unsigned long long) got != o->xfer) {
            fprintf(stderr, "[%d] mpiio_bench: short read at %llu: %d bytes\n", rank,
                    (unsigned long long) off, got);
            failed = 1;
        }
    }
    return failed ? -1 : 0;
}

static unsigned long long check_all(const struct opts *o, const unsigned char *all,
                                    const unsigned char *tmpl)
{
    unsigned long long calls = o->total / o->xfer / (unsigned) nprocs, bad = 0;
    for (unsigned long long c = 0; c < calls; c++)
        bad += check(all + c * o->xfer, tmpl, block_offset(o, c, owner_rank(o, 0)), o->xfer);
    return bad;
}

int main(int argc, char **argv)
{
    struct opts o;
    unsigned char tmpl[PAGE_BYTES], *buf;
    unsigned long long bad = 0, bad_all = 0;
    MPI_File fh;
    MPI_Info info;
    double t0, t1, secs, secs_max;
    int writing, err = 0, err_any = 0;
    size_t buf_len;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    parse(argc, argv, &o);
    writing = !strcmp(o.op, "write");
    fill_template(tmpl);
    buf_len = writing ? o.xfer : o.total / (unsigned) nprocs;
    if (!(buf = malloc(buf_len))) {
        fprintf(stderr, "[%d] mpiio_bench: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    build_block(buf, tmpl, buf_len);   /* touches every page before timing */

    info = make_info(&o);
    if (!mpi_ok(MPI_File_open(MPI_COMM_WORLD, o.fname,
                              writing ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY,
                              info, &fh), "open"))
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Info_free(&info);

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    if (writing) {
        err = do_write(fh, &o, buf, tmpl) < 0;
        err |= !mpi_ok(MPI_File_close(&fh), "close");
    } else {
        err = do_read(fh, &o, buf) < 0;
    }
    t1 = MPI_Wtime();
    if (!writing) {
        err |= !mpi_ok(MPI_File_close(&fh), "close");
        bad = check_all(&o, buf, tmpl);
    }
    secs = t1 - t0;
    MPI_Reduce(&secs, &secs_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&bad, &bad_all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&err, &err_any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("RESULT op=%s mode=%s np=%d xfer=%llu bytes=%llu secs=%.3f mbps=%.1f\n", o.op,
               o.indep ? "indep" : "coll", nprocs, o.xfer, o.total, secs_max,
               secs_max > 0 ? (double) o.total / 1e6 / secs_max : 0.0);
        if (!writing && bad_all)
            printf("FAIL: %llu pages (or unaligned blocks) differ\n", bad_all);
        else if (!err_any)
            printf("PASS\n");
    }
    free(buf);
    MPI_Finalize();
    return err_any || bad_all ? 1 : 0;
}
