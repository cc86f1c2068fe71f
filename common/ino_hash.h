/* ino_hash.h - the one hash of inode numbers for the tables keyed by them:
 * Fibonacci hashing, which spreads the sequential numbers the MDS hands
 * out; a table takes its bucket from the high bits of the product. */
#ifndef DEPFS_INO_HASH_H
#define DEPFS_INO_HASH_H
#include <stdint.h>

#define INO_HASH_MUL 0x9E3779B97F4A7C15ull /* 2^64 / the golden ratio */

static inline uint64_t ino_hash(uint64_t ino)
{
    return ino * INO_HASH_MUL;
}

#endif
