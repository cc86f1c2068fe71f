/* test_extent_map.c - the SEEK_DATA/SEEK_HOLE math of libdepfs
 * (client/lib/eng_extent_map.h): against a brute-force model over random
 * layouts, extents, unknown servers and replies cut short, every seek from
 * every unit agrees; bytes written anywhere (mapped to the servers' local
 * extents through the layout) are always data and never inside a hole;
 * a server whose picture is unknown makes every unit of it data; a file
 * with one written region reports exactly that region, rounded out to
 * whole stripe units. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "eng_extent_map.h"
#include "layout.h"
#include "tests/lib/rng.h"

#define MAX_EXT 64u
#define ROUNDS 400u

typedef struct model {
    layout lay;
    dc_xmap map;
    dc_xext ext[LAYOUT_MAX_N][MAX_EXT];
} model;

static void model_init(model *m, unsigned n, unsigned k, uint32_t su, uint64_t stripes)
{
    memset(m, 0, sizeof(*m));
    m->lay.n = n;
    m->lay.k = k;
    m->lay.su = su;
    for (unsigned p = 0; p < n; p++)
        m->lay.servers[p] = p;
    m->map.lay = &m->lay;
    m->map.first_stripe = 0;
    m->map.end_stripe = stripes;
    for (unsigned p = 0; p < n; p++) {
        m->map.pos[p].known = true;
        m->map.pos[p].known_end = stripes * su;
        m->map.pos[p].ext = m->ext[p];
        m->map.pos[p].n = 0;
    }
}

/* Adds local bytes [off, off+len) to position p's extents (ascending). */
static void add_local(model *m, unsigned p, uint64_t off, uint64_t len)
{
    dc_xpos *x = &m->map.pos[p];
    ck_assert_uint_lt(x->n, MAX_EXT);
    if (x->n > 0) {
        const dc_xext *last = &m->ext[p][x->n - 1];
        ck_assert_uint_ge(off, last->off);
    }
    m->ext[p][x->n++] = (dc_xext){ .off = off, .len = len };
}

/* The model: data unit u of stripe s is data. */
static bool model_is_data(const model *m, uint64_t s, unsigned u)
{
    unsigned p = layout_unit_pos(&m->lay, s, u);
    const dc_xpos *x = &m->map.pos[p];
    uint64_t a = s * m->lay.su, b = a + m->lay.su;
    if (!x->known || a >= x->known_end)
        return true;
    for (size_t i = 0; i < x->n; i++)
        if (x->ext[i].len > 0 && x->ext[i].off < b && x->ext[i].off + x->ext[i].len > a)
            return true;
    return false;
}

static bool model_seek(const model *m, uint64_t off, bool want, uint64_t *out)
{
    uint64_t su = m->lay.su, sb = layout_stripe_bytes(&m->lay);
    for (uint64_t s = off / sb; s < m->map.end_stripe; s++) {
        for (unsigned u = 0; u < m->lay.k; u++) {
            uint64_t at = s * sb + u * su;
            if (at + su <= off)
                continue;
            if (model_is_data(m, s, u) == want) {
                *out = at > off ? at : off;
                return true;
            }
        }
    }
    return false;
}

/* A random layout and random extents (aligned or not, some positions
 * unknown, some replies cut short). */
static void model_random(model *m)
{
    unsigned n = 1 + (unsigned)rnd_below(12);
    unsigned k = 1 + (unsigned)rnd_below(n);
    uint32_t su = 512u * (1 + (uint32_t)rnd_below(4));
    uint64_t stripes = 1 + rnd_below(40);
    model_init(m, n, k, su, stripes);
    for (unsigned p = 0; p < n; p++) {
        uint64_t local_end = stripes * su, cur = 0;
        unsigned want = (unsigned)rnd_below(8);
        for (unsigned i = 0; i < want && cur < local_end; i++) {
            uint64_t off = cur + rnd_below(3 * su);
            if (off >= local_end)
                break;
            uint64_t len = 1 + rnd_below(4 * su);
            if (len > local_end - off)
                len = local_end - off;
            add_local(m, p, off, len);
            cur = off + len;
        }
        if (rnd_below(6) == 0)
            m->map.pos[p].known = false;
        else if (rnd_below(4) == 0)
            m->map.pos[p].known_end = rnd_below(stripes + 1) * su;
    }
}

