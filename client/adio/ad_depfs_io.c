/* ad_depfs_io.c - contiguous read and write through libdepfs (small reads
 * of a read-only open through the node read cache first), and the
 * collective entry points: contiguous collective calls go straight to them,
 * the rest (strided, collective two-phase, non-blocking) is ROMIO's generic
 * code on top of these two. When a write leaves the client (the rest of the
 * time it stays in libdepfs's write-behind until sync or close, see
 * ADIOI_DEPFS_HINT_WRITE_BEHIND):
 *   - atomic mode: every write, so the next reader (who took the range lock
 *     after us) sees it;
 *   - an aggregator's writes inside a two-phase collective write: each
 *     before the call's closing agreement, so no process goes on while bytes
 *     it handed over sit in another process's client;
 *   - once the handle used its shared file pointer, or with the write-behind
 *     hint disabled: every write call. */
#include "ad_depfs.h"
#include "adioi.h"
#include <errno.h>
#include <fcntl.h>

static int file_of(ADIO_File fd, ADIOI_DEPFS_File **file, const char *myname, int *error_code)
{
    *file = fd->fs_ptr;
    if (*file)
        return 0;
    *error_code = ADIOI_DEPFS_Err(myname, fd->filename, -EBADF);
    return -1;
}

/* libdepfs clamps reads to the size this client last saw (at open or from
 * its own writes). Another process may have extended the file since - after
 * MPI_File_sync, or under a lock for shared file pointers - so at an apparent
 * end of file ask once more: depfs_fstat merges the MDS's size in. */
static int refresh_size(ADIOI_DEPFS_File *file)
{
    struct stat st;
    return depfs_fstat(file->fh, &st);
}

/* May this write call leave its bytes in the write-behind? Not once the
 * handle has used its shared file pointer: programs that share one read
 * each other's bytes in the pointer's order after a barrier alone (ROMIO's
 * shared_fp test does), so their writes leave before they return. */
static int push_later(ADIO_File fd, const ADIOI_DEPFS_File *file)
{
    return file->write_behind && !file->coll_push && fd->shared_fp_fd == ADIO_FILE_NULL;
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
    int refreshed = 0, rc;
    ssize_t got;

    if (file_of(fd, &file, myname, error_code))
        return;
    if (file_ptr_type == ADIO_INDIVIDUAL)
        offset = fd->fp_ind;
    if (!fd->atomicity && (got = ADIOI_DEPFS_Node_cache_read(file, buf, (uint64_t) len,
                                                             (uint64_t) offset)) != 0) {
        if (got < 0) {
            *error_code = ADIOI_DEPFS_Err(myname, fd->filename, (int) got);
            return;
        }
        done = got;     /* the rest (past the end the cache saw): below */
    }
    while (done < len) {
        got = depfs_read(file->fh, (char *) buf + done, (size_t) (len - done),
                         (uint64_t) (offset + done));
        if (got < 0) {
            *error_code = ADIOI_DEPFS_Err(myname, fd->filename, (int) got);
            return;
        }
        if (got == 0) {
            if (refreshed)
                break;  /* end of file */
            refreshed = 1;
            if ((rc = refresh_size(file)) < 0) {
                *error_code = ADIOI_DEPFS_Err(myname, fd->filename, rc);
                return;
            }
            continue;
        }
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
        if ((fd->atomicity || (!push_later(fd, file) && !file->defer_flush)) &&
            (rc = depfs_flush(file->fh)) < 0) {
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

/* A collective call whose memory buffer and file view are both contiguous
 * is one byte range per process. ROMIO's generic collective code would
 * allgather every process's start and end only to find (unless ranges
 * overlap, which MPI leaves undefined) that nothing interleaves, and then do
 * independent I/O anyway; the allgathers put all ranks in lockstep once per
 * call, and waiting ranks spin in MPI. Every process is its own DePFS client,
 * so skip that and go straight to the contiguous routine. Not when the user
 * enabled collective buffering (romio_cb_read/romio_cb_write) or persistent
 * file realms: then ROMIO's two-phase runs, on stripe-aligned file domains. */
static int contig_direct(ADIO_File fd, MPI_Datatype datatype, int cb_hint)
{
    int buf_contig = 0, file_contig = 0;
    if (cb_hint == ADIOI_HINT_ENABLE || fd->hints->cb_pfr != ADIOI_HINT_DISABLE)
        return 0;
    ADIOI_Datatype_iscontig(datatype, &buf_contig);
    ADIOI_Datatype_iscontig(fd->filetype, &file_contig);
    return buf_contig && file_contig;
}

/* file_ptr_type/offset of a collective call as the contiguous routines take them */
static ADIO_Offset direct_offset(ADIO_File fd, int file_ptr_type, ADIO_Offset offset)
{
    if (file_ptr_type == ADIO_EXPLICIT_OFFSET)
        return fd->disp + (ADIO_Offset) fd->etype_size * offset;
    return 0;
}

void ADIOI_DEPFS_ReadStridedColl(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
                                 int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
                                 int *error_code)
{
    if (!contig_direct(fd, datatype, fd->hints->cb_read)) {
        ADIOI_GEN_ReadStridedColl(fd, buf, count, datatype, file_ptr_type, offset, status,
                                  error_code);
        return;
    }
    ADIOI_DEPFS_ReadContig(fd, buf, count, datatype, file_ptr_type,
                           direct_offset(fd, file_ptr_type, offset), status, error_code);
}

/* A contiguous collective call writes this process's own bytes (write-behind
 * rules as for an independent write). Otherwise ROMIO's two-phase: the
 * aggregators write other processes' bytes, each piece out to the servers
 * before ROMIO's closing agreement (ad_write_coll.c), so a process that
 * returns from the call reads its bytes back from anyone's client. */
void ADIOI_DEPFS_WriteStridedColl(ADIO_File fd, const void *buf, int count,
                                  MPI_Datatype datatype, int file_ptr_type, ADIO_Offset offset,
                                  ADIO_Status *status, int *error_code)
{
    ADIOI_DEPFS_File *file = fd->fs_ptr;

    if (contig_direct(fd, datatype, fd->hints->cb_write)) {
        ADIOI_DEPFS_WriteContig(fd, buf, count, datatype, file_ptr_type,
                                direct_offset(fd, file_ptr_type, offset), status, error_code);
        return;
    }
    if (file)
        file->coll_push++;
    ADIOI_GEN_WriteStridedColl(fd, buf, count, datatype, file_ptr_type, offset, status,
                               error_code);
    if (file)
        file->coll_push--;
}

/* ROMIO's strided write (naive: piece by piece through WriteContig) with one
 * flush at the end instead of one per piece */
void ADIOI_DEPFS_WriteStrided(ADIO_File fd, const void *buf, int count, MPI_Datatype datatype,
                              int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
                              int *error_code)
{
    static char myname[] = "ADIOI_DEPFS_WRITESTRIDED";
    ADIOI_DEPFS_File *file = fd->fs_ptr;
    int rc;

    if (file)
        file->defer_flush++;
    ADIOI_GEN_WriteStrided(fd, buf, count, datatype, file_ptr_type, offset, status, error_code);
    if (!file)
        return;
    file->defer_flush--;
    if (*error_code != MPI_SUCCESS || push_later(fd, file) || file->defer_flush)
        return;
    if ((rc = depfs_flush(file->fh)) < 0)
        *error_code = ADIOI_DEPFS_Err(myname, fd->filename, rc);
}
