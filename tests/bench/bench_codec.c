/* bench_codec.c - encode and degraded-decode throughput of common/codec.h
 * beside raw ISA-L on the same buffers.
 *
 *   bench_codec [--quick] [--stripes N] [--runs N]
 *
 * For each layout (8@6, 8@4, 8@7, 4@2; su 64 KiB) it lays out many stripes in
 * one buffer (larger than the caches, so memory traffic counts as it does in
 * the client), then walks the stripes with
 *   codec : codec_encode / codec_decode per stripe (decode tables cached by
 *           the codec per erasure pattern), and
 *   raw   : ec_encode_data with tables built once up front (the encode matrix
 *           from gf_gen_cauchy1_matrix, the decode matrix inverted once with
 *           gf_invert_matrix, both through ec_init_tables),
 * timing both back to back on every chunk of 16 stripes (alternating which
 * goes first); each side's time is the sum over chunks of its fastest run. Decode loses min(2, n-k) data units
 * (units 0 and 1) and rebuilds them from the first k survivors.
 *
 * GB/s counts the stripe's data bytes (k * su per stripe) per second for both
 * encode and decode, 1 GB = 1e9 bytes. After the runs it checks once that the
 * codec rebuilt the lost units byte for byte (exit 1 if not).
 *
 * Output: '#' comment lines, then one line per measurement:
 *   OP LAYOUT CODEC_GBPS RAW_GBPS RATIO
 * which tests/bench/run-bench parses. DEPFS_BENCH_QUICK=1 acts as --quick. */
#include <assert.h>
#include <errno.h>
#include <isa-l/erasure_code.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec.h"

#define BENCH_SU_BYTES (64u * 1024u)
#define BENCH_ALIGN_BYTES 64u
#define BENCH_STRIPES_FULL 256u  /* 8@6: 96 MiB data + 32 MiB parity */
#define BENCH_STRIPES_QUICK 48u
#define BENCH_RUNS_FULL 15u
#define BENCH_RUNS_QUICK 5u
#define BENCH_MAX_LOST 2u
#define BENCH_CHUNK_STRIPES 16u /* codec and raw alternate per chunk */
#define BENCH_GF_TABLE_BYTES_PER_COEF 32u
#define BENCH_NS_PER_S 1e9
#define BENCH_BYTES_PER_GB 1e9

struct bench_layout {
    unsigned n, k;
};

static const struct bench_layout bench_layouts[] = {{8, 6}, {8, 4}, {8, 7}, {4, 2}};

/* One layout's stripes: stripe s, unit u at base + (s * n + u) * su. */
struct bench_set {
    unsigned n, k, stripes, lost;
    uint8_t *base;
    uint8_t **units;   /* stripes * n pointers */
    uint8_t *enc_tables; /* raw encode tables, 32 * k * (n - k) */
    uint8_t *dec_tables; /* raw decode tables, 32 * k * lost */
    codec *codec;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / BENCH_NS_PER_S;
}

static uint8_t **stripe_units(const struct bench_set *b, unsigned s)
{
    return b->units + (size_t)s * b->n;
}

static void fill_random(uint8_t *p, size_t len, uint64_t seed)
{
    uint64_t x = seed | 1u;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (uint8_t)x;
    }
}

/* Raw decode tables for "units 0..lost-1 missing, rebuild from the first k
 * survivors": invert the survivors' rows of the encode matrix once. */
static int build_raw_decode(struct bench_set *b, const uint8_t *matrix)
{
    const unsigned k = b->k;
    uint8_t sub[CODEC_MAX_UNITS * CODEC_MAX_UNITS], inv[CODEC_MAX_UNITS * CODEC_MAX_UNITS];
    uint8_t rows[CODEC_MAX_UNITS * CODEC_MAX_UNITS];

    for (unsigned r = 0; r < k; r++)
        memcpy(sub + (size_t)r * k, matrix + (size_t)(b->lost + r) * k, k);
    if (gf_invert_matrix(sub, inv, (int)k) != 0)
        return -EIO;
    for (unsigned i = 0; i < b->lost; i++) /* lost data unit i = row i of inv */
        memcpy(rows + (size_t)i * k, inv + (size_t)i * k, k);
    ec_init_tables((int)k, (int)b->lost, rows, b->dec_tables);
    return 0;
}

static void set_free(struct bench_set *b)
{
    codec_free(b->codec);
    free(b->dec_tables);
    free(b->enc_tables);
    free(b->units);
    free(b->base);
    memset(b, 0, sizeof(*b));
}

