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
