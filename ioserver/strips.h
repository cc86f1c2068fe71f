/* strips.h - the ioserver's strip files: one local file per DePFS file,
 * DATADIR/strips/<16 lowercase hex digits of the 64-bit file id>. Names come
 * from the id only, never from client text. The unit of stripe s sits at
 * local offset s*su (the caller computes offsets; this module stores bytes).
 *
 * Every block of a strip file carries a CRC32C in a sidecar file
 * (strip_csum.h): reads check every block they return and fail with
 * -EBADMSG on a damaged one; writes keep the checksums right. Reads past a
 * strip file's end, or of a file never written, return zeros; a strip file
 * missing beside its sidecar was lost: -ENODATA. Writes create the file
 * (mode 0600). Open descriptors live in a bounded LRU cache shared by all
 * threads. Return convention: 0 or negative errno. */
#ifndef DEPFS_IOS_STRIPS_H
#define DEPFS_IOS_STRIPS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"

#define IOS_STRIPS_SUBDIR "strips"
#define IOS_STRIP_NAME_LEN 17u /* 16 hex digits + NUL */
#define IOS_STRIPS_DEFAULT_OPEN_FILES 1024u
/* Strip files never pass this many bytes (LAYOUT_MAX_STRIP_BYTES); the file
 * system of the data dir may allow less (ios_strips_max_local_bytes). */
#define IOS_STRIP_BYTES_CAP LAYOUT_MAX_STRIP_BYTES

typedef struct ios_extent {
    uint64_t offset;
    uint64_t length;
} ios_extent;

typedef struct ios_strips ios_strips;

/* Creates DATADIR/strips if needed. max_open_files 0 = default. */
int ios_strips_open(const char *data_dir, unsigned max_open_files, ios_strips **out);
void ios_strips_close(ios_strips *s);

/* The most bytes a strip file may hold here: IOS_STRIP_BYTES_CAP, or less
 * when the data dir's file system stops earlier (ext4: 16 TiB), found when
 * the strips were opened; a multiple of LAYOUT_MAX_SU. Requests reaching
 * past it are refused before anything is stored (EFBIG), so the server
 * never half-stores a unit the file system cannot hold. */
uint64_t ios_strips_max_local_bytes(const ios_strips *s);

/* The strip file name (relative to DATADIR/strips) of file_id. */
void ios_strip_name(uint64_t file_id, char out[IOS_STRIP_NAME_LEN]);

/* Which units of a strip file a reader wants, when it wants only the data
 * units of its layout (a fault-free read, IoRequest.data_units): the
 * layout's n and k, this server's position in it and the stripe unit. */
typedef struct ios_data_units {
    uint32_t n, k, pos, su;
} ios_data_units;

/* Reads the extents into buf, one after another (buf holds the sum of the
 * extent lengths). crc (may be NULL) gets the CRC32C of the bytes read,
 * made from the checksums they were verified against wherever whole
 * blocks were read: the reply carries it, so the client checks the bytes
 * it receives against what was stored, without a second pass here.
 * The extents' disk reads start together, and a sequential reader's next
 * units are read ahead (strip_readahead.h): only the ones `want` names
 * (NULL: every unit). */
int ios_strips_read(ios_strips *s, uint64_t file_id, const ios_extent *ext, size_t n_ext,
                    uint8_t *buf, uint32_t *crc, const ios_data_units *want);
/* ios_strips_read without checking the blocks against their checksums (the
 * bytes as stored; crc made from them): for units an interrupted write left
 * in doubt, whose blocks may have been cut between bytes and checksum. */
int ios_strips_read_unverified(ios_strips *s, uint64_t file_id, const ios_extent *ext,
                               size_t n_ext, uint8_t *buf, uint32_t *crc);
/* The client's CRC of every piece of a write (common/block_crc.h): the
 * extents cut at multiples of block, in order. */
typedef struct ios_block_crcs {
    uint32_t block;
    const uint32_t *crcs;
} ios_block_crcs;

/* Writes buf (extents' bytes concatenated) at the extents. su: the layout's
 * stripe unit (0: unknown), which sizes the checksum blocks of a new file.
 * want (may be NULL): the client's CRCs of the bytes; where the file has
 * checksums, every piece is checked against them before it is stored (a
 * whole block's CRC is then the checksum stored for it), and a mismatch
 * fails the write with -EIO (logged): the bytes changed after the client
 * made them, in this server's memory or on the way past the frame check.
 * A long extent's bytes start for the disk at once (strips.c:
 * start_writeback); durable only after ios_strips_fsync, as ever. */
int ios_strips_write(ios_strips *s, uint64_t file_id, const ios_extent *ext, size_t n_ext,
                     const uint8_t *buf, uint32_t su, const ios_block_crcs *want);
/* Sets the strip file's length; an absent file stays absent. */
int ios_strips_truncate(ios_strips *s, uint64_t file_id, uint64_t local_size);
/* Unlinks the strip file; absent is fine. */
int ios_strips_remove(ios_strips *s, uint64_t file_id);
/* fdatasync; absent is fine. */
int ios_strips_fsync(ios_strips *s, uint64_t file_id);
/* The upgrade path: a strip file from before checksums (no sidecar, or
 * one added by a write, whose untouched blocks have none) gets the
 * checksums of the bytes it holds now, block by block under the region
 * locks (smallest blocks: the stripe unit is not known). *adopted: how
 * many blocks got one. A strip file whose checksums came with it is left
 * alone. */
int ios_strips_adopt(ios_strips *s, uint64_t file_id, uint64_t *adopted);
/* How far a strip file must be verified: its length, or further when its
 * sidecar holds checksums past it (a strip file cut short or recreated:
 * those blocks read as zeros and fail their checks). 0 when absent,
 * -ENODATA when lost. */
int ios_strips_checked_size(ios_strips *s, uint64_t file_id, uint64_t *size);
/* Where the strip file holds data and what it occupies (IO_EXTENTS,
 * strip_extents.h): *alloc_bytes (st_blocks x 512; the sidecar is not
 * counted) and *size always; with from < to (multiples of granule) the
 * data of [from, to) in m, as ios_strip_data_scan. An absent file has no
 * data and occupies nothing; a lost one: -ENODATA. */
struct ios_data_map;
int ios_strips_data_map(ios_strips *s, uint64_t file_id, uint64_t from, uint64_t to,
                        uint32_t granule, struct ios_data_map *m, uint64_t *alloc_bytes,
                        uint64_t *size);
/* Length of the strip file (0 when absent). */
int ios_strips_size(ios_strips *s, uint64_t file_id, uint64_t *size);
/* Calls fn for every strip file (lost: false) and every sidecar whose strip
 * file is gone (lost: true), in directory order, until fn returns false.
 * Files made or removed meanwhile may or may not be seen; a strip being
 * removed is never called lost. */
typedef bool (*ios_strip_walk_fn)(void *arg, uint64_t file_id, bool lost);
int ios_strips_walk(ios_strips *s, ios_strip_walk_fn fn, void *arg);
/* File system usage of the data directory, bytes. */
int ios_strips_usage(ios_strips *s, uint64_t *used, uint64_t *avail);
/* Blocks reads found damaged since start. */
uint64_t ios_strips_csum_errors(ios_strips *s);
/* Number of descriptors cached now (tests). */
unsigned ios_strips_cached(ios_strips *s);

#endif
