/* test_strip_extents.c - IO_EXTENTS on a real data dir, through
 * ios_process (ioserver/handlers.c, strips.c, strip_extents.c): a strip
 * file's data is reported rounded out to whole units and merged, its
 * allocation is its st_blocks (an absent file: nothing, no error); a
 * reply holds at most WIRE_DATA_EXTENTS_MAX extents and says where to go
 * on, and following next_offset finds every unit once; ranges that are
 * not whole units, more than one range, a range without a stripe unit and
 * file id 0 are refused; a REBUILDING server refuses (its holes mean
 * nothing); a ticket holder needs READ rights (common/io_caps.c). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "config.h"
#include "depfs.pb-c.h"
#include "io_caps.h"
#include "ioserver/handlers.h"
#include "ioserver/strip_extents.h"
#include "wire_check.h"
#include "tests/lib/ios_fixture.h"

#define FILE_ID 0x5a11ull
#define SU 4096u
#define MAX_BULK_BYTES (1u << 20)

static ios_fixture fx;
#define hctx (fx.ctx)
#define tmpdir (fx.dir)

static void setup(void) { ios_fixture_open(&fx, "test_strip_extents", 1, MAX_BULK_BYTES); }
static void teardown(void) { ios_fixture_close(&fx); }

/* Stores len bytes of 0xab at local offset off. */
static void put(uint64_t off, uint64_t len)
{
    uint8_t *buf = malloc(len);
    ck_assert_ptr_nonnull(buf);
    memset(buf, 0xab, len);
    ios_extent e = { .offset = off, .length = len };
    ck_assert_int_eq(ios_strips_write(hctx.strips, FILE_ID, &e, 1, buf, SU, NULL), 0);
    free(buf);
}

/* IO_EXTENTS of [from, from+len) (len 0: no range) with stripe_unit su;
 * returns reply.err, the reply in *out (the caller frees it). */
static int extents(uint64_t file_id, uint64_t from, uint64_t len, uint32_t su,
                   ios_result *out)
{
    Depfs__IoRequest q = DEPFS__IO_REQUEST__INIT;
    Depfs__Extent e = DEPFS__EXTENT__INIT, *ep = &e;
    q.file_id = file_id;
    if (len) {
        e.offset = from;
        e.length = len;
        q.n_extents = 1;
        q.extents = &ep;
    }
    if (su)
        q.has_stripe_unit = 1, q.stripe_unit = su;
    size_t plen = depfs__io_request__get_packed_size(&q);
    uint8_t *buf = malloc(plen + 1);
    ck_assert_ptr_nonnull(buf);
    depfs__io_request__pack(&q, buf);
    ios_process(&hctx, DEPFS__IO_OP__IO_EXTENTS, buf, plen, NULL, 0, "test", NULL, out);
    free(buf);
    if (out->reply.err)
        ck_assert_msg(out->reply.message && out->reply.message[0], "error without a message");
    return out->reply.err;
}

START_TEST(test_units_rounded_and_merged)
{
    ios_result r;
    ck_assert_int_eq(extents(FILE_ID, 0, 64 * SU, SU, &r), 0); /* absent: nothing */
    ck_assert(r.reply.has_alloc_bytes && r.reply.alloc_bytes == 0);
    ck_assert_uint_eq(r.reply.n_data_extents, 0);
    ck_assert(!r.reply.has_next_offset);
    ios_result_free(&r);

    put(3 * SU + 100, 10);           /* inside unit 3 */
    put(4 * SU, SU);                 /* unit 4: merges with 3 */
    put(10 * SU + SU - 1, 2);        /* the end of unit 10 and the start of 11 */
    put(40 * SU, 3 * SU);            /* units 40..42 */
    ck_assert_int_eq(extents(FILE_ID, 0, 64 * SU, SU, &r), 0);
    ck_assert_uint_eq(r.reply.n_data_extents, 3);
    ck_assert_uint_eq(r.reply.data_extents[0]->offset, 3 * SU);
    ck_assert_uint_eq(r.reply.data_extents[0]->length, 2 * SU);
    ck_assert_uint_eq(r.reply.data_extents[1]->offset, 10 * SU);
    ck_assert_uint_eq(r.reply.data_extents[1]->length, 2 * SU);
    ck_assert_uint_eq(r.reply.data_extents[2]->offset, 40 * SU);
    ck_assert_uint_eq(r.reply.data_extents[2]->length, 3 * SU);
    ck_assert(!r.reply.has_next_offset);
    struct stat st;
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/strips/%016llx", tmpdir, (unsigned long long)FILE_ID);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(r.reply.alloc_bytes, (uint64_t)st.st_blocks * 512);
    ck_assert_uint_ge(r.reply.alloc_bytes, 7 * SU);    /* what was written, at least */
    ck_assert_uint_le(r.reply.alloc_bytes, 16 * SU);   /* far from the 43 units of its length */
    ck_assert_uint_eq(r.reply.local_size, 43 * SU);
    ios_result_free(&r);

    /* a range in the middle is clipped to it */
    ck_assert_int_eq(extents(FILE_ID, 4 * SU, 37 * SU, SU, &r), 0);
    ck_assert_uint_eq(r.reply.n_data_extents, 3);
    ck_assert_uint_eq(r.reply.data_extents[0]->offset, 4 * SU);
    ck_assert_uint_eq(r.reply.data_extents[0]->length, SU);
    ck_assert_uint_eq(r.reply.data_extents[2]->offset, 40 * SU);
    ck_assert_uint_eq(r.reply.data_extents[2]->length, SU);
    ios_result_free(&r);

    /* no range: the allocation alone */
    ck_assert_int_eq(extents(FILE_ID, 0, 0, 0, &r), 0);
    ck_assert(r.reply.has_alloc_bytes && r.reply.alloc_bytes >= 7 * SU);
    ck_assert_uint_eq(r.reply.n_data_extents, 0);
    ios_result_free(&r);
}
END_TEST

