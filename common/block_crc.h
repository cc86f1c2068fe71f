/* block_crc.h - the CRC32C of every checksum block a write carries (issue
 * 12: checksums end to end). The client computes them from the bytes it
 * sends; the I/O server checks the bytes against them where it makes the
 * checksums it stores (ioserver/strips.c), so a byte that changes anywhere
 * between the client's buffer and the server's checksum is refused, not
 * stored under a checksum that vouches for it.
 *
 * Pieces: each extent of a write (strip-local offsets) is cut at multiples
 * of the block size B; every piece, in extent order, has the CRC32C of its
 * bytes (IoRequest.block_crcs, with B in IoRequest.crc_block). A whole
 * block's piece CRC is the checksum the server stores for it; an edge
 * piece (a partial block) is checked alone and merged with the block's old
 * bytes there.
 *
 * B for a layout is the checksum block of its stripe unit: the largest
 * power of two <= BLOCK_CRC_MAX that divides it (BLOCK_CRC_MIN at least),
 * so units of different stripes, which different stripe locks guard, never
 * share a block. */
#ifndef DEPFS_BLOCK_CRC_H
#define DEPFS_BLOCK_CRC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "crc32c.h"

#define BLOCK_CRC_MIN 512u
#define BLOCK_CRC_MAX 4096u
#define BLOCK_CRC_SIZES 4u /* BLOCK_CRC_MIN << 0 .. BLOCK_CRC_MIN << 3 */
_Static_assert(BLOCK_CRC_MIN << (BLOCK_CRC_SIZES - 1) == BLOCK_CRC_MAX,
               "one combining op per block size");

/* The block size for a stripe unit of su bytes (0: unknown -> BLOCK_CRC_MAX). */
uint32_t block_crc_size_for(uint32_t su);
/* Whether b is a block size (a power of two in [BLOCK_CRC_MIN, BLOCK_CRC_MAX]). */
bool block_crc_size_valid(uint32_t b);
/* The op combining a CRC over one block of b bytes (crc32c.h), for a valid b. */
const crc32c_shift_op *block_crc_shift(uint32_t b);

/* Pieces of the extent [off, off+len) cut at multiples of b (0 for len 0). */
uint64_t block_crc_pieces(uint64_t off, uint64_t len, uint32_t b);

/* Where the next bytes of a write's bulk come from. */
typedef struct block_crc_cursor {
    const struct iovec *iov;
    int n_iov;
    int i;        /* current segment */
    size_t used;  /* bytes of it already taken */
} block_crc_cursor;

/* The CRCs of the pieces of extent [off, off+len), whose bytes are the next
 * len bytes at cur, into out[0 .. block_crc_pieces()); returns crc (the
 * CRC32C of the bulk before them) carried over those bytes, so a caller
 * gets the frame's bulk CRC without a second pass. */
uint32_t block_crc_extent(uint32_t b, uint64_t off, uint64_t len, block_crc_cursor *cur,
                          uint32_t *out, uint32_t crc);

/* Checks buf (the bytes of extent [off, off+len)) against their pieces'
 * CRCs: 0 when all match, else the strip-local offset of the first piece
 * that does not, + 1. */
uint64_t block_crc_verify(uint32_t b, uint64_t off, uint64_t len, const uint8_t *buf,
                          const uint32_t *crcs);

#endif
