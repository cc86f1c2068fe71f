/* codec.c - the systematic k-of-n Reed-Solomon codec over ISA-L (codec.h).
 *
 * Encode matrix: n x k, rows 0..k-1 identity, rows k..n-1 Cauchy
 * (gf_gen_cauchy1_matrix), which is MDS for every (n, k). Decoding picks the
 * first k present units, inverts their k x k submatrix and derives one row per
 * missing unit (data: a row of the inverse; parity: encode row x inverse).
 * codec_decode_want rebuilds only the missing units asked for (a degraded
 * read needs its lost data units, not the parity it did not read). Those
 * decode tables are cached per (present, wanted) unit bitmask pair, because
 * a degraded read keeps hitting the same erasure pattern. Cache entries are refcounted so
 * a thread can keep decoding with an entry another thread just evicted. */
#include "codec.h"

#include <assert.h>
#include <errno.h>
#include <isa-l/erasure_code.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define GF_TABLE_BYTES_PER_COEF 32u     /* ec_init_tables: 32 bytes per coefficient */
#define CODEC_DECODE_CACHE_ENTRIES 64u  /* erasure patterns kept per codec */
#define CODEC_CHUNK_BYTES (1u << 30)    /* ISA-L lengths are int */

typedef uint32_t unit_mask; /* bit u = unit u; n <= CODEC_MAX_UNITS == 32 */

struct decode_entry {
    unit_mask present;       /* key: the present-unit mask */
    unit_mask wanted;        /* key: the missing units to rebuild */
    unsigned refs;           /* cache's own ref + one per decoding thread */
    uint64_t last_use;       /* LRU stamp */
    unsigned n_src, n_out;
    uint8_t src[CODEC_MAX_UNITS]; /* the k units decoded from */
    uint8_t out[CODEC_MAX_UNITS]; /* the units rebuilt */
    uint8_t *tables;         /* 32 * k * n_out */
};

struct codec {
    unsigned n, k, version;
    uint8_t matrix[CODEC_MAX_UNITS * CODEC_MAX_UNITS]; /* n x k encode matrix */
    uint8_t *parity_tables;  /* 32 * k * (n-k): encode and update */

    pthread_mutex_t lock;    /* guards the decode cache */
    uint64_t use_clock;
    struct decode_entry *cache[CODEC_DECODE_CACHE_ENTRIES];
};

_Static_assert(CODEC_MAX_UNITS <= sizeof(unit_mask) * CHAR_BIT, "unit mask too narrow");

unsigned codec_n(const codec *c) { return c->n; }
unsigned codec_k(const codec *c) { return c->k; }

int codec_create(unsigned n, unsigned k, unsigned version, codec **out)
{
    *out = NULL;
    if (k == 0 || k > n || n > CODEC_MAX_UNITS || version != CODEC_VERSION_CAUCHY1)
        return -EINVAL;

    codec *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->n = n;
    c->k = k;
    c->version = version;
    gf_gen_cauchy1_matrix(c->matrix, (int)n, (int)k);
    if (n > k) {
        c->parity_tables = malloc((size_t)GF_TABLE_BYTES_PER_COEF * k * (n - k));
        if (!c->parity_tables) {
            free(c);
            return -ENOMEM;
        }
        ec_init_tables((int)k, (int)(n - k), c->matrix + (size_t)k * k, c->parity_tables);
    }
    pthread_mutex_init(&c->lock, NULL);
    *out = c;
    return 0;
}

static void entry_free(struct decode_entry *e)
{
    if (!e)
        return;
    free(e->tables);
    free(e);
}

void codec_free(codec *c)
{
    if (!c)
        return;
    for (unsigned i = 0; i < CODEC_DECODE_CACHE_ENTRIES; i++) {
        assert(!c->cache[i] || c->cache[i]->refs == 1);
        entry_free(c->cache[i]);
    }
    pthread_mutex_destroy(&c->lock);
    free(c->parity_tables);
    free(c);
}