static int set_init(struct bench_set *b, unsigned n, unsigned k, unsigned stripes)
{
    uint8_t matrix[CODEC_MAX_UNITS * CODEC_MAX_UNITS];
    size_t bytes = (size_t)stripes * n * BENCH_SU_BYTES;
    void *mem = NULL;

    memset(b, 0, sizeof(*b));
    assert(n > k && n <= CODEC_MAX_UNITS);
    b->n = n;
    b->k = k;
    b->stripes = stripes;
    b->lost = n - k < BENCH_MAX_LOST ? n - k : BENCH_MAX_LOST;
    if (posix_memalign(&mem, BENCH_ALIGN_BYTES, bytes) != 0)
        goto fail;
    b->base = mem;
    b->units = calloc((size_t)stripes * n, sizeof(*b->units));
    b->enc_tables = malloc((size_t)BENCH_GF_TABLE_BYTES_PER_COEF * k * (n - k));
    b->dec_tables = malloc((size_t)BENCH_GF_TABLE_BYTES_PER_COEF * k * b->lost);
    if (!b->units || !b->enc_tables || !b->dec_tables)
        goto fail;
    for (size_t i = 0; i < (size_t)stripes * n; i++)
        b->units[i] = b->base + i * BENCH_SU_BYTES;
    fill_random(b->base, bytes, ((uint64_t)n << 8) | k);
    if (codec_create(n, k, CODEC_VERSION_CAUCHY1, &b->codec) != 0)
        goto fail;
    gf_gen_cauchy1_matrix(matrix, (int)n, (int)k);
    ec_init_tables((int)k, (int)(n - k), matrix + (size_t)k * k, b->enc_tables);
    if (build_raw_decode(b, matrix) != 0)
        goto fail;
    return 0;
fail:
    set_free(b);
    return -ENOMEM;
}

/* Stripes [first, first + count) of one side. */
static void encode_codec(struct bench_set *b, unsigned first, unsigned count)
{
    for (unsigned s = first; s < first + count; s++) {
        uint8_t **u = stripe_units(b, s);
        codec_encode(b->codec, BENCH_SU_BYTES, u, u + b->k);
    }
}

static void encode_raw(struct bench_set *b, unsigned first, unsigned count)
{
    for (unsigned s = first; s < first + count; s++) {
        uint8_t **u = stripe_units(b, s);
        ec_encode_data(BENCH_SU_BYTES, (int)b->k, (int)(b->n - b->k), b->enc_tables, u,
                       u + b->k);
    }
}

static int decode_codec(struct bench_set *b, unsigned first, unsigned count)
{
    bool present[CODEC_MAX_UNITS];
    for (unsigned u = 0; u < b->n; u++)
        present[u] = u >= b->lost;
    for (unsigned s = first; s < first + count; s++)
        if (codec_decode(b->codec, BENCH_SU_BYTES, stripe_units(b, s), present) != 0)
            return -EIO;
    return 0;
}

static void decode_raw(struct bench_set *b, unsigned first, unsigned count)
{
    for (unsigned s = first; s < first + count; s++) {
        uint8_t **u = stripe_units(b, s);
        /* sources: the first k survivors (units lost..lost+k-1) */
        ec_encode_data(BENCH_SU_BYTES, (int)b->k, (int)b->lost, b->dec_tables, u + b->lost, u);
    }
}

static double gbps(const struct bench_set *b, double secs)
{
    double data_bytes = (double)b->stripes * b->k * BENCH_SU_BYTES;
    return data_bytes / secs / BENCH_BYTES_PER_GB;
}

/* Times one side over one chunk of stripes; adds to *secs. */
static int run_side(struct bench_set *b, bool decode, bool use_codec, unsigned first,
                    unsigned count, double *secs)
{
    double t0 = now_s();
    if (decode && use_codec && decode_codec(b, first, count) != 0)
        return -EIO;
    if (decode && !use_codec)
        decode_raw(b, first, count);
    if (!decode && use_codec)
        encode_codec(b, first, count);
    if (!decode && !use_codec)
        encode_raw(b, first, count);
    *secs += now_s() - t0;
    return 0;
}

/* Each run walks all stripes in chunks, timing codec and raw back to back
 * on every chunk (alternating which goes first). Each side keeps, per chunk,
 * its fastest time over the runs, and its total is the sum of those: a burst
 * of noise from another process then has to hit the same chunk in every run
 * to count, on either side. */
