/* perm.h - POSIX permission checks of the MDS: pure functions over the
 * acting caller (caller.h) and the inodes an operation touches, called by
 * namespace.c / ns_xattr.c under the namespace lock, after the inodes are
 * loaded and before anything changes (so a check and its change see the
 * same inodes). Linux semantics:
 *
 *   - access: owner bits if the caller owns the inode, else group bits if
 *     the inode's gid is the caller's gid or one of its groups, else the
 *     other bits. Root (uid 0 after root_squash) may read and write
 *     anything and search any directory, but executes a file only when
 *     some x bit is set.
 *   - lookup: search (x) on the parent; readdir: read on the directory.
 *   - create, link: write+search on the parent. Link, as Linux's
 *     fs.protected_hardlinks: only the file's owner or root, or anyone who
 *     may read and write a regular file that is neither set-user-ID nor
 *     set-group-ID with group exec (else EPERM). New objects belong to the
 *     caller (a claimed owner is the caller's own: caller.h), group from a
 *     set-group-ID parent (whose setgid new directories inherit). Device
 *     nodes (S_IFCHR, S_IFBLK) only by root (EPERM; Linux's CAP_MKNOD);
 *     FIFOs and sockets by anyone who may create.
 *   - unlink, rmdir, rename: write+search on each parent changed; in a
 *     sticky (S_ISVTX) directory only the entry's owner, the directory's
 *     owner or root may remove or replace an entry (EPERM); a directory
 *     moved to another parent needs write permission on itself ("..").
 *   - setattr: chmod and explicit atime/mtime by owner or root (EPERM);
 *     times set to now by owner, root or a writer (EACCES), ctime only
 *     ever so (SET_CTIME: the MDS's now, never the request's value); chown only by root,
 *     chgrp by the owner to one of its groups (EPERM); size needs write
 *     permission (EACCES). A non-root chmod drops S_ISGID when the caller
 *     is not in the file's group; a non-root chown or size change drops
 *     S_ISUID, and S_ISGID when group-exec is set. A writer may clear the
 *     set-id bits by chmod (what depfs-fuse does after a write).
 *   - open: read and/or write permission for the access mode; O_TRUNC
 *     needs write. extend (a writer's new size): owner or write permission;
 *     the mtime it reports (the time of the writes) stands for the owner
 *     and root, who may set any time; anyone else's is kept within
 *     [the file's mtime, now + PERM_WRITER_MTIME_AHEAD_NS], as a write
 *     on Linux sets mtime to now (a writer may not set an explicit time).
 *   - xattrs: user.* read/write permission (EACCES); user.depfs.layout set
 *     or removed only by owner or root (EPERM), read by anyone who can
 *     reach the inode (it is layout metadata, as getattr shows); trusted.*
 *     only root (others: EPERM to change, ENODATA to read, hidden from
 *     listxattr); security.* changed only by root.
 *
 * Return convention: 0 or -EACCES / -EPERM (or -ENODATA, xattrs) with a
 * message naming the caller, the inode and what was missing in why
 * (MDS_WHY_MAX bytes). */
#ifndef DEPFS_MDS_PERM_H
#define DEPFS_MDS_PERM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "caller.h"
#include "clock.h"
#include "namespace.h"

#define PERM_READ 4u  /* the rwx bits of one class, as in a mode */
#define PERM_WRITE 2u
#define PERM_EXEC 1u
/* How far past the MDS's clock a writer's mtime may lie: its clock may run
 * ahead by the skew the cluster allows (auth.h). */
#define PERM_WRITER_MTIME_AHEAD_NS ((int64_t)AUTH_CAP_SKEW_S * (int64_t)CLOCK_NS_PER_S)

int perm_access(const mds_caller *c, const mds_inode *in, unsigned want, char *why);
int perm_lookup(const mds_caller *c, const mds_inode *dir, char *why);
int perm_readdir(const mds_caller *c, const mds_inode *dir, char *why);
/* Checks the parent and makes nw's owner the caller's (group and setgid
 * from a setgid parent are init_child's, namespace.c). *mode: the new
 * object's mode, S_ISGID dropped where a non-root caller may not set it. */
int perm_create(const mds_caller *c, const mds_inode *dir, mds_new *nw, uint32_t *mode,
                char *why);
/* A new name in dir for src. */
int perm_link(const mds_caller *c, const mds_inode *dir, const mds_inode *src, char *why);
int perm_remove(const mds_caller *c, const mds_inode *dir, const mds_inode *victim, char *why);
/* dst NULL: no entry is replaced. exchange: both entries move. */
int perm_rename(const mds_caller *c, const mds_inode *spar, const mds_inode *src,
                const mds_inode *dpar, const mds_inode *dst, bool exchange, char *why);
/* May change *mask and a->mode: the set-id bits a non-root change drops. */
int perm_setattr(const mds_caller *c, const mds_inode *in, uint32_t *mask, mds_setattr_in *a,
                 char *why);
int perm_open(const mds_caller *c, const mds_inode *in, uint32_t flags, char *why);
/* mtime_ns: the reported mtime (NULL: none), kept within the bounds above
 * for a caller who may not set times; now_ns: the MDS's clock. */
int perm_extend(const mds_caller *c, const mds_inode *in, int64_t now_ns, int64_t *mtime_ns,
                char *why);
int perm_xattr(const mds_caller *c, const mds_inode *in, const char *name, bool change,
               char *why);
/* Whether listxattr shows name (len bytes, not NUL-terminated) to c. */
bool perm_xattr_listed(const mds_caller *c, const char *name, size_t len);

#endif