START_TEST(test_bounded_with_continuation)
{
    const unsigned units = WIRE_DATA_EXTENTS_MAX + 300;
    for (unsigned i = 0; i < units; i++)
        put((uint64_t)2 * i * SU, 1); /* every other unit */
    uint64_t from = 0, to = (uint64_t)2 * units * SU;
    unsigned seen = 0, replies = 0;
    while (from < to && replies < 10) {
        ios_result r;
        ck_assert_int_eq(extents(FILE_ID, from, to - from, SU, &r), 0);
        ck_assert_uint_le(r.reply.n_data_extents, WIRE_DATA_EXTENTS_MAX);
        for (size_t i = 0; i < r.reply.n_data_extents; i++) {
            ck_assert_uint_eq(r.reply.data_extents[i]->offset, (uint64_t)2 * seen * SU);
            ck_assert_uint_eq(r.reply.data_extents[i]->length, SU);
            seen++;
        }
        replies++;
        bool more = r.reply.has_next_offset;
        if (more) {
            ck_assert_uint_gt(r.reply.next_offset, from);
            ck_assert_uint_eq(r.reply.next_offset % SU, 0);
            from = r.reply.next_offset;
        }
        ios_result_free(&r);
        if (!more)
            break;
    }
    ck_assert_uint_eq(seen, units);
    ck_assert_uint_eq(replies, 2);
}
END_TEST

START_TEST(test_scan_stops_when_full)
{
    put(0, 1);
    put(5 * SU, 1);
    put(9 * SU, 1);
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/strips/%016llx", tmpdir, (unsigned long long)FILE_ID);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ios_extent v[2];
    ios_data_map m = { .v = v, .max = 2 };
    ck_assert_int_eq(ios_strip_data_scan(fd, 0, 16 * SU, SU, &m), 0);
    ck_assert_uint_eq(m.n, 2);
    ck_assert(m.more);
    ck_assert_uint_eq(m.next, 9 * SU); /* the hole before it is described */
    ck_assert_int_eq(ios_strip_data_scan(fd, m.next, 16 * SU, SU, &m), 0);
    ck_assert_uint_eq(m.n, 1);
    ck_assert(!m.more);
    ck_assert_uint_eq(v[0].offset, 9 * SU);
    close(fd);
}
END_TEST

START_TEST(test_refused)
{
    ios_result r;
    ck_assert_int_eq(extents(FILE_ID, 100, SU, SU, &r), EINVAL);  /* not whole units */
    ios_result_free(&r);
    ck_assert_int_eq(extents(FILE_ID, 0, SU + 512, SU, &r), EINVAL);
    ios_result_free(&r);
    ck_assert_int_eq(extents(FILE_ID, 0, SU, 0, &r), EINVAL);     /* no stripe unit */
    ios_result_free(&r);
    ck_assert_int_eq(extents(FILE_ID, 0, SU, 1000, &r), EINVAL);  /* no stripe unit size */
    ios_result_free(&r);
    ck_assert_int_eq(extents(0, 0, SU, SU, &r), EINVAL);          /* file id 0 */
    ios_result_free(&r);
    ck_assert_int_eq(extents(FILE_ID, 0, (uint64_t)1 << 62, SU, &r), EFBIG); /* past a strip */
    ios_result_free(&r);

    /* two ranges */
    Depfs__IoRequest q = DEPFS__IO_REQUEST__INIT;
    Depfs__Extent e[2] = { DEPFS__EXTENT__INIT, DEPFS__EXTENT__INIT }, *ep[2] = { &e[0], &e[1] };
    e[0].length = e[1].length = SU;
    e[1].offset = SU;
    q.file_id = FILE_ID;
    q.n_extents = 2;
    q.extents = ep;
    q.has_stripe_unit = 1;
    q.stripe_unit = SU;
    uint8_t buf[256];
    size_t len = depfs__io_request__pack(&q, buf);
    ios_process(&hctx, DEPFS__IO_OP__IO_EXTENTS, buf, len, NULL, 0, "test", NULL, &r);
    ck_assert_int_eq(r.reply.err, EINVAL);
    ios_result_free(&r);

    /* a REBUILDING server's holes mean nothing */
    put(0, 1);
    ck_assert_int_eq(ios_state_set(hctx.state, DEPFS__SERVER_STATE__SERVER_REBUILDING), 0);
    ck_assert_int_eq(extents(FILE_ID, 0, SU, SU, &r), EIO);
    ios_result_free(&r);

    /* ticket holders need a capability with READ rights */
    ck_assert_uint_eq(io_caps_needed(DEPFS__IO_OP__IO_EXTENTS, &q), AUTH_CAP_READ);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("strip_extents");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_units_rounded_and_merged);
    tcase_add_test(tc, test_bounded_with_continuation);
    tcase_add_test(tc, test_scan_stops_when_full);
    tcase_add_test(tc, test_refused);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
