/* engines.h - the libdepfs engines (eng_*.c), called by the entry points
 * (api_*.c, recover_*.c) and built on the fan-out (io_fanout.h): the
 * stripe-lock write protocol, write-behind, reads with read-ahead and the
 * degraded stripe cache, the coherence of the two caches, truncate, strip
 * removal, fsync and scrub. An engine never calls an entry point. */
#ifndef DEPFS_CLIENT_ENGINES_H
#define DEPFS_CLIENT_ENGINES_H
#include <stdbool.h>
#include <stdint.h>
#include "io_fanout.h"
#include "eng_extent_map.h"
#include "wire_check.h"

/* Write [off, off+len) through the stripe-lock protocol (no write-behind,
 * no size update). */
int dc_write_range(depfs_t *fs, dc_inode *in, const uint8_t *buf, uint64_t off, uint64_t len,
                   bool sync);
/* One extent of new bytes: data[0] is file byte off. */
typedef struct dc_wext {
    uint64_t off, len;
    const uint8_t *data;
} dc_wext;
/* Write n extents (ascending, non-overlapping) through the stripe-lock
 * protocol, as few rounds as the request limits allow. */
int dc_write_extents(depfs_t *fs, dc_inode *in, const dc_wext *ext, unsigned n, bool sync);
/* Read [off, off+len) (already clamped to the size) into buf. */
int dc_read_range(depfs_t *fs, dc_inode *in, uint8_t *buf, uint64_t off, uint64_t len);
/* Write-behind: true when this handle buffers writes. */
bool dc_wb_enabled(const depfs_fh_t *fh);
/* Buffer (or write through) one write; handles flush-before rules. */
int dc_wb_write(depfs_fh_t *fh, const uint8_t *buf, uint64_t off, uint64_t len);
/* Flush the inode's write-behind buffer if it overlaps [off, off+len). */
int dc_wb_flush_range(depfs_t *fs, dc_inode *in, uint64_t off, uint64_t len);
/* Read-ahead (eng_read.c): drop the cached window and degraded stripes
 * (every write, flush, truncate and close of this client does: see
 * eng_cache.c); free them (inode released). */
void dc_ra_drop(dc_inode *in);
void dc_ra_free(dc_inode *in);
/* The read engine: [off, off+len) of the handle's file (already clamped to
 * size, the file's size) into buf: read-ahead window, write-behind bytes
 * of the range flushed, then striped or degraded reads. 0 or -errno. */
int dc_read(depfs_fh_t *fh, uint8_t *buf, uint64_t off, uint64_t len, uint64_t size);
/* Self-healing (eng_scrub.c): scrub stripes [first, first+count) of ino
 * with repair, as a read does after it met damaged units (it read around
 * them); every bad unit is rebuilt from good ones under the stripe locks
 * and logged with its server, stripe and unit. 0 or -errno. */
int dc_scrub_heal(depfs_t *fs, uint64_t ino, const layout *lay, uint64_t first, uint64_t count,
                  depfs_scrub_report *rep);
/* eng_cache.c: the entry points' and engines' way to write, flush and
 * release an inode's cached bytes (write-behind and read-ahead together). */
int dc_data_write(depfs_fh_t *fh, const uint8_t *buf, uint64_t off, uint64_t len);
int dc_data_flush(depfs_t *fs, dc_inode *in, uint64_t *mark, bool advance);
void dc_data_release(depfs_t *fs, dc_inode *in);
/* dc_wb_hand_partial and dc_wb_write_pieces, keeping the read-ahead
 * window coherent as dc_data_flush and dc_data_write do. */
int dc_data_hand_partial(depfs_t *fs, dc_inode *in, uint64_t *mark, depfs_piece **out,
                         size_t *n_out);
int dc_data_write_pieces(depfs_t *fs, dc_inode *in, const depfs_piece *p, unsigned n);

/* Write back any buffered data of the inode (stripes with parity): 0 or
 * this write-out's error. Errors reach the handles as Linux's errseq does:
 * every failure to write buffered bytes out is counted (a background
 * flight's, and one a write met writing older bytes out first), and a
 * handle's mark (depfs_fh.wb_err_mark, NULL: no handle) says how many it
 * was told of; one counted since is returned, and the mark moves past it
 * only when advance (an fsync), not for a flush or close, which report it
 * again. So a FLUSH the kernel sends when a forked child closes its copy
 * of the descriptor does not take the error from the parent's fsync. */
