/* ad_depfs_flush.c - MPI_File_sync: write-behind out, durable everywhere. */
#include "ad_depfs.h"
#include "adioi.h"

void ADIOI_DEPFS_Flush(ADIO_File fd, int *error_code)
{
    static char myname[] = "ADIOI_DEPFS_FLUSH";
    ADIOI_DEPFS_File *file = fd->fs_ptr;
    int rc;

    *error_code = MPI_SUCCESS;
    if (!file)          /* never opened here (nothing to sync) */
        return;
    rc = depfs_fsync(file->fh);
    if (rc < 0)
        *error_code = ADIOI_DEPFS_Err(myname, fd->filename, rc);
}
