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

ssize_t depfs_read(depfs_fh_t *fh, void *buf, size_t len, uint64_t off)
{
    if (fh == NULL || fh->inode == NULL)
        return -EBADF;
    if ((fh->flags & O_ACCMODE) == O_WRONLY)
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

ssize_t depfs_write(depfs_fh_t *fh, const void *buf, size_t len, uint64_t off)
{
    if (fh == NULL || fh->inode == NULL)
        return -EBADF;
    if ((fh->flags & O_ACCMODE) == O_RDONLY)
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
    pthread_mutex_lock(&in->lock);
    if (off + len > in->size)
        in->size = off + len;
    if (off + len > in->written_end)
        in->written_end = off + len;
    in->size_dirty = true;
    in->size_gen++;
    in->mtime_ns = clock_real_ns();
    in->writer = fh->cred;
    in->has_writer = true;
    pthread_mutex_unlock(&in->lock);
    return (ssize_t)len;
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
