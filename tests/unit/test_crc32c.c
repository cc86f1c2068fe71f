/* test_crc32c.c - CRC32C check value, known vectors, chaining and combining. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"

START_TEST(test_check_value)
{
    ck_assert_uint_eq(crc32c(0, "123456789", 9), 0xE3069283u);
    ck_assert_uint_eq(crc32c(0, "", 0), 0);
    ck_assert_uint_eq(crc32c(0x12345678u, "", 0), 0x12345678u);
}
END_TEST

/* RFC 3720 (iSCSI) B.4 test vectors. */
START_TEST(test_rfc3720_vectors)
{
    uint8_t buf[32];
    memset(buf, 0, sizeof(buf));
    ck_assert_uint_eq(crc32c(0, buf, sizeof(buf)), 0x8A9136AAu);
    memset(buf, 0xff, sizeof(buf));
    ck_assert_uint_eq(crc32c(0, buf, sizeof(buf)), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)i;
    ck_assert_uint_eq(crc32c(0, buf, sizeof(buf)), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)(31 - i);
    ck_assert_uint_eq(crc32c(0, buf, sizeof(buf)), 0x113FDB5Cu);
}
END_TEST

START_TEST(test_chaining)
{
    enum { LEN = 10007 };
    uint8_t *buf = malloc(LEN);
    ck_assert_ptr_nonnull(buf);
    uint32_t x = 1;
    for (int i = 0; i < LEN; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    uint32_t whole = crc32c(0, buf, LEN);
    for (size_t cut = 0; cut <= LEN; cut += 997) {
        uint32_t part = crc32c(crc32c(0, buf, cut), buf + cut, LEN - cut);
        ck_assert_uint_eq(part, whole);
    }
    /* byte at a time */
    uint32_t crc = 0;
    for (int i = 0; i < LEN; i++)
        crc = crc32c(crc, buf + i, 1);
    ck_assert_uint_eq(crc, whole);
    /* a single flipped bit changes the checksum */
    buf[LEN / 2] ^= 0x10;
    ck_assert_uint_ne(crc32c(0, buf, LEN), whole);
    free(buf);
}
END_TEST

/* Combining block checksums without the bytes: for blocks of several
 * lengths (an op longer than its zero chunk too), the shifted CRC of what
 * came before XOR the block's own CRC is the CRC of the whole. */
START_TEST(test_shift_combines)
{
    enum { LEN = 3 * 8192 + 77 };
    uint8_t *buf = malloc(LEN);
    ck_assert_ptr_nonnull(buf);
    uint32_t x = 7;
    for (int i = 0; i < LEN; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    static crc32c_shift_op op;
    const size_t lens[] = { 1, 512, 4096, 8192 };
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
        size_t B = lens[l];
        crc32c_shift_init(&op, B);
        ck_assert_uint_eq(op.len, B);
        uint32_t acc = crc32c(0, buf, 77); /* a head of another length */
        for (size_t off = 77; off + B <= LEN; off += B) {
            acc = crc32c_shift(&op, acc) ^ crc32c(0, buf + off, B);
            ck_assert_uint_eq(acc, crc32c(0, buf, off + B));
        }
    }
    free(buf);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("crc32c");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_check_value);
    tcase_add_test(tc, test_rfc3720_vectors);
    tcase_add_test(tc, test_chaining);
    tcase_add_test(tc, test_shift_combines);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
