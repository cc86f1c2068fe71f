/* test_siphash.c - the incremental SipHash-2-4-128 of common/siphash.h
 * against libsodium's one-shot crypto_shorthash_siphashx24: every length up
 * to a few words past a 256-byte header, fed whole, byte by byte and in
 * pieces of every size; and that key and message bytes all matter. */
#include <check.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "siphash.h"

#define MAX_LEN 300u

_Static_assert(SIPHASH_KEY_BYTES == crypto_shorthash_siphashx24_KEYBYTES, "key size");
_Static_assert(SIPHASH128_BYTES == crypto_shorthash_siphashx24_BYTES, "output size");

static void fill(uint8_t *buf, size_t len, uint32_t seed)
{
    for (size_t i = 0; i < len; i++) {
        seed = seed * 1103515245u + 12345u;
        buf[i] = (uint8_t)(seed >> 16);
    }
}

static void ours_in_pieces(const uint8_t *key, const uint8_t *msg, size_t len, size_t piece,
                           uint8_t out[SIPHASH128_BYTES])
{
    siphash128_state st;
    siphash128_init(&st, key);
    for (size_t off = 0; off < len; off += piece)
        siphash128_update(&st, msg + off, len - off < piece ? len - off : piece);
    siphash128_final(&st, out);
}

START_TEST(test_matches_libsodium)
{
    ck_assert_int_ge(sodium_init(), 0);
    uint8_t key[SIPHASH_KEY_BYTES], msg[MAX_LEN], want[SIPHASH128_BYTES], got[SIPHASH128_BYTES];
    for (size_t len = 0; len <= MAX_LEN; len++) {
        fill(key, sizeof(key), (uint32_t)len);
        fill(msg, len, (uint32_t)len + 7u);
        crypto_shorthash_siphashx24(want, msg, len, key);
        for (size_t piece = 1; piece <= len + 1; piece += (piece < 17 ? 1 : 13)) {
            ours_in_pieces(key, msg, len, piece, got);
            ck_assert_msg(memcmp(want, got, sizeof(want)) == 0, "len %zu piece %zu", len,
                          piece);
        }
    }
}
END_TEST

static void hex(const uint8_t *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* The SipHash reference implementation's 128-bit vectors (key 00..0f,
 * message 00..len-1) for len 0 and 15; tests/integration/authwire.py
 * prints the second (check-vector), tying its pure-Python copy to this. */
START_TEST(test_reference_vectors)
{
    static const struct { size_t len; const char *want; } vec[] = {
        { 0, "a3817f04ba25a8e66df67214c7550293" },
        { 15, "5493e99933b0a8117e08ec0f97cfc3d9" },
    };
    uint8_t key[SIPHASH_KEY_BYTES], msg[16], got[SIPHASH128_BYTES];
    char got_hex[2 * SIPHASH128_BYTES + 1];
    for (unsigned i = 0; i < SIPHASH_KEY_BYTES; i++)
        key[i] = (uint8_t)i;
    for (unsigned i = 0; i < sizeof(msg); i++)
        msg[i] = (uint8_t)i;
    for (size_t v = 0; v < sizeof(vec) / sizeof(vec[0]); v++) {
        ours_in_pieces(key, msg, vec[v].len, 4, got);
        hex(got, sizeof(got), got_hex);
        ck_assert_str_eq(got_hex, vec[v].want);
    }
}
END_TEST

START_TEST(test_every_bit_matters)
{
    uint8_t key[SIPHASH_KEY_BYTES], msg[64], base[SIPHASH128_BYTES], t[SIPHASH128_BYTES];
    fill(key, sizeof(key), 1);
    fill(msg, sizeof(msg), 2);
    ours_in_pieces(key, msg, sizeof(msg), sizeof(msg), base);
    for (unsigned bit = 0; bit < 8 * sizeof(msg); bit++) {
        msg[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        ours_in_pieces(key, msg, sizeof(msg), sizeof(msg), t);
        ck_assert(memcmp(base, t, sizeof(t)) != 0);
        msg[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    for (unsigned bit = 0; bit < 8 * sizeof(key); bit++) {
        key[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        ours_in_pieces(key, msg, sizeof(msg), sizeof(msg), t);
        ck_assert(memcmp(base, t, sizeof(t)) != 0);
        key[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("siphash");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_matches_libsodium);
    tcase_add_test(tc, test_reference_vectors);
    tcase_add_test(tc, test_every_bit_matters);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
