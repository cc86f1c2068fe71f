/* fuzz_input.h - the input format of the request-handler fuzz targets
 * (fuzz_mds.c, fuzz_ioserver.c) and of their seed generator (gen_seeds.c):
 * a sequence of at most FUZZ_MAX_REQUESTS requests, each
 *
 *   [type u8][hdr_len u16 LE][bulk_len u16 LE][hdr_len bytes][bulk_len bytes]
 *
 * type is the frame type (an MdsOp or IoOp; any other value tests the
 * unknown-op path), hdr the protobuf header, bulk the bytes after it (the
 * MDS reads none: fuzz_mds takes its first byte for the caller). A length
 * running past the input is cut to what is left, so every input means
 * something. Header only: the targets are separate programs. */
#ifndef DEPFS_FUZZ_INPUT_H
#define DEPFS_FUZZ_INPUT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FUZZ_MAX_REQUESTS 8u
#define FUZZ_RECORD_HEAD_BYTES 5u /* type, hdr_len, bulk_len */

typedef struct fuzz_req {
    uint16_t type;
    const uint8_t *hdr;
    size_t hdr_len;
    const uint8_t *bulk;
    size_t bulk_len;
} fuzz_req;

static inline size_t fuzz_take(const uint8_t **data, size_t *size, size_t want)
{
    size_t n = want < *size ? want : *size;
    *data += n;
    *size -= n;
    return n;
}

/* The next request of the input; false when none is left. */
static inline bool fuzz_next(const uint8_t **data, size_t *size, fuzz_req *r)
{
    if (*size < FUZZ_RECORD_HEAD_BYTES)
        return false;
    const uint8_t *p = *data;
    r->type = p[0];
    size_t hdr_len = (size_t)p[1] | (size_t)p[2] << 8;
    size_t bulk_len = (size_t)p[3] | (size_t)p[4] << 8;
    fuzz_take(data, size, FUZZ_RECORD_HEAD_BYTES);
    r->hdr = *data;
    r->hdr_len = fuzz_take(data, size, hdr_len);
    r->bulk = *data;
    r->bulk_len = fuzz_take(data, size, bulk_len);
    return true;
}

/* Writes one record head for (type, hdr_len, bulk_len) into out. */
static inline void fuzz_put_head(uint8_t out[FUZZ_RECORD_HEAD_BYTES], uint8_t type,
                                 uint16_t hdr_len, uint16_t bulk_len)
{
    out[0] = type;
    out[1] = (uint8_t)hdr_len;
    out[2] = (uint8_t)(hdr_len >> 8);
    out[3] = (uint8_t)bulk_len;
    out[4] = (uint8_t)(bulk_len >> 8);
}

#endif
