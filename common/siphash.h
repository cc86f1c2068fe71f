/* siphash.h - SipHash-2-4 with a 128-bit output (Aumasson and Bernstein's
 * PRF for short inputs; libsodium's crypto_shorthash_siphashx24), fed in
 * pieces: the frame tags of common/auth.c cover a frame header, a sequence
 * number and a protobuf header that lie in separate buffers, and
 * libsodium only hashes one contiguous message. The unit test checks every
 * length and split against libsodium. */
#ifndef DEPFS_SIPHASH_H
#define DEPFS_SIPHASH_H
#include <stddef.h>
#include <stdint.h>

#define SIPHASH_KEY_BYTES 16u
#define SIPHASH128_BYTES 16u

typedef struct siphash128_state {
    uint64_t v0, v1, v2, v3;
    uint64_t total;   /* bytes fed so far */
    uint8_t buf[8];   /* a partial word, buf_len bytes */
    unsigned buf_len;
} siphash128_state;

void siphash128_init(siphash128_state *st, const uint8_t key[SIPHASH_KEY_BYTES]);
void siphash128_update(siphash128_state *st, const void *data, size_t len);
/* Writes the tag; the state then holds key-derived values (wipe it). */
void siphash128_final(siphash128_state *st, uint8_t out[SIPHASH128_BYTES]);

#endif
