/* caller_groups.h - depfs-fuse: the supplementary groups of the thread
 * that made a kernel request, read from its /proc status in one pass. */
#ifndef DFUSE_CALLER_GROUPS_H
#define DFUSE_CALLER_GROUPS_H
#include <stddef.h>
#include <sys/types.h>

/* The groups of thread tid (a fuse_ctx's pid, which is the caller's thread
 * id), as fuse_req_getgroups returns them: how many the thread has (more
 * than size means only the first size were stored in list), or -errno
 * (-ESRCH, -ENOENT: the caller is gone; -EIO: no Groups line). One open
 * and one rendering of the status file per call. */
int dfuse_caller_groups(pid_t tid, int size, gid_t list[]);

/* The groups in the "Groups:" line of a /proc status text of len bytes
 * (not NUL-terminated): the same return convention. Pure. */
int dfuse_parse_groups(const char *status, size_t len, int size, gid_t list[]);

#endif
