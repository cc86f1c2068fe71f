/* test_block_crc.c - the block CRCs a write carries (common/block_crc.c):
 * block sizes, how extents are cut into pieces, the pieces' CRCs and the
 * bulk CRC made in the same pass (across memory segments that do not line
 * up with the pieces), and the check that names the first bad piece. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "block_crc.h"
#include "crc32c.h"
#include "tests/lib/rng.h"

START_TEST(block_sizes)
{
    ck_assert_uint_eq(block_crc_size_for(0), BLOCK_CRC_MAX);
    ck_assert_uint_eq(block_crc_size_for(512), 512);
    ck_assert_uint_eq(block_crc_size_for(1536), 512);
    ck_assert_uint_eq(block_crc_size_for(6144), 2048);
    ck_assert_uint_eq(block_crc_size_for(65536), 4096);
    ck_assert(block_crc_size_valid(512) && block_crc_size_valid(4096));
    ck_assert(!block_crc_size_valid(0) && !block_crc_size_valid(256) &&
              !block_crc_size_valid(8192) && !block_crc_size_valid(1536));
    for (uint32_t b = BLOCK_CRC_MIN; b <= BLOCK_CRC_MAX; b *= 2)
        ck_assert_uint_eq(block_crc_shift(b)->len, b);
}
END_TEST

START_TEST(pieces_cut_at_block_multiples)
{
    ck_assert_uint_eq(block_crc_pieces(0, 0, 4096), 0);
    ck_assert_uint_eq(block_crc_pieces(0, 1, 4096), 1);
    ck_assert_uint_eq(block_crc_pieces(0, 4096, 4096), 1);
    ck_assert_uint_eq(block_crc_pieces(0, 4097, 4096), 2);
    ck_assert_uint_eq(block_crc_pieces(4095, 2, 4096), 2);
    ck_assert_uint_eq(block_crc_pieces(100, 3 * 4096, 4096), 4);
    ck_assert_uint_eq(block_crc_pieces(8192, 8192, 4096), 2);
    ck_assert_uint_eq(block_crc_pieces(1ull << 49, 512, 512), 1);
}
END_TEST

#define EXT 3
#define BYTES (5 * 4096 + 3 * 4096)

/* Extents of odd offsets and lengths over memory cut in odd segments: each
 * piece's CRC is the CRC of its bytes, the returned CRC that of all bytes,
 * for every block size. */
START_TEST(piece_crcs_and_bulk_crc_in_one_pass)
{
    static uint8_t buf[BYTES];
    rnd_fill(buf, sizeof buf);
    const uint64_t off[EXT] = {100, 5 * 4096, 9 * 4096 + 4000};
    const uint64_t len[EXT] = {4 * 4096 + 7, 4096, BYTES - (4 * 4096 + 7) - 4096};
    struct iovec iov[4] = {{buf, 1}, {buf + 1, 4099}, {buf + 4100, 9000},
                           {buf + 13100, BYTES - 13100}};
    for (uint32_t b = BLOCK_CRC_MIN; b <= BLOCK_CRC_MAX; b *= 2) {
        uint32_t crcs[128], *out = crcs, crc = 0;
        block_crc_cursor cur = {.iov = iov, .n_iov = 4};
        size_t n = 0;
        for (int i = 0; i < EXT; i++) {
            n += block_crc_pieces(off[i], len[i], b);
            ck_assert_uint_le(n, 128);
            crc = block_crc_extent(b, off[i], len[i], &cur, out, crc);
            out = crcs + n;
        }
        ck_assert_uint_eq(crc, crc32c(0, buf, sizeof buf));
        ck_assert_int_eq(cur.i, 4);
        const uint8_t *p = buf;
        const uint32_t *c = crcs;
        for (int i = 0; i < EXT; i++) {
            for (uint64_t at = off[i]; at < off[i] + len[i];) {
                uint64_t stop = (at / b + 1) * b;
                if (stop > off[i] + len[i])
                    stop = off[i] + len[i];
                ck_assert_uint_eq(*c++, crc32c(0, p, stop - at));
                p += stop - at;
                at = stop;
            }
            ck_assert_uint_eq(block_crc_verify(b, off[i], len[i], p - len[i],
                                               c - block_crc_pieces(off[i], len[i], b)), 0);
        }
        ck_assert_uint_eq((size_t)(c - crcs), n);
    }
}
END_TEST

START_TEST(verify_names_the_first_bad_piece)
{
    static uint8_t buf[3 * 4096];
    rnd_fill(buf, sizeof buf);
    uint32_t crcs[4];
    struct iovec v = {buf, sizeof buf - 50};
    block_crc_cursor cur = {.iov = &v, .n_iov = 1};
    block_crc_extent(4096, 50, sizeof buf - 50, &cur, crcs, 0);
    ck_assert_uint_eq(block_crc_verify(4096, 50, sizeof buf - 50, buf, crcs), 0);
    buf[4096 + 10] ^= 1; /* local offset 50 + 4106: the whole piece at 4096 */
    ck_assert_uint_eq(block_crc_verify(4096, 50, sizeof buf - 50, buf, crcs), 4096 + 1);
    buf[4096 + 10] ^= 1;
    buf[0] ^= 0x80;      /* the first, partial piece at 50 */
    ck_assert_uint_eq(block_crc_verify(4096, 50, sizeof buf - 50, buf, crcs), 50 + 1);
}
END_TEST

int main(void)
{
    seed_rng();
    Suite *s = suite_create("block_crc");
    TCase *tc = tcase_create("block_crc");
    tcase_add_test(tc, block_sizes);
    tcase_add_test(tc, pieces_cut_at_block_multiples);
    tcase_add_test(tc, piece_crcs_and_bulk_crc_in_one_pass);
    tcase_add_test(tc, verify_names_the_first_bad_piece);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
