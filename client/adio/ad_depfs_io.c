/* ad_depfs_io.c - contiguous read and write through libdepfs.
 *
 * Everything else (strided, collective two-phase, non-blocking) is ROMIO's
 * generic code on top of these two. In atomic mode a write is flushed before
 * returning so the next reader (who took the range lock after us) sees it. */
#include "ad_depfs.h"
#include "adioi.h"
#include <errno.h>

static int file_of(ADIO_File fd, ADIOI_DEPFS_File **file, const char *myname, int *error_code)
{
    *file = fd->fs_ptr;
    if (*file)
        return 0;
    *error_code = ADIOI_DEPFS_Err(myname, fd->filename, -EBADF);
    return -1;
}

static ADIO_Offset request_bytes(int count, MPI_Datatype datatype)
{
    MPI_Count size = 0;
    MPI_Type_size_x(datatype, &size);
    return (ADIO_Offset) count * (ADIO_Offset) size;
}

void ADIOI_DEPFS_ReadContig(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
                            int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
                            int *error_code)
{
    static char myname[] = "ADIOI_DEPFS_READCONTIG";
    ADIOI_DEPFS_File *file;
    ADIO_Offset len = request_bytes(count, datatype), done = 0;
    ssize_t got;

    if (file_of(fd, &file, myname, error_code))
        return;
    if (file_ptr_type == ADIO_INDIVIDUAL)
        offset = fd->fp_ind;
    while (done < len) {
        got = depfs_read(file->fh, (char *) buf + done, (size_t) (len - done),
                         (uint64_t) (offset + done));
        if (got < 0) {
            *error_code = ADIOI_DEPFS_Err(myname, fd->filename, (int) got);
            return;
        }
        if (got == 0)
            break;      /* end of file */
        done += got;
    }
    if (file_ptr_type == ADIO_INDIVIDUAL)
        fd->fp_ind += done;
    fd->fp_sys_posn = offset + done;
#ifdef HAVE_STATUS_SET_BYTES
    MPIR_Status_set_bytes(status, datatype, done);
#else
    (void) status;
#endif
    *error_code = MPI_SUCCESS;
}

void ADIOI_DEPFS_WriteContig(ADIO_File fd, const void *buf, int count, MPI_Datatype datatype,
                             int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
                             int *error_code)
{
    static char myname[] = "ADIOI_DEPFS_WRITECONTIG";
    ADIOI_DEPFS_File *file;
    ADIO_Offset len = request_bytes(count, datatype);
    ssize_t put = 0;
    int rc;

    if (file_of(fd, &file, myname, error_code))
        return;
    if (file_ptr_type == ADIO_INDIVIDUAL)
        offset = fd->fp_ind;
    if (len > 0) {
        put = depfs_write(file->fh, buf, (size_t) len, (uint64_t) offset);
        if (put < 0) {
            *error_code = ADIOI_DEPFS_Err(myname, fd->filename, (int) put);
            return;
        }
        if (fd->atomicity && (rc = depfs_flush(file->fh)) < 0) {
            *error_code = ADIOI_DEPFS_Err(myname, fd->filename, rc);
            return;
        }
    }
    fd->dirty_write = 1;
    if (file_ptr_type == ADIO_INDIVIDUAL)
        fd->fp_ind += put;
    fd->fp_sys_posn = offset + put;
#ifdef HAVE_STATUS_SET_BYTES
    MPIR_Status_set_bytes(status, datatype, put);
#else
    (void) status;
#endif
    *error_code = MPI_SUCCESS;
}
