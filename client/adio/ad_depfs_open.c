/* ad_depfs_open.c - open and create through libdepfs.
 *
 * A new file gets the layout requested in fd->info (label > hints > env, see
 * ad_depfs_hints.c); an existing file keeps its own. Afterwards fd->info
 * reports the layout really used and collective buffering is aligned to it. */
#include "ad_depfs.h"
#include "adioi.h"
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ADIOI_DEPFS_DEFAULT_FILE_MODE 0666

static unsigned info_uint(MPI_Info info, const char *key)
{
    char value[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    if (info == MPI_INFO_NULL)
        return 0;
    ADIOI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag);
    return flag ? (unsigned) strtoul(value, NULL, 10) : 0;
}

static int amode_to_flags(int access_mode)
{
    int flags;
    if (access_mode & ADIO_RDONLY)
        flags = O_RDONLY;
    else if (access_mode & ADIO_WRONLY)
        flags = O_WRONLY;
    else
        flags = O_RDWR;
    if (access_mode & ADIO_CREATE)
        flags |= O_CREAT;
    if (access_mode & ADIO_EXCL)
        flags |= O_EXCL;
    return flags;
}

static mode_t create_mode(int perm)
{
    mode_t old;
    if (perm != ADIO_PERM_NULL)
        return (mode_t) perm;
    old = umask(022);
    umask(old);
    return ADIOI_DEPFS_DEFAULT_FILE_MODE & ~old;
}

/* creates path in its parent directory with the requested layout */
static int create_with_layout(depfs_t *fs, const char *path, int flags, mode_t mode,
                              const depfs_layout_info *want, depfs_fh_t **fh)
{
    const char *slash = strrchr(path, '/');
    char *parent;
    uint64_t parent_ino;
    struct stat st;
    depfs_cred cred;
    int rc;

    assert(slash != NULL);      /* Abs_path made it absolute */
    if (slash[1] == '\0')
        return -EISDIR;
    parent = strndup(path, slash == path ? 1 : (size_t) (slash - path));
    if (!parent)
        return -ENOMEM;
    rc = depfs_resolve(fs, parent, &parent_ino, &st);
    free(parent);
    if (rc < 0)
        return rc;
    if (!S_ISDIR(st.st_mode))
        return -ENOTDIR;
    ADIOI_DEPFS_Fill_cred(&cred);
    return depfs_create(fs, parent_ino, slash + 1, mode, flags, &cred,
                        (want->n || want->k || want->stripe_unit) ? want : NULL, &st, fh);
}

static int open_or_create(depfs_t *fs, const char *path, int flags, mode_t mode,
                          const depfs_layout_info *want, depfs_fh_t **fh)
{
    int rc;
    if (!(flags & O_CREAT))
        return depfs_open(fs, path, flags, 0, fh);
    if (!(flags & O_EXCL)) {
        rc = depfs_open(fs, path, flags & ~O_CREAT, 0, fh);
        if (rc != -ENOENT)
            return rc;
    }
    rc = create_with_layout(fs, path, flags, mode, want, fh);
    if (rc == -EEXIST && !(flags & O_EXCL))     /* another process won the race */
        rc = depfs_open(fs, path, flags & ~(O_CREAT | O_EXCL), 0, fh);
    return rc;
}

