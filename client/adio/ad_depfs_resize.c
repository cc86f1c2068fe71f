/* ad_depfs_resize.c - MPI_File_set_size (collective).
 *
 * Every process first pushes its write-behind data (so nothing lands past
 * the new end afterwards), then the first aggregator truncates and the
 * result is broadcast. */
#include "ad_depfs.h"
#include "adioi.h"
#include <errno.h>

void ADIOI_DEPFS_Resize(ADIO_File fd, ADIO_Offset size, int *error_code)
{
    static char myname[] = "ADIOI_DEPFS_RESIZE";
    ADIOI_DEPFS_File *file = fd->fs_ptr;
    int rank, rc = 0, flush_rc = 0, worst = 0;

    MPI_Comm_rank(fd->comm, &rank);
    if (file)
        flush_rc = depfs_flush(file->fh);
    MPI_Allreduce(&flush_rc, &worst, 1, MPI_INT, MPI_MIN, fd->comm);
    if (worst < 0) {
        *error_code = ADIOI_DEPFS_Err(myname, fd->filename, worst);
        return;
    }
    if (rank == fd->hints->ranklist[0])
        rc = file ? depfs_ftruncate(file->fh, (uint64_t) size) : -EBADF;
    MPI_Bcast(&rc, 1, MPI_INT, fd->hints->ranklist[0], fd->comm);
    *error_code = rc < 0 ? ADIOI_DEPFS_Err(myname, fd->filename, rc) : MPI_SUCCESS;
}
