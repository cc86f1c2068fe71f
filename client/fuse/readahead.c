/* readahead.c - depfs-fuse: sets the kernel's read-ahead window of the
 * mount's backing device (see readahead.h).
 *
 * Why after INIT and from sysfs: the kernel offers max_readahead = the
 * bdi's window (128 KiB) in FUSE_INIT and keeps the smaller of the two, so
 * the INIT reply cannot raise it; the bdi's read_ahead_kb can, any time.
 * Why statx(AT_STATX_DONT_SYNC): a plain stat() of our own mount point is a
 * GETATTR to this daemon, which on a loop thread (or under valgrind, which
 * runs stat with its scheduler lock held) never gets answered; with
 * DONT_SYNC FUSE answers from the inode it has, and st_dev (the
 * superblock's device, MAJ:MIN of the bdi) needs nothing more. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "readahead.h"

#define DFUSE_BDI_PATH_BYTES 96u
#define DFUSE_KB_TEXT_BYTES 16u

/* Writes "KB\n" to PATH: 0 or -errno. */
static int write_kb(const char *path, unsigned kb)
{
    char text[DFUSE_KB_TEXT_BYTES];
    int len = snprintf(text, sizeof(text), "%u\n", kb);
    if (len <= 0 || (size_t)len >= sizeof(text))
        return -EINVAL;
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t put = write(fd, text, (size_t)len);
    int rc = put == len ? 0 : (put < 0 ? -errno : -EIO);
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    return rc;
}

int dfuse_readahead_set(const char *mountpoint, unsigned kb)
{
    struct statx stx;
    if (statx(AT_FDCWD, mountpoint, AT_STATX_DONT_SYNC, 0, &stx) != 0)
        return -errno;
    char path[DFUSE_BDI_PATH_BYTES];
    int len = snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb",
                       stx.stx_dev_major, stx.stx_dev_minor);
    if (len <= 0 || (size_t)len >= sizeof(path))
        return -ENAMETOOLONG;
    return write_kb(path, kb);
}