static int measure(struct bench_set *b, bool decode, unsigned runs, double *codec_gbps,
                   double *raw_gbps)
{
    unsigned chunks = (b->stripes + BENCH_CHUNK_STRIPES - 1) / BENCH_CHUNK_STRIPES;
    double *best = calloc((size_t)chunks * 2u, sizeof(*best)); /* [chunk][codec, raw] */
    if (!best)
        return -ENOMEM;
    for (unsigned r = 0; r < runs; r++) {
        for (unsigned c = 0; c < chunks; c++) {
            unsigned first = c * BENCH_CHUNK_STRIPES;
            unsigned count = b->stripes - first < BENCH_CHUNK_STRIPES ? b->stripes - first
                                                                      : BENCH_CHUNK_STRIPES;
            bool codec_first = ((r + c) % 2u) == 0;
            double t[2] = {0, 0}; /* codec, raw */
            if (run_side(b, decode, codec_first, first, count, &t[codec_first ? 0 : 1]) != 0 ||
                run_side(b, decode, !codec_first, first, count, &t[codec_first ? 1 : 0]) != 0) {
                free(best);
                return -EIO;
            }
            for (unsigned side = 0; side < 2; side++) {
                double *slot = &best[(size_t)c * 2u + side];
                if (r == 0 || t[side] < *slot)
                    *slot = t[side];
            }
        }
    }
    double t_codec = 0, t_raw = 0;
    for (unsigned c = 0; c < chunks; c++) {
        t_codec += best[(size_t)c * 2u];
        t_raw += best[(size_t)c * 2u + 1u];
    }
    free(best);
    *codec_gbps = gbps(b, t_codec);
    *raw_gbps = gbps(b, t_raw);
    return 0;
}

/* Wipes the lost units, decodes through the codec, compares with a copy. */
static int verify_decode(struct bench_set *b)
{
    size_t lost_bytes = (size_t)b->lost * BENCH_SU_BYTES;
    uint8_t *saved = malloc(lost_bytes);
    int rc = -EIO;
    if (!saved)
        return -ENOMEM;
    encode_codec(b, 0, b->stripes);
    for (unsigned s = 0; s < b->stripes; s++) {
        uint8_t **u = stripe_units(b, s);
        memcpy(saved, u[0], lost_bytes); /* units 0..lost-1 are adjacent */
        memset(u[0], 0, lost_bytes);
        bool present[CODEC_MAX_UNITS];
        for (unsigned i = 0; i < b->n; i++)
            present[i] = i >= b->lost;
        if (codec_decode(b->codec, BENCH_SU_BYTES, u, present) != 0 ||
            memcmp(saved, u[0], lost_bytes) != 0)
            goto out;
    }
    rc = 0;
out:
    free(saved);
    return rc;
}

static int bench_one(const struct bench_layout *l, unsigned stripes, unsigned runs)
{
    struct bench_set b;
    double c, r;
    int rc = set_init(&b, l->n, l->k, stripes);
    if (rc != 0) {
        fprintf(stderr, "bench_codec: %u@%u: out of memory\n", l->n, l->k);
        return rc;
    }
    encode_codec(&b, 0, b.stripes); /* warm: fault the pages in, make parity valid */
    rc = measure(&b, false, runs, &c, &r);
    if (rc == 0)
        printf("encode %u@%u %.3f %.3f %.3f\n", l->n, l->k, c, r, c / r);
    if (rc == 0)
        rc = measure(&b, true, runs, &c, &r);
    if (rc == 0)
        printf("decode%u %u@%u %.3f %.3f %.3f\n", b.lost, l->n, l->k, c, r, c / r);
    if (rc == 0)
        rc = verify_decode(&b);
    if (rc != 0)
        fprintf(stderr, "bench_codec: %u@%u: codec decode failed or rebuilt wrong bytes\n",
                l->n, l->k);
    fflush(stdout);
    set_free(&b);
    return rc;
}

static int parse_uint(const char *s, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v == 0 || v > 100000)
        return -1;
    *out = (unsigned)v;
    return 0;
}

int main(int argc, char **argv)
{
    const char *q = getenv("DEPFS_BENCH_QUICK");
    bool quick = q && *q && strcmp(q, "0") != 0;
    unsigned stripes = 0, runs = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (strcmp(argv[i], "--stripes") == 0 && i + 1 < argc) {
            if (parse_uint(argv[++i], &stripes) != 0)
                goto usage;
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            if (parse_uint(argv[++i], &runs) != 0)
                goto usage;
        } else {
            goto usage;
        }
    }
    if (!stripes)
        stripes = quick ? BENCH_STRIPES_QUICK : BENCH_STRIPES_FULL;
    if (!runs)
        runs = quick ? BENCH_RUNS_QUICK : BENCH_RUNS_FULL;

    printf("# bench_codec: su %u KiB, %u stripes, per-chunk best of %u runs; GB/s of data bytes\n",
           BENCH_SU_BYTES / 1024u, stripes, runs);
    printf("# op layout codec_GBps raw_GBps ratio\n");
    int rc = 0;
    for (size_t i = 0; i < sizeof(bench_layouts) / sizeof(bench_layouts[0]); i++)
        if (bench_one(&bench_layouts[i], stripes, runs) != 0)
            rc = 1;
    return rc;
usage:
    fprintf(stderr, "usage: bench_codec [--quick] [--stripes N] [--runs N]\n");
    return 2;
}
