/* ad_depfs_close.c - close: flushes write-behind data and frees the handle. */
#include "ad_depfs.h"
#include "adioi.h"
#include <unistd.h>

void ADIOI_DEPFS_Close(ADIO_File fd, int *error_code)
{
    static char myname[] = "ADIOI_DEPFS_CLOSE";
    ADIOI_DEPFS_File *file = fd->fs_ptr;
    int rc;

    *error_code = MPI_SUCCESS;
    if (!file)
        return;
    rc = depfs_close(file->fh);         /* the handle is gone even on error */
    if (file->lock_fd >= 0)
        close(file->lock_fd);
    ADIOI_Free(file);
    fd->fs_ptr = NULL;
    if (rc < 0)
        *error_code = ADIOI_DEPFS_Err(myname, fd->filename, rc);
}