int dc_wb_flush(depfs_t *fs, dc_inode *in, uint64_t *mark, bool advance);
/* The count of the inode's write-out failures so far: a new handle's mark. */
uint64_t dc_wb_err_mark(dc_inode *in);
/* depfs.h depfs_flush_hand_partial for the inode (mark: as dc_wb_flush's,
 * never advanced): the whole stripes written out, the other buffered bytes
 * handed over in *out (NULL when none). */
int dc_wb_hand_partial(depfs_t *fs, dc_inode *in, uint64_t *mark, depfs_piece **out,
                       size_t *n_out);
/* Write n pieces (ascending, disjoint) through, after any buffered bytes of
 * their span landed. No size update. */
int dc_wb_write_pieces(depfs_t *fs, dc_inode *in, const depfs_piece *p, unsigned n);
void dc_pieces_free(depfs_piece *p, size_t n);
/* Free write-behind state (after a flush). */
void dc_wb_release(dc_inode *in);
/* Data side of a truncate from old_size to new_size: zero the cut part of
 * the last kept stripe with its parity fixed under the stripe lock, and
 * shorten every strip file. The core updates the MDS size. */
int dc_data_truncate(depfs_t *fs, dc_inode *in, uint64_t old_size, uint64_t new_size);
/* Remove every strip file of a purged file on all n servers: 0 once each
 * removed it or had none, else the first failure (DC_ERR_DOWN for a server
 * down: its strip file is still there, so the caller keeps the entry).
 * Positions in `reach` are asked whatever their state, a REBUILDING or
 * RECONSTRUCTING server too (no handle may use the file: nothing it holds
 * of it is wanted); the others count as down without being asked. */
int dc_data_remove(depfs_t *fs, uint64_t ino, const layout *lay, uint32_t reach);
/* fsync every strip file of the file on its servers. *measured says
 * whether their replies also gave the bytes the strip files occupy
 * (*alloc_bytes, as dc_data_alloc measures them): only when every server
 * answered with it (none down, none rebuilding, none from before it). */
int dc_data_fsync(depfs_t *fs, dc_inode *in, bool *measured, uint64_t *alloc_bytes);

/* eng_extents.c (issue 14). The first offset >= off of the file (of
 * size bytes, write-behind flushed by the caller) that is data
 * (want_data) or in a hole, whole stripe units, never a hole where bytes
 * may be (eng_extent_map.h): 0 and *out, or -ENXIO (no data at or after
 * off, or off >= size). */
int dc_seek(depfs_t *fs, dc_inode *in, uint64_t size, uint64_t off, bool want_data,
            uint64_t *out);
/* An IO_EXTENTS reply for local bytes [from, to) of one strip file as the
 * picture of that position (*x, its extents copied into out, room for
 * r->n_data_extents): ascending extents inside [from, to), at most
 * WIRE_DATA_EXTENTS_MAX, next_offset inside (from, to]; anything else (a
 * hostile or broken server) leaves x unknown, which counts as data. */
void dc_extents_reply(const Depfs__IoReply *r, uint32_t su, uint64_t from, uint64_t to,
                      dc_xext *out, dc_xpos *x);
/* The bytes the file's strip files occupy on all n servers (data and
 * parity units, not the checksum sidecars): 0, or an error when any
 * server is down or does not answer (a partial sum would under-report). */
int dc_data_alloc(depfs_t *fs, const dc_inode *in, uint64_t *alloc_bytes);
/* Adds one server's reported allocation (IO_EXTENTS, IO_FSYNC) to *sum:
 * false, leaving *sum, when the reply names none or more than a layout's
 * strip files can hold (a hostile or broken server): no measurement. */
static inline bool dc_alloc_add(uint64_t *sum, const Depfs__IoReply *r)
{
    if (r == NULL || !r->has_alloc_bytes || r->alloc_bytes > WIRE_ALLOC_BYTES_MAX - *sum)
        return false;
    *sum += r->alloc_bytes;
    return true;
}

/* Truncate an inode (held by the caller) whose MDS size was mds_size to
 * new_size: flush, data side, MDS size, local size. */
int dc_truncate(depfs_t *fs, dc_inode *in, uint64_t mds_size, uint64_t new_size);

#endif