START_TEST(test_agrees_with_the_model)
{
    model *m = malloc(sizeof(*m));
    ck_assert_ptr_nonnull(m);
    for (unsigned r = 0; r < ROUNDS; r++) {
        model_random(m);
        uint64_t sb = layout_stripe_bytes(&m->lay), size = m->map.end_stripe * sb;
        for (unsigned t = 0; t < 32; t++) {
            uint64_t off = rnd_below(size);
            for (int want = 0; want < 2; want++) {
                uint64_t got = 0, exp = 0;
                bool g = dc_xmap_seek(&m->map, off, want, &got);
                bool e = model_seek(m, off, want, &exp);
                ck_assert_msg(g == e && (!g || got == exp),
                              "round %u n=%u k=%u su=%u off=%llu want_data=%d: got %d/%llu, "
                              "model %d/%llu", r, m->lay.n, m->lay.k, m->lay.su,
                              (unsigned long long)off, want, g, (unsigned long long)got, e,
                              (unsigned long long)exp);
            }
        }
        for (uint64_t s = 0; s < m->map.end_stripe; s++)
            for (unsigned u = 0; u < m->lay.k; u++)
                ck_assert(dc_xmap_unit_is_data(&m->map, s, u) == model_is_data(m, s, u));
    }
    free(m);
}
END_TEST

/* File bytes [off, off+len) as the local extents their data units get. */
static void write_file_range(model *m, uint64_t off, uint64_t len, dc_xext *staged[],
                             size_t *counts)
{
    for (uint64_t b = off; b < off + len;) {
        unit_addr a = layout_locate(&m->lay, b);
        uint64_t in_unit = m->lay.su - a.off_in_unit;
        uint64_t take = in_unit < off + len - b ? in_unit : off + len - b;
        unsigned p = layout_unit_pos(&m->lay, a.stripe, a.unit);
        staged[p][counts[p]++] = (dc_xext){ .off = a.stripe * m->lay.su + a.off_in_unit,
                                           .len = take };
        b += take;
    }
}

