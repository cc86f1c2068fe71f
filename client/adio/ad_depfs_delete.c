/* ad_depfs_delete.c - MPI_File_delete (and delete-on-close). */
#include "ad_depfs.h"
#include "adioi.h"
#include <errno.h>
#include <stdlib.h>

void ADIOI_DEPFS_Delete(const char *filename, int *error_code)
{
    static char myname[] = "ADIOI_DEPFS_DELETE";
    depfs_t *fs;
    char *path;
    int rc;

    ADIOI_DEPFS_Clear_pending();        /* a delete's label never applies to an open */
    rc = ADIOI_DEPFS_Get_fs(&fs);
    if (rc < 0) {
        *error_code = ADIOI_DEPFS_Err(myname, "mount (config from $DEPFS_CONF)", rc);
        return;
    }
    path = ADIOI_DEPFS_Abs_path(filename);
    rc = path ? depfs_unlink_path(fs, path) : -ENOMEM;
    *error_code = rc < 0 ? ADIOI_DEPFS_Err(myname, path ? path : filename, rc) : MPI_SUCCESS;
    free(path);
}