/* ec_encode_data over lengths beyond INT_MAX, in chunks. */
static void encode_chunked(size_t len, unsigned k, unsigned rows, uint8_t *tables,
                           uint8_t *const *src, uint8_t *const *dst)
{
    uint8_t *s[CODEC_MAX_UNITS], *d[CODEC_MAX_UNITS];

    if (len <= CODEC_CHUNK_BYTES) {
        ec_encode_data((int)len, (int)k, (int)rows, tables, (uint8_t **)src, (uint8_t **)dst);
        return;
    }
    for (size_t off = 0; off < len; off += CODEC_CHUNK_BYTES) {
        size_t chunk = len - off < CODEC_CHUNK_BYTES ? len - off : CODEC_CHUNK_BYTES;
        for (unsigned i = 0; i < k; i++)
            s[i] = src[i] + off;
        for (unsigned i = 0; i < rows; i++)
            d[i] = dst[i] + off;
        ec_encode_data((int)chunk, (int)k, (int)rows, tables, s, d);
    }
}

void codec_encode(const codec *c, size_t len, uint8_t *const *data, uint8_t *const *parity)
{
    assert(c);
    if (len == 0 || c->n == c->k)
        return;
    encode_chunked(len, c->k, c->n - c->k, c->parity_tables, data, parity);
}

void codec_update(const codec *c, size_t len, unsigned data_index, const uint8_t *delta,
                  uint8_t *const *parity)
{
    assert(c && data_index < c->k);
    unsigned rows = c->n - c->k;
    uint8_t *d[CODEC_MAX_UNITS];

    if (len == 0 || rows == 0)
        return;
    for (size_t off = 0; off < len; off += CODEC_CHUNK_BYTES) {
        size_t chunk = len - off < CODEC_CHUNK_BYTES ? len - off : CODEC_CHUNK_BYTES;
        for (unsigned i = 0; i < rows; i++)
            d[i] = parity[i] + off;
        ec_encode_data_update((int)chunk, (int)c->k, (int)rows, (int)data_index,
                              c->parity_tables, (uint8_t *)delta + off, d);
    }
}

/* Builds the decode tables for one present-unit mask (>= k bits set) and
 * the missing units `wanted` (non-empty, disjoint from present). */
static int entry_build(const codec *c, unit_mask present, unit_mask wanted,
                       struct decode_entry **out)
{
    const unsigned n = c->n, k = c->k;
    uint8_t sub[CODEC_MAX_UNITS * CODEC_MAX_UNITS];
    uint8_t inv[CODEC_MAX_UNITS * CODEC_MAX_UNITS];
    uint8_t rows[CODEC_MAX_UNITS * CODEC_MAX_UNITS];
    int rc = -ENOMEM;

    struct decode_entry *e = calloc(1, sizeof(*e));
    if (!e)
        goto fail;
    e->present = present;
    e->wanted = wanted;
    for (unsigned u = 0; u < n; u++) {
        if ((present >> u) & 1u) {
            if (e->n_src < k)
                e->src[e->n_src++] = (uint8_t)u;
        } else if ((wanted >> u) & 1u) {
            e->out[e->n_out++] = (uint8_t)u;
        }
    }
    assert(e->n_src == k && e->n_out > 0);

    for (unsigned r = 0; r < k; r++)
        memcpy(sub + (size_t)r * k, c->matrix + (size_t)e->src[r] * k, k);
    if (gf_invert_matrix(sub, inv, (int)k) != 0) {
        rc = -EIO; /* cannot happen for a Cauchy matrix */
        goto fail;
    }
    for (unsigned i = 0; i < e->n_out; i++) {
        unsigned u = e->out[i];
        uint8_t *row = rows + (size_t)i * k;
        if (u < k) {
            memcpy(row, inv + (size_t)u * k, k);
            continue;
        }
        for (unsigned j = 0; j < k; j++) {
            uint8_t acc = 0;
            for (unsigned t = 0; t < k; t++)
                acc ^= gf_mul(c->matrix[(size_t)u * k + t], inv[(size_t)t * k + j]);
            row[j] = acc;
        }
    }
    e->tables = malloc((size_t)GF_TABLE_BYTES_PER_COEF * k * e->n_out);
    if (!e->tables)
        goto fail;
    ec_init_tables((int)k, (int)e->n_out, rows, e->tables);
    *out = e;
    return 0;
fail:
    entry_free(e);
    return rc;
}

