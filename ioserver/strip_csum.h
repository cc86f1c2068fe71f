/* strip_csum.h - the checksum sidecar of a strip file (issue 12: a flipped
 * or lost byte on disk must be found, never returned).
 *
 * Strip file DATADIR/strips/<id> has a sidecar <id>.crc: a header, then one
 * entry per checksum block of the strip file (block b covers local bytes
 * [b*B, (b+1)*B)). An entry is the block's CRC32C (u32, little endian)
 * followed by a tag (u32): IOS_CSUM_TAG_OK for a valid checksum,
 * IOS_CSUM_TAG_BAD for a block known to be damaged (a partial write into a
 * block whose old bytes failed their check: the new bytes are stored, the
 * block stays unreadable until a repair rewrites it whole), and all zeros
 * for "no checksum":
 *   - in a sidecar created with its strip file (IOS_CSUM_COMPLETE), a block
 *     never written: it must read as zeros (a hole);
 *   - in a sidecar added to a strip file that predates checksums, a block
 *     not rewritten since: not verified (the upgrade path).
 * The block size B is chosen when the sidecar is created:
 * block_crc_size_for(the layout's stripe unit) (common/block_crc.h, the
 * size the writes' block CRCs are cut at), so the units of different
 * stripes (written under different stripe locks) never share a block.
 * Sidecars are sparse like their strip files.
 *
 * These functions do the format and the math on open descriptors; callers
 * (strips.c) order them against the data writes and serialize writers. */
#ifndef DEPFS_IOS_STRIP_CSUM_H
#define DEPFS_IOS_STRIP_CSUM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "block_crc.h"

#define IOS_CSUM_SUFFIX ".crc"
#define IOS_CSUM_MAGIC "DEPFSCRC"
#define IOS_CSUM_VERSION 1u
#define IOS_CSUM_HEADER_BYTES 32u
#define IOS_CSUM_ENTRY_BYTES 8u
#define IOS_CSUM_TAG_OK 0x4b4f4344u  /* "DCOK" */
#define IOS_CSUM_TAG_BAD 0x44414244u /* "DBAD" */
#define IOS_CSUM_COMPLETE 1u         /* header flag: zero entries are holes */

typedef struct ios_csum_hdr {
    uint32_t version;
    uint32_t block;   /* bytes per checksum block */
    uint32_t flags;   /* IOS_CSUM_COMPLETE */
} ios_csum_hdr;

typedef struct ios_csum_entry {
    uint32_t crc;
    uint32_t tag; /* 0 (none), IOS_CSUM_TAG_OK or IOS_CSUM_TAG_BAD */
} ios_csum_entry;

/* Writes a fresh header to the (empty) sidecar cfd. */
int ios_csum_header_write(int cfd, const ios_csum_hdr *h);
/* Reads and checks the header: -EBADMSG when it is not one we know. */
int ios_csum_header_read(int cfd, ios_csum_hdr *h);

/* Entries of blocks [first, first+n) (zeros past the sidecar's end). */
int ios_csum_entries_read(int cfd, uint64_t first, uint64_t n, ios_csum_entry *out);
int ios_csum_entries_write(int cfd, uint64_t first, uint64_t n, const ios_csum_entry *in);
/* Bytes of strip file the sidecar holds entries for (its blocks * B). */
int ios_csum_covered_bytes(int cfd, const ios_csum_hdr *h, uint64_t *bytes);
/* Drops the entries of blocks >= n_blocks. */
int ios_csum_entries_truncate(int cfd, uint64_t n_blocks);

/* The valid entry of one block's bytes. */
ios_csum_entry ios_csum_of(const uint8_t *block, uint32_t len);
/* Whether a block's bytes match its entry under the header's rules. */
bool ios_csum_matches(const ios_csum_hdr *h, const ios_csum_entry *e, const uint8_t *block,
                      uint32_t len);

#endif
