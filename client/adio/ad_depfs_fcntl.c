/* ad_depfs_fcntl.c - size queries, preallocation and atomic mode. */
#include "ad_depfs.h"
#include "adioi.h"
#include <errno.h>
#include <sys/stat.h>

static int file_size(ADIOI_DEPFS_File *file, ADIO_Offset *size)
{
    struct stat st;
    int rc = depfs_flush(file->fh);     /* our write-behind counts too */
    if (rc == 0)
        rc = depfs_fstat(file->fh, &st);
    if (rc == 0)
        *size = (ADIO_Offset) st.st_size;
    return rc;
}

void ADIOI_DEPFS_Fcntl(ADIO_File fd, int flag, ADIO_Fcntl_t *fcntl_struct, int *error_code)
{
    static char myname[] = "ADIOI_DEPFS_FCNTL";
    ADIOI_DEPFS_File *file = fd->fs_ptr;
    ADIO_Offset size = 0;
    int rc = 0;

    if (!file && flag != ADIO_FCNTL_SET_ATOMICITY) {
        *error_code = ADIOI_DEPFS_Err(myname, fd->filename, -EBADF);
        return;
    }
    switch (flag) {
        case ADIO_FCNTL_GET_FSIZE:
            rc = file_size(file, &size);
            if (rc == 0)
                fcntl_struct->fsize = size;
            break;
        case ADIO_FCNTL_SET_DISKSPACE:
            /* DePFS allocates on write; preallocation only guarantees the size */
            rc = file_size(file, &size);
            if (rc == 0 && size < fcntl_struct->diskspace)
                rc = depfs_ftruncate(file->fh, (uint64_t) fcntl_struct->diskspace);
            break;
        case ADIO_FCNTL_SET_ATOMICITY:
            fd->atomicity = fcntl_struct->atomicity == 0 ? 0 : 1;
            if (fd->atomicity && file)
                rc = depfs_flush(file->fh);
            break;
        default:
            *error_code = MPIO_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, myname,
                                               __LINE__, MPI_ERR_ARG, "**flag", "**flag %d", flag);
            return;
    }
    *error_code = rc < 0 ? ADIOI_DEPFS_Err(myname, fd->filename, rc) : MPI_SUCCESS;
}
