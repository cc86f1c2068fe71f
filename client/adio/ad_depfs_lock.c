/* ad_depfs_lock.c - byte-range locks for atomic mode, shared file pointers.
 *
 * libdepfs has no client-visible byte-range locks (its stripe locks live
 * inside one write), so ROMIO's locks are POSIX locks on a lock file named
 * after the file's inode in $DEPFS_MPIIO_LOCK_DIR (default
 * /tmp/depfs-mpiio-locks). That serialises every process on one node; for
 * jobs spanning nodes point the variable at a directory all nodes share with
 * working fcntl locks (NFS). Releasing a lock first flushes this process's
 * write-behind data, so whoever takes the lock next reads what we wrote. */
#include "ad_depfs.h"
#include "adioi.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ADIOI_DEPFS_LOCK_DIR_MODE 01777
#define ADIOI_DEPFS_LOCK_FILE_MODE 0666

/* cluster identity for the lock name: a hash of the config path in use */
static unsigned long conf_hash(void)
{
    const char *conf = getenv("DEPFS_CONF");
    unsigned long h = 5381;
    for (conf = conf ? conf : "/etc/depfs/depfs.conf"; *conf; conf++)
        h = h * 33 + (unsigned char) *conf;
    return h;
}

static int open_lock_file(ADIOI_DEPFS_File *file)
{
    const char *dir = getenv(ADIOI_DEPFS_LOCK_DIR_ENV);
    char path[PATH_MAX];
    mode_t old;

    if (file->lock_fd >= 0)
        return 0;
    if (!dir || !*dir)
        dir = ADIOI_DEPFS_LOCK_DIR_DEFAULT;
    old = umask(0);
    if (mkdir(dir, ADIOI_DEPFS_LOCK_DIR_MODE) < 0 && errno != EEXIST) {
        umask(old);
        return -errno;
    }
    if (snprintf(path, sizeof(path), "%s/%lx-%llu.lock", dir, conf_hash(),
                 (unsigned long long) depfs_fh_ino(file->fh)) >= (int) sizeof(path)) {
        umask(old);
        return -ENAMETOOLONG;
    }
    file->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, ADIOI_DEPFS_LOCK_FILE_MODE);
    umask(old);
    return file->lock_fd < 0 ? -errno : 0;
}

int ADIOI_DEPFS_SetLock(ADIO_File fd, int cmd, int type, ADIO_Offset offset, int whence,
                        ADIO_Offset len)
{
    static char myname[] = "ADIOI_DEPFS_SETLOCK";
    ADIOI_DEPFS_File *file = fd->fs_ptr;
    struct flock lock;
    int rc;

    if (!file)
        return ADIOI_DEPFS_Err(myname, fd->filename, -EBADF);
    if (type == F_UNLCK && (rc = depfs_flush(file->fh)) < 0)
        return ADIOI_DEPFS_Err(myname, fd->filename, rc);
    if ((rc = open_lock_file(file)) < 0)
        return ADIOI_DEPFS_Err(myname, "lock file in $" ADIOI_DEPFS_LOCK_DIR_ENV, rc);
    memset(&lock, 0, sizeof(lock));
    lock.l_type = (short) type;
    lock.l_whence = (short) whence;
    lock.l_start = (off_t) offset;
    lock.l_len = (off_t) len;
    do {
        rc = fcntl(file->lock_fd, cmd, &lock);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0)
        return ADIOI_DEPFS_Err(myname, fd->filename, -errno);
    return MPI_SUCCESS;
}
