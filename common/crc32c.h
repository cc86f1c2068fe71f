/* crc32c.h - CRC32C (Castagnoli) checksums, backed by ISA-L crc32_iscsi.
 * Standard CRC32C: crc32c(0, "123456789", 9) == 0xE3069283. Chainable:
 * crc32c(crc32c(0, a, n), b, m) == crc32c(0, a||b, n+m). */
#ifndef DEPFS_CRC32C_H
#define DEPFS_CRC32C_H
#include <stddef.h>
#include <stdint.h>

uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

#endif