void ADIOI_DEPFS_Open(ADIO_File fd, int *error_code)
{
    static char myname[] = "ADIOI_DEPFS_OPEN";
    ADIOI_DEPFS_File *file = NULL;
    depfs_layout_info want;
    depfs_t *fs;
    char *path = NULL;
    int rc, flags;

    rc = ADIOI_DEPFS_Get_fs(&fs);
    if (rc < 0) {
        *error_code = ADIOI_DEPFS_Err(myname, "mount (config from $DEPFS_CONF)", rc);
        return;
    }
    path = ADIOI_DEPFS_Abs_path(fd->filename);
    file = ADIOI_Calloc(1, sizeof(*file));
    if (!path) {
        rc = -ENOMEM;
        goto out;
    }
    file->lock_fd = -1;
    memset(&want, 0, sizeof(want));
    want.n = info_uint(fd->info, ADIOI_DEPFS_HINT_N);
    want.k = info_uint(fd->info, ADIOI_DEPFS_HINT_K);
    want.stripe_unit = info_uint(fd->info, ADIOI_DEPFS_HINT_SU);

    /* two-phase collective writes read to fill holes: write-only opens read too */
    flags = amode_to_flags(fd->access_mode);
    if ((flags & O_ACCMODE) == O_WRONLY) {
        rc = open_or_create(fs, path, (flags & ~O_ACCMODE) | O_RDWR, create_mode(fd->perm), &want,
                            &file->fh);
        if (rc == -EACCES)
            rc = open_or_create(fs, path, flags, create_mode(fd->perm), &want, &file->fh);
    } else {
        rc = open_or_create(fs, path, flags, create_mode(fd->perm), &want, &file->fh);
    }
    if (rc < 0)
        goto out;
    rc = depfs_fh_layout(file->fh, &file->layout);
    if (rc < 0) {
        depfs_close(file->fh);
        goto out;
    }
    /* each rank is a client of its own: its handshakes with the file's
     * servers belong to the open, all at once, not to its first I/O */
    (void)depfs_fh_connect(file->fh);
    fd->fs_ptr = file;
    fd->fd_sys = -1;    /* no kernel descriptor: stray syscalls fail with EBADF */
    fd->fd_direct = -1;
    fd->fp_sys_posn = -1;
    file->write_behind = ADIOI_DEPFS_Switch_on(fd, ADIOI_DEPFS_HINT_WRITE_BEHIND);
    ADIOI_DEPFS_Align_hints(fd, &file->layout);
    file = NULL;
    *error_code = MPI_SUCCESS;
  out:
    if (rc < 0)
        *error_code = ADIOI_DEPFS_Err(myname, path ? path : fd->filename, rc);
    if (file)
        ADIOI_Free(file);
    free(path);
}

/* ROMIO's generic collective open (rank 0 creates, then all open), then one
 * agreement: only when every process of fd->comm holds the file open does
 * the close barrier (ad_depfs_close.c), do sync and close gather shared
 * stripes (ad_depfs_stripe_gather.c; when every process wants it too), and
 * does a read-only open get the node read cache (ad_depfs_node_cache.c).
 * ROMIO also calls the driver's close where every process does not: on
 * rank 0 alone after the create probe, and on the processes whose open
 * worked when another's failed. */
void ADIOI_DEPFS_OpenColl(ADIO_File fd, int rank, int access_mode, int *error_code)
{
    enum { OPENED, WANTS_GATHER, AGREE_N };
    ADIOI_DEPFS_File *file;
    int mine[AGREE_N], all[AGREE_N] = {0, 0};

    ADIOI_GEN_OpenColl(fd, rank, access_mode, error_code);
    file = fd->fs_ptr;
    mine[OPENED] = *error_code == MPI_SUCCESS && file != NULL;
    switch (ADIOI_DEPFS_Switch(fd, ADIOI_DEPFS_HINT_STRIPE_GATHER)) {
    case ADIOI_DEPFS_ON: mine[WANTS_GATHER] = mine[OPENED]; break;
    case ADIOI_DEPFS_AUTO: mine[WANTS_GATHER] = mine[OPENED] && ADIOI_DEPFS_Gather_pays(); break;
    default: mine[WANTS_GATHER] = 0;
    }
    MPI_Allreduce(mine, all, AGREE_N, MPI_INT, MPI_LAND, fd->comm);
    if (mine[OPENED]) {
        file->close_barrier = all[OPENED];
        file->gather = all[WANTS_GATHER];
    }
    ADIOI_DEPFS_Node_cache_open(fd, mine[OPENED] ? file : NULL,
                                all[OPENED] && (fd->access_mode & ADIO_RDONLY) &&
                                ADIOI_DEPFS_Switch_on(fd, ADIOI_DEPFS_HINT_NODE_CACHE));
}
