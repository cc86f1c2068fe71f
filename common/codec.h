/* codec.h - the systematic k-of-n Reed-Solomon code over GF(2^8) (ISA-L).
 *
 * Units 0..k-1 are data, k..n-1 parity. The generator is ISA-L's Cauchy
 * matrix (gf_gen_cauchy1_matrix), MDS for every (n,k): any k units rebuild
 * the rest. The matrix is on-disk format: layouts record codec_version.
 * A codec is immutable after creation and safe to share between threads.
 * Return convention: 0 on success, negative errno on failure. */
#ifndef DEPFS_CODEC_H
#define DEPFS_CODEC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CODEC_VERSION_CAUCHY1 1u
#define CODEC_VERSION_CURRENT CODEC_VERSION_CAUCHY1
#define CODEC_MAX_UNITS 32u /* n <= CODEC_MAX_UNITS */

typedef struct codec codec;

/* -EINVAL for k == 0, k > n, n > CODEC_MAX_UNITS or an unknown version. */
int codec_create(unsigned n, unsigned k, unsigned version, codec **out);
void codec_free(codec *c);
unsigned codec_n(const codec *c);
unsigned codec_k(const codec *c);

/* parity[0..n-k-1] = encode(data[0..k-1]); every buffer is `len` bytes. */
void codec_encode(const codec *c, size_t len, uint8_t *const *data, uint8_t *const *parity);

/* units[0..n-1]: the n units of one stripe. Units with present[i] true hold
 * valid bytes; every other unit is an output buffer that is rebuilt (data
 * and parity alike). Returns -EIO when fewer than k units are present. */
int codec_decode(const codec *c, size_t len, uint8_t *const *units, const bool *present);

/* As codec_decode, but rebuilds only the missing units with want[i] true
 * (want NULL: every missing unit); other missing buffers are left alone and
 * may be NULL. Returns 0 without work when nothing wanted is missing. */
int codec_decode_want(const codec *c, size_t len, uint8_t *const *units, const bool *present,
                      const bool *want);

/* Delta parity update for data unit `data_index` (0..k-1): for every parity
 * unit p, parity[p] ^= coefficient(p, data_index) * delta, where delta is
 * old XOR new bytes of that data unit over the same `len` byte range.
 * parity[] holds the n-k parity buffers over that same range. */
void codec_update(const codec *c, size_t len, unsigned data_index, const uint8_t *delta,
                  uint8_t *const *parity);

#endif
