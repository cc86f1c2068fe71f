/* eng_cache.c - what this client caches of an inode's bytes, kept
 * coherent: the write-behind buffer (eng_wb.c) and the read-ahead window
 * with the degraded stripe cache (eng_read.c). Every write, flush, fsync,
 * truncate and close forgets the window, so a read never sees bytes older
 * than a write of the same client; the last reference frees both. The layers above call
 * these instead of the two engines, which never call each other's
 * invalidation. */
#include <errno.h>
#include <string.h>
#include "engines.h"
#include "log.h"

int dc_data_write(depfs_fh_t *fh, const uint8_t *buf, uint64_t off, uint64_t len)
{
    int rc = dc_wb_write(fh, buf, off, len);
    /* after the bytes are buffered or landed (and with the buffer's lock
     * released: a read-ahead fill holds its lock while it flushes it) */
    dc_ra_drop(fh->inode);
    return rc;
}

int dc_data_flush(depfs_t *fs, dc_inode *in, uint64_t *mark, bool advance)
{
    int rc = dc_wb_flush(fs, in, mark, advance);
    dc_ra_drop(in); /* flush, fsync, close and truncate forget the window */
    return rc;
}

void dc_data_release(depfs_t *fs, dc_inode *in)
{
    (void)fs;
    dc_wb_release(in);
    dc_ra_free(in);
}

int dc_data_hand_partial(depfs_t *fs, dc_inode *in, uint64_t *mark, depfs_piece **out,
                         size_t *n_out)
{
    int rc = dc_wb_hand_partial(fs, in, mark, out, n_out);
    dc_ra_drop(in);
    return rc;
}

int dc_data_write_pieces(depfs_t *fs, dc_inode *in, const depfs_piece *p, unsigned n)
{
    int rc = dc_wb_write_pieces(fs, in, p, n);
    dc_ra_drop(in); /* after the bytes landed, as dc_data_write */
    return rc;
}