static int ext_cmp(const void *a, const void *b)
{
    const dc_xext *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

START_TEST(test_written_bytes_are_never_holes)
{
    model *m = malloc(sizeof(*m));
    ck_assert_ptr_nonnull(m);
    static dc_xext staged_mem[LAYOUT_MAX_N][MAX_EXT * 8];
    for (unsigned r = 0; r < ROUNDS; r++) {
        unsigned n = 2 + (unsigned)rnd_below(10), k = 1 + (unsigned)rnd_below(n);
        uint32_t su = 512u * (1 + (uint32_t)rnd_below(3));
        uint64_t stripes = 2 + rnd_below(30);
        model_init(m, n, k, su, stripes);
        uint64_t size = stripes * layout_stripe_bytes(&m->lay);
        dc_xext *staged[LAYOUT_MAX_N];
        size_t counts[LAYOUT_MAX_N] = {0};
        for (unsigned p = 0; p < n; p++)
            staged[p] = staged_mem[p];
        uint64_t written[4][2];
        unsigned nw = 1 + (unsigned)rnd_below(4);
        for (unsigned w = 0; w < nw; w++) {
            uint64_t off = rnd_below(size), len = 1 + rnd_below(2 * su);
            if (len > size - off)
                len = size - off;
            written[w][0] = off;
            written[w][1] = len;
            write_file_range(m, off, len, staged, counts);
        }
        for (unsigned p = 0; p < n; p++) { /* what a server reports: sorted */
            ck_assert_uint_le(counts[p], MAX_EXT);
            qsort(staged[p], counts[p], sizeof(dc_xext), ext_cmp);
            for (size_t i = 0; i < counts[p]; i++)
                add_local(m, p, staged[p][i].off, staged[p][i].len);
        }
        for (unsigned w = 0; w < nw; w++) {
            for (uint64_t b = written[w][0]; b < written[w][0] + written[w][1]; b += 97) {
                uint64_t got;
                ck_assert(dc_xmap_seek(&m->map, b, true, &got));
                ck_assert_uint_eq(got, b); /* a written byte is data */
                if (dc_xmap_seek(&m->map, b, false, &got))
                    ck_assert_uint_gt(got, b); /* and the next hole starts after it */
            }
        }
    }
    free(m);
}
END_TEST

START_TEST(test_one_region_exactly)
{
    /* 8@6, 64 KiB units, a sparse file of 1000 stripes with bytes
     * [stripe 500 + 100 KiB, + 1 MiB): data from the unit holding the first
     * byte to the end of the unit holding the last, holes around it */
    model *m = malloc(sizeof(*m));
    ck_assert_ptr_nonnull(m);
    const uint32_t su = 65536;
    model_init(m, 8, 6, su, 1000);
    uint64_t sb = layout_stripe_bytes(&m->lay);
    uint64_t off = 500 * sb + 100 * 1024, len = 1 << 20;
    static dc_xext staged_mem[LAYOUT_MAX_N][MAX_EXT];
    dc_xext *staged[LAYOUT_MAX_N];
    size_t counts[LAYOUT_MAX_N] = {0};
    for (unsigned p = 0; p < 8; p++)
        staged[p] = staged_mem[p];
    write_file_range(m, off, len, staged, counts);
    for (unsigned p = 0; p < 8; p++) {
        qsort(staged[p], counts[p], sizeof(dc_xext), ext_cmp);
        for (size_t i = 0; i < counts[p]; i++)
            add_local(m, p, staged[p][i].off, staged[p][i].len);
    }
    uint64_t got;
    ck_assert(dc_xmap_seek(&m->map, 0, true, &got));
    ck_assert_uint_eq(got, off - off % su);
    ck_assert(dc_xmap_seek(&m->map, got, false, &got));
    uint64_t end = off + len;
    ck_assert_uint_eq(got, end + (su - end % su) % su);
    ck_assert(!dc_xmap_seek(&m->map, got, true, &got)); /* nothing after it */
    ck_assert(dc_xmap_seek(&m->map, 0, false, &got));
    ck_assert_uint_eq(got, 0);
    /* the same with the server of the first unit unknown (down): every
     * data unit it holds counts as data, so SEEK_DATA finds its first one */
    m->map.pos[layout_unit_pos(&m->lay, 0, 0)].known = false;
    ck_assert(dc_xmap_seek(&m->map, 0, true, &got));
    ck_assert_uint_eq(got, 0);
    free(m);
}
END_TEST

START_TEST(test_reply_cut_short)
{
    /* a position whose reply stopped at stripe 3 counts as data from there */
    model m;
    model_init(&m, 4, 2, 512, 10);
    for (unsigned p = 0; p < 4; p++)
        m.map.pos[p].known_end = p == 2 ? 3 * 512 : 10 * 512;
    uint64_t got;
    ck_assert(dc_xmap_seek(&m.map, 0, true, &got));
    uint64_t first = 0;
    for (uint64_t s = 3;; s++) { /* the first stripe from 3 where position 2 holds data */
        unsigned u = layout_pos_unit(&m.lay, s, 2);
        if (u < 2) {
            first = s * 1024 + u * 512;
            break;
        }
    }
    ck_assert_uint_eq(got, first);
}
END_TEST

START_TEST(test_one_position)
{
    /* the rebuild's question of one server: does its unit of stripe s hold
     * data? Extents over stripes 1 and 4-5, known up to stripe 7. */
    const uint32_t su = 512;
    const dc_xext ext[] = {{.off = su + 3, .len = 1}, {.off = 4 * su, .len = su + 1}};
    dc_xpos x = {.known = true, .known_end = 7 * su, .ext = ext, .n = 2};
    const bool want[] = {false, true, false, false, true, true, false, true, true};
    for (uint64_t s = 0; s < sizeof(want) / sizeof(want[0]); s++)
        ck_assert_msg(dc_xpos_stripe_is_data(&x, su, s) == want[s], "stripe %llu",
                      (unsigned long long)s);
    x.known = false; /* nothing said: every unit counts as data */
    for (uint64_t s = 0; s < 9; s++)
        ck_assert(dc_xpos_stripe_is_data(&x, su, s));
}
END_TEST

int main(void)
{
    seed_rng_default(0x5eed0014ull);
    Suite *s = suite_create("extent_map");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_agrees_with_the_model);
    tcase_add_test(tc, test_written_bytes_are_never_holes);
    tcase_add_test(tc, test_one_region_exactly);
    tcase_add_test(tc, test_reply_cut_short);
    tcase_add_test(tc, test_one_position);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
