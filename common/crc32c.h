/* crc32c.h - CRC32C (Castagnoli) checksums, backed by ISA-L crc32_iscsi.
 * Standard CRC32C: crc32c(0, "123456789", 9) == 0xE3069283. Chainable:
 * crc32c(crc32c(0, a, n), b, m) == crc32c(0, a||b, n+m). */
#ifndef DEPFS_CRC32C_H
#define DEPFS_CRC32C_H
#include <stddef.h>
#include <stdint.h>

uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

/* Combining without the bytes: for a fixed length L, an op such that
 * crc32c(0, a||b) == crc32c_shift(op, crc32c(0, a)) ^ crc32c(0, b) for
 * every b of L bytes (a reader that verified blocks against their stored
 * checksums gets the CRC of all of them from those checksums). */
typedef struct crc32c_shift_op {
    uint32_t t[4][256];
    size_t len;
} crc32c_shift_op;
#define CRC32C_SHIFT_CHUNK 4096u /* zeros fed at once while building an op */
void crc32c_shift_init(crc32c_shift_op *op, size_t len);
uint32_t crc32c_shift(const crc32c_shift_op *op, uint32_t crc);

#endif
