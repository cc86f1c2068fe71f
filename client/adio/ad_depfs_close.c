/* ad_depfs_close.c - close: every process flushes its write-behind (pieces
 * of stripes the processes share gathered first, ad_depfs_stripe_gather.c),
 * then (when every process of the communicator holds the file open) all
 * meet in a barrier, so that an open anywhere after MPI_File_close returns
 * sees every process's writes (MPI's close-open rule; ROMIO's own barrier in
 * MPI_File_close comes before the driver's close). Then the node read
 * cache (only where every process opened) and the handle go. */
#include "ad_depfs.h"
#include "adioi.h"
#include <unistd.h>

void ADIOI_DEPFS_Close(ADIO_File fd, int *error_code)
{
    static char myname[] = "ADIOI_DEPFS_CLOSE";
    ADIOI_DEPFS_File *file = fd->fs_ptr;
    int rc, flush_rc = 0;

    *error_code = MPI_SUCCESS;
    if (!file)
        return;
    if (file->close_barrier) {
        if (file->gather)
            flush_rc = ADIOI_DEPFS_Stripe_gather(fd, file);
        rc = depfs_flush(file->fh);     /* the barrier comes even after an error */
        if (flush_rc == 0)
            flush_rc = rc;
        MPI_Barrier(fd->comm);
    }
    ADIOI_DEPFS_Node_cache_close(file);
    rc = depfs_close(file->fh);         /* the handle is gone even on error */
    if (file->lock_fd >= 0)
        close(file->lock_fd);
    ADIOI_Free(file);
    fd->fs_ptr = NULL;
    if (flush_rc < 0)
        rc = flush_rc;
    if (rc < 0)
        *error_code = ADIOI_DEPFS_Err(myname, fd->filename, rc);
}