static void entry_put(codec *c, struct decode_entry *e)
{
    pthread_mutex_lock(&c->lock);
    assert(e->refs > 0);
    bool last = --e->refs == 0;
    pthread_mutex_unlock(&c->lock);
    if (last)
        entry_free(e);
}

/* Returns a referenced entry for (present, wanted), from the cache or
 * freshly built. */
static int entry_get(codec *c, unit_mask present, unit_mask wanted, struct decode_entry **out)
{
    struct decode_entry *fresh = NULL;
    unsigned victim = 0;

    pthread_mutex_lock(&c->lock);
    for (unsigned i = 0; i < CODEC_DECODE_CACHE_ENTRIES; i++) {
        struct decode_entry *e = c->cache[i];
        if (e && e->present == present && e->wanted == wanted) {
            e->refs++;
            e->last_use = ++c->use_clock;
            pthread_mutex_unlock(&c->lock);
            *out = e;
            return 0;
        }
    }
    pthread_mutex_unlock(&c->lock);

    int rc = entry_build(c, present, wanted, &fresh); /* outside the lock: O(k^3) */
    if (rc)
        return rc;

    pthread_mutex_lock(&c->lock);
    for (unsigned i = 0; i < CODEC_DECODE_CACHE_ENTRIES; i++) {
        struct decode_entry *e = c->cache[i];
        if (e && e->present == present && e->wanted == wanted) { /* another thread won */
            e->refs++;
            e->last_use = ++c->use_clock;
            pthread_mutex_unlock(&c->lock);
            entry_free(fresh);
            *out = e;
            return 0;
        }
        if (!e || (c->cache[victim] && e->last_use < c->cache[victim]->last_use))
            victim = i;
    }
    struct decode_entry *evicted = c->cache[victim];
    bool evicted_dead = evicted && --evicted->refs == 0;
    fresh->refs = 2; /* the cache's and the caller's */
    fresh->last_use = ++c->use_clock;
    c->cache[victim] = fresh;
    pthread_mutex_unlock(&c->lock);
    if (evicted_dead)
        entry_free(evicted);
    *out = fresh;
    return 0;
}

int codec_decode(const codec *c, size_t len, uint8_t *const *units, const bool *present)
{
    return codec_decode_want(c, len, units, present, NULL);
}

int codec_decode_want(const codec *c, size_t len, uint8_t *const *units, const bool *present,
                      const bool *want)
{
    assert(c && units && present);
    unit_mask mask = 0, wanted = 0;
    unsigned n_present = 0;
    uint8_t *src[CODEC_MAX_UNITS], *dst[CODEC_MAX_UNITS];

    for (unsigned u = 0; u < c->n; u++) {
        if (present[u]) {
            mask |= (unit_mask)1u << u;
            n_present++;
        } else if (want == NULL || want[u]) {
            wanted |= (unit_mask)1u << u;
        }
    }
    if (n_present < c->k)
        return -EIO;
    if (wanted == 0 || len == 0)
        return 0;

    /* The cache is internal state, not part of the codec's value. */
    codec *mc = (codec *)c;
    struct decode_entry *e;
    int rc = entry_get(mc, mask, wanted, &e);
    if (rc)
        return rc;
    for (unsigned i = 0; i < e->n_src; i++)
        src[i] = units[e->src[i]];
    for (unsigned i = 0; i < e->n_out; i++)
        dst[i] = units[e->out[i]];
    encode_chunked(len, c->k, e->n_out, e->tables, src, dst);
    entry_put(mc, e);
    return 0;
}
