/* crc32c.c - standard CRC32C (Castagnoli) on top of ISA-L crc32_iscsi.
 * ISA-L's crc32_iscsi takes and returns the raw (non-inverted) register, so
 * the standard pre/post inversion is done here; that also makes chaining
 * work: crc32c(crc32c(0, a), b) == crc32c(0, a||b). */
#include "crc32c.h"

#include <isa-l/crc.h>
#include <limits.h>

/* crc32_iscsi takes an int length: feed big buffers in chunks. */
#define CRC32C_CHUNK_BYTES (1u << 30)

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
    unsigned char *p = (unsigned char *)buf; /* ISA-L takes a non-const pointer */
    uint32_t reg = ~crc;

    while (len > 0) {
        size_t chunk = len < CRC32C_CHUNK_BYTES ? len : CRC32C_CHUNK_BYTES;
        reg = crc32_iscsi(p, (int)chunk, reg);
        p += chunk;
        len -= chunk;
    }
    return ~reg;
}

/* ------------------------------------------------------------ combining */
/* crc32c(0, a||b) == crc32c_shift(op for |b| bytes, crc32c(0, a)) ^
 * crc32c(0, b): the CRC register is linear in its start value, and
 * advancing it over |b| zero bytes is the 32x32 bit matrix the op holds
 * as four byte-indexed tables (built once per length by running ISA-L's
 * raw register over zeros from each basis bit). */
void crc32c_shift_init(crc32c_shift_op *op, size_t len)
{
    static const unsigned char zeros[CRC32C_SHIFT_CHUNK];
    uint32_t basis[32];
    for (unsigned bit = 0; bit < 32; bit++) {
        uint32_t reg = 1u << bit;
        for (size_t left = len; left > 0;) {
            size_t n = left < sizeof zeros ? left : sizeof zeros;
            reg = crc32_iscsi((unsigned char *)zeros, (int)n, reg);
            left -= n;
        }
        basis[bit] = reg;
    }
    for (unsigned byte = 0; byte < 4; byte++)
        for (unsigned v = 0; v < 256; v++) {
            uint32_t out = 0;
            for (unsigned bit = 0; bit < 8; bit++)
                if ((v >> bit) & 1u)
                    out ^= basis[8 * byte + bit];
            op->t[byte][v] = out;
        }
    op->len = len;
}

uint32_t crc32c_shift(const crc32c_shift_op *op, uint32_t crc)
{
    return op->t[0][crc & 0xffu] ^ op->t[1][(crc >> 8) & 0xffu] ^ op->t[2][(crc >> 16) & 0xffu] ^
           op->t[3][crc >> 24];
}
