/* api_data.c - libdepfs entry points of the data path: depfs_read,
 * depfs_write, depfs_flush and depfs_fsync check the handle and the range
 * once and hand the bytes to the engines (eng_cache.c keeps the client's
 * cached bytes coherent; eng_read.c, eng_wb.c and eng_write.c move
 * them). O_APPEND writes go at the inode's size (under its lock).
 * depfs_lseek answers SEEK_DATA/SEEK_HOLE from the servers' data extents
 * (eng_extents.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>
#include "engines.h"

/* Largest file size (off_t). */
#define DC_MAX_FILE_BYTES ((uint64_t)INT64_MAX)

/* Whether fh is an open handle that may do what an open with access mode
 * `refused` may not (O_WRONLY refuses reads, O_RDONLY writes). */
static bool fh_usable(const depfs_fh_t *fh, int refused)
{
    return fh != NULL && fh->inode != NULL && (fh->flags & O_ACCMODE) != refused;
}

ssize_t depfs_read(depfs_fh_t *fh, void *buf, size_t len, uint64_t off)
{
    if (!fh_usable(fh, O_WRONLY))
        return -EBADF;
    if (len == 0)
        return 0;
    if (buf == NULL)
        return -EFAULT;
    if (len > SSIZE_MAX)
        len = SSIZE_MAX;
    dc_inode *in = fh->inode;
    pthread_mutex_lock(&in->lock);
    uint64_t size = in->size;
    pthread_mutex_unlock(&in->lock);
    if (off >= size)
        return 0;
    if (len > size - off)
        len = (size_t)(size - off);
    int rc = dc_read(fh, buf, off, len, size);
    return rc < 0 ? rc : (ssize_t)len;
}

/* A write of the handle's file that ended at end landed or is buffered:
 * the size and mtime the next flush commits. */
static void note_written(depfs_fh_t *fh, uint64_t end)
{
    dc_inode *in = fh->inode;
    pthread_mutex_lock(&in->lock);
    if (end > in->size)
        in->size = end;
    if (end > in->written_end)
        in->written_end = end;
    in->size_dirty = true;
    in->size_gen++;
    in->mtime_ns = clock_real_ns();
    in->writer = fh->cred;
    in->has_writer = true;
    pthread_mutex_unlock(&in->lock);
}

ssize_t depfs_write(depfs_fh_t *fh, const void *buf, size_t len, uint64_t off)
{
    if (!fh_usable(fh, O_RDONLY))
        return -EBADF;
    if (len == 0)
        return 0;
    if (buf == NULL)
        return -EFAULT;
    if (len > SSIZE_MAX)
        len = SSIZE_MAX;
    dc_inode *in = fh->inode;
    if (fh->flags & O_APPEND) {
        pthread_mutex_lock(&in->lock);
        off = in->size;
        pthread_mutex_unlock(&in->lock);
    }
    if (off > DC_MAX_FILE_BYTES || len > DC_MAX_FILE_BYTES - off)
        return -EFBIG;
    int rc = dc_data_write(fh, buf, off, len);
    if (rc < 0)
        return rc;
    note_written(fh, off + len);
    return (ssize_t)len;
}

int depfs_write_pieces(depfs_fh_t *fh, const depfs_piece *pieces, size_t n)
{
    if (!fh_usable(fh, O_RDONLY))
        return -EBADF;
    if (n == 0)
        return 0;
    if (pieces == NULL || n > UINT_MAX)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        const depfs_piece *p = &pieces[i];
        if (p->data == NULL)
            return -EFAULT;
        if (p->len == 0 || (i > 0 && p->off < pieces[i - 1].off + pieces[i - 1].len))
            return -EINVAL; /* empty, or not ascending and disjoint */
        if (p->off > DC_MAX_FILE_BYTES || p->len > DC_MAX_FILE_BYTES - p->off)
            return -EFBIG;
    }
    int rc = dc_data_write_pieces(fh->fs, fh->inode, pieces, (unsigned)n);
    if (rc < 0)
        return rc;
    note_written(fh, pieces[n - 1].off + pieces[n - 1].len);
    return 0;
}

int depfs_flush_hand_partial(depfs_fh_t *fh, depfs_piece **pieces, size_t *n)
{
    if (pieces == NULL || n == NULL)
        return -EINVAL;
    *pieces = NULL;
    *n = 0;
    if (fh == NULL || fh->inode == NULL)
        return -EBADF;
    return dc_data_hand_partial(fh->fs, fh->inode, &fh->wb_err_mark, pieces, n);
}

void depfs_pieces_free(depfs_piece *pieces, size_t n)
{
    dc_pieces_free(pieces, n);
}

/* depfs_flush, and with sync depfs_fsync: the handle's buffered writes go
 * out (sync also moves its error mark past what it reports, engines.h
 * dc_wb_flush, and makes every strip file durable), then the size is
 * committed at the MDS after them. The allocation after the writes rides
 * on the size commit (st_blocks): an fsync's IO_FSYNC replies carry it; a
 * flush asks the n servers in one parallel round, only when there were
 * writes. Not measured (a server down): the MDS keeps its last figure. */
static int flush_fh(depfs_fh_t *fh, bool sync)
{
    if (fh == NULL || fh->inode == NULL)
        return -EBADF;
    dc_inode *in = fh->inode;
    dc_acting saved;
    dc_act_push(&fh->cred, &saved); /* the size update is the opener's */
    int rc = dc_data_flush(fh->fs, in, &fh->wb_err_mark, sync);
    uint64_t alloc_bytes = 0;
    bool measured = false;
    if (rc == 0 && sync)
        rc = dc_data_fsync(fh->fs, in, &measured, &alloc_bytes);
    if (rc == 0 && !measured && dc_inode_size_dirty(in))
        measured = dc_data_alloc(fh->fs, in, &alloc_bytes) == 0;
    int rc2 = dc_inode_commit_size(fh->fs, in, measured ? &alloc_bytes : NULL);
    dc_act_pop(&saved);
    return rc < 0 ? rc : rc2;
}

int depfs_flush(depfs_fh_t *fh)
{
    return flush_fh(fh, false);
}

int depfs_lseek(depfs_fh_t *fh, uint64_t off, int whence, uint64_t *out)
{
    if (fh == NULL || fh->inode == NULL || out == NULL)
        return -EBADF;
    if (whence != SEEK_DATA && whence != SEEK_HOLE)
        return -EINVAL;
    dc_inode *in = fh->inode;
    int rc = dc_data_flush(fh->fs, in, NULL, false); /* buffered bytes are data too */
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&in->lock);
    uint64_t size = in->size;
    pthread_mutex_unlock(&in->lock);
    return dc_seek(fh->fs, in, size, off, whence == SEEK_DATA, out);
}

int depfs_fsync(depfs_fh_t *fh)
{
    return flush_fh(fh, true);
}
