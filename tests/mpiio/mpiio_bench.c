/* mpiio_bench.c - shared-file MPI-IO throughput, the program behind
 * tests/bench/bench-mpiio: the same binary runs on the DePFS driver
 * (depfs@8@6:/...) and on ROMIO's ufs: driver over the FUSE mount.
 *
 *   mpiio_bench -fname NAME -op write|read [-mib TOTAL] [-xfer MIB] [-indep]
 *               [-hint KEY=VALUE]...
 *
 * Pattern (IOR's N-1 strided checkpoint): TOTAL MiB in blocks of XFER MiB;
 * block b of the file is written (read) by rank b % nprocs, in call
 * b / nprocs of that rank, so every call of all ranks together covers one
 * contiguous nprocs x XFER region. Collective calls (MPI_File_write_at_all /
 * read_at_all) by default, -indep for MPI_File_write_at / read_at.
 *
 * Timing (max over ranks, open not included): write = first write call to
 * the end of MPI_File_sync + MPI_File_close; read = first read call to the
 * last one finished (the caller drops the page cache before). Content: each
 * 4 KiB page holds its file offset in its first 8 bytes and a fixed
 * pseudo-random body, so stamping a block costs one store per page and a
 * read checks every byte. Rank 0 prints one line:
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
    unsigned long long total, xfer;
    int indep;
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
        if (!strcmp(a, "-indep")) {
            o->indep = 1;
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
        else if (!strcmp(a, "-hint") && o->nhints < MAX_HINTS && strchr(v, '='))
            o->hints[o->nhints++] = argv[i + 1];
        else
            usage_die("unknown option or bad value");
        i++;
    }
    if (!o->fname || !o->op || (strcmp(o->op, "write") && strcmp(o->op, "read")))
        usage_die("need -fname and -op write|read");
    if (o->xfer == 0 || o->xfer % PAGE_BYTES || o->total % (o->xfer * (unsigned) nprocs))
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
        memcpy(buf + p, tmpl, PAGE_BYTES);
}

static void stamp(unsigned char *buf, uint64_t off, size_t len)
{
    for (size_t p = 0; p < len; p += PAGE_BYTES) {
        uint64_t at = off + p;
        memcpy(buf + p, &at, sizeof(at));
    }
}

/* pages of buf that are not what offset off should hold */
static unsigned long long check(const unsigned char *buf, const unsigned char *tmpl, uint64_t off,
                                size_t len)
{
    unsigned long long bad = 0;
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

static uint64_t block_offset(const struct opts *o, unsigned long long call)
{
    return (call * (unsigned) nprocs + (unsigned) rank) * o->xfer;
}

static int do_write(MPI_File fh, const struct opts *o, unsigned char *buf)
{
    unsigned long long calls = o->total / o->xfer / (unsigned) nprocs;
    for (unsigned long long c = 0; c < calls; c++) {
        uint64_t off = block_offset(o, c);
        int rc;
        stamp(buf, off, o->xfer);
        if (o->indep)
            rc = MPI_File_write_at(fh, (MPI_Offset) off, buf, (int) o->xfer, MPI_BYTE,
                                   MPI_STATUS_IGNORE);
        else
            rc = MPI_File_write_at_all(fh, (MPI_Offset) off, buf, (int) o->xfer, MPI_BYTE,
                                       MPI_STATUS_IGNORE);
        if (!mpi_ok(rc, "write"))
            return -1;
    }
    return mpi_ok(MPI_File_sync(fh), "sync") ? 0 : -1;
}

/* reads this rank's blocks into all (timed); check_all looks at them after */
static int do_read(MPI_File fh, const struct opts *o, unsigned char *all)
{
    unsigned long long calls = o->total / o->xfer / (unsigned) nprocs;
    for (unsigned long long c = 0; c < calls; c++) {
        uint64_t off = block_offset(o, c);
        unsigned char *buf = all + c * o->xfer;
        MPI_Status st;
        int rc, got = 0;
        if (o->indep)
            rc = MPI_File_read_at(fh, (MPI_Offset) off, buf, (int) o->xfer, MPI_BYTE, &st);
        else
            rc = MPI_File_read_at_all(fh, (MPI_Offset) off, buf, (int) o->xfer, MPI_BYTE, &st);
        if (!mpi_ok(rc, "read"))
            return -1;
        MPI_Get_count(&st, MPI_BYTE, &got);
        if ((unsigned long long) got != o->xfer) {
            fprintf(stderr, "[%d] mpiio_bench: short read at %llu: %d bytes\n", rank,
                    (unsigned long long) off, got);
            return -1;
        }
    }
    return 0;
}

static unsigned long long check_all(const struct opts *o, const unsigned char *all,
                                    const unsigned char *tmpl)
{
    unsigned long long calls = o->total / o->xfer / (unsigned) nprocs, bad = 0;
    for (unsigned long long c = 0; c < calls; c++)
        bad += check(all + c * o->xfer, tmpl, block_offset(o, c), o->xfer);
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
        err = do_write(fh, &o, buf) < 0;
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
        printf("RESULT op=%s mode=%s np=%d bytes=%llu secs=%.3f mbps=%.1f\n", o.op,
               o.indep ? "indep" : "coll", nprocs, o.total, secs_max,
               secs_max > 0 ? (double) o.total / 1e6 / secs_max : 0.0);
        if (!writing && bad_all)
            printf("FAIL: %llu of %llu pages differ\n", bad_all, o.total / PAGE_BYTES);
        else if (!err_any)
            printf("PASS\n");
    }
    free(buf);
    MPI_Finalize();
    return err_any || bad_all ? 1 : 0;
}
