/* block_crc.c - pieces, block sizes and the CRCs of block_crc.h. */
#include "block_crc.h"

#include <assert.h>
#include <pthread.h>

static crc32c_shift_op shift_ops[BLOCK_CRC_SIZES];
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

static void shift_init(void)
{
    for (unsigned i = 0; i < BLOCK_CRC_SIZES; i++)
        crc32c_shift_init(&shift_ops[i], (size_t)BLOCK_CRC_MIN << i);
}

uint32_t block_crc_size_for(uint32_t su)
{
    if (su == 0)
        return BLOCK_CRC_MAX;
    uint32_t b = BLOCK_CRC_MAX;
    while (b > BLOCK_CRC_MIN && su % b != 0)
        b /= 2;
    return b;
}

bool block_crc_size_valid(uint32_t b)
{
    return b >= BLOCK_CRC_MIN && b <= BLOCK_CRC_MAX && (b & (b - 1)) == 0;
}

const crc32c_shift_op *block_crc_shift(uint32_t b)
{
    assert(block_crc_size_valid(b));
    pthread_once(&shift_once, shift_init);
    unsigned i = 0;
    while ((BLOCK_CRC_MIN << i) != b)
        i++;
    return &shift_ops[i];
}

uint64_t block_crc_pieces(uint64_t off, uint64_t len, uint32_t b)
{
    if (len == 0)
        return 0;
    return (off + len - 1) / b - off / b + 1;
}

/* Carries *piece (the piece's own CRC) and *crc (the bulk's) over the next
 * len bytes at cur. */
static void take_bytes(block_crc_cursor *cur, uint64_t len, uint32_t *piece, uint32_t *crc)
{
    while (len > 0) {
        assert(cur->i < cur->n_iov);
        const struct iovec *v = &cur->iov[cur->i];
        size_t n = v->iov_len - cur->used;
        if (n > len)
            n = (size_t)len;
        const uint8_t *p = (const uint8_t *)v->iov_base + cur->used;
        *piece = crc32c(*piece, p, n);
        if (crc != NULL)
            *crc = crc32c(*crc, p, n);
        cur->used += n;
        len -= n;
        if (cur->used == v->iov_len) {
            cur->i++;
            cur->used = 0;
        }
    }
}

uint32_t block_crc_extent(uint32_t b, uint64_t off, uint64_t len, block_crc_cursor *cur,
                          uint32_t *out, uint32_t crc)
{
    const crc32c_shift_op *op = block_crc_shift(b);
    uint64_t end = off + len;
    for (uint64_t at = off; at < end;) {
        uint64_t stop = (at / b + 1) * b;
        if (stop > end)
            stop = end;
        uint32_t piece = 0;
        if (stop - at == b) { /* a whole block: one pass, the bulk CRC combined */
            take_bytes(cur, b, &piece, NULL);
            crc = crc32c_shift(op, crc) ^ piece;
        } else { /* an edge: short, both carried over its bytes */
            take_bytes(cur, stop - at, &piece, &crc);
        }
        *out++ = piece;
        at = stop;
    }
    return crc;
}

uint64_t block_crc_verify(uint32_t b, uint64_t off, uint64_t len, const uint8_t *buf,
                          const uint32_t *crcs)
{
    uint64_t end = off + len;
    for (uint64_t at = off; at < end;) {
        uint64_t stop = (at / b + 1) * b;
        if (stop > end)
            stop = end;
        if (crc32c(0, buf + (at - off), stop - at) != *crcs++)
            return at + 1;
        at = stop;
    }
    return 0;
}
