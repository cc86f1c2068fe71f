/* ad_depfs_flush.c - MPI_File_sync: write-behind out (pieces of stripes the
 * processes share gathered first, ad_depfs_stripe_gather.c), durable
 * everywhere. */
#include "ad_depfs.h"
#include "adioi.h"

void ADIOI_DEPFS_Flush(ADIO_File fd, int *error_code)
{
    static char myname[] = "ADIOI_DEPFS_FLUSH";
    ADIOI_DEPFS_File *file = fd->fs_ptr;
    int rc, gather_rc = 0;

    *error_code = MPI_SUCCESS;
    if (!file)          /* never opened here (nothing to sync) */
        return;
    if (file->gather)   /* every process is here: MPI_File_sync is collective */
        gather_rc = ADIOI_DEPFS_Stripe_gather(fd, file);
    rc = depfs_fsync(file->fh);
    if (rc == 0)
        rc = gather_rc;
    if (rc < 0)
        *error_code = ADIOI_DEPFS_Err(myname, fd->filename, rc);
}
