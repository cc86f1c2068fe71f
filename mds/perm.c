/* perm.c - the MDS's POSIX permission checks (perm.h). */
#include "perm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "wire_check.h"

#define PERM_OWNER_SHIFT 6u /* rwx of the owner class in a mode */
#define PERM_GROUP_SHIFT 3u
#define PERM_RWX 7u
#define PERM_ANY_EXEC (S_IXUSR | S_IXGRP | S_IXOTH)
#define PERM_SETID (S_ISUID | S_ISGID)

static int deny(char *why, int err, const mds_caller *c, const mds_inode *in, const char *what)
{
    if (why)
        snprintf(why, MDS_WHY_MAX, "permission denied: uid %u%s %s inode %llu (mode 0%o, owner "
                 "%u:%u)", c->uid, c->squashed ? " (root, squashed)" : "", what,
                 (unsigned long long)in->ino, in->mode & 07777, in->uid, in->gid);
    return -err;
}

static const char *want_text(unsigned want)
{
    static const char *const text[] = {
        [0] = "needs nothing on", [PERM_EXEC] = "may not search/execute",
        [PERM_WRITE] = "may not write", [PERM_WRITE | PERM_EXEC] = "may not write+search",
        [PERM_READ] = "may not read", [PERM_READ | PERM_EXEC] = "may not read+search",
        [PERM_READ | PERM_WRITE] = "may not read+write",
        [PERM_READ | PERM_WRITE | PERM_EXEC] = "may not read+write+search",
    };
    return text[want & PERM_RWX];
}

static bool is_owner(const mds_caller *c, const mds_inode *in)
{
    return c->uid == in->uid;
}

/* The rwx bits of the caller's class. */
static unsigned class_bits(const mds_caller *c, const mds_inode *in)
{
    if (is_owner(c, in))
        return (in->mode >> PERM_OWNER_SHIFT) & PERM_RWX;
    if (mds_caller_in_group(c, in->gid))
        return (in->mode >> PERM_GROUP_SHIFT) & PERM_RWX;
    return in->mode & PERM_RWX;
}

static bool may(const mds_caller *c, const mds_inode *in, unsigned want)
{
    if (mds_caller_is_root(c)) /* x on a non-directory only if someone has it */
        return !(want & PERM_EXEC) || S_ISDIR(in->mode) || (in->mode & PERM_ANY_EXEC);
    return (class_bits(c, in) & want) == want;
}

int perm_access(const mds_caller *c, const mds_inode *in, unsigned want, char *why)
{
    return may(c, in, want) ? 0 : deny(why, EACCES, c, in, want_text(want));
}

int perm_lookup(const mds_caller *c, const mds_inode *dir, char *why)
{
    return perm_access(c, dir, PERM_EXEC, why);
}

int perm_readdir(const mds_caller *c, const mds_inode *dir, char *why)
{
    return perm_access(c, dir, PERM_READ, why);
}

int perm_create(const mds_caller *c, const mds_inode *dir, mds_new *nw, uint32_t *mode,
                char *why)
{
    int rc = perm_access(c, dir, PERM_WRITE | PERM_EXEC, why);
    if (rc < 0)
        return rc;
    if ((S_ISCHR(*mode) || S_ISBLK(*mode)) && !mds_caller_is_root(c))
        return deny(why, EPERM, c, dir, "may not make a device node (root only, as Linux's "
                    "CAP_MKNOD) in");
    nw->uid = c->uid;
    nw->gid = c->gid;
    uint32_t group = (dir->mode & S_ISGID) ? dir->gid : c->gid;
    if (!S_ISDIR(*mode) && !mds_caller_is_root(c) && !mds_caller_in_group(c, group))
        *mode &= ~(uint32_t)S_ISGID;
    return 0;
}

/* Linux's safe_hardlink_source: a regular file, not set-user-ID, not
 * set-group-ID with group exec (an executable's privilege), that the
 * caller may read and write. */
static bool safe_hardlink_source(const mds_caller *c, const mds_inode *src)
{
    if (!S_ISREG(src->mode) || (src->mode & S_ISUID))
        return false;
    if ((src->mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
        return false;
    return may(c, src, PERM_READ | PERM_WRITE);
}

int perm_link(const mds_caller *c, const mds_inode *dir, const mds_inode *src, char *why)
{
    int rc = perm_access(c, dir, PERM_WRITE | PERM_EXEC, why);
    if (rc < 0 || mds_caller_is_root(c) || is_owner(c, src) || safe_hardlink_source(c, src))
        return rc;
    return deny(why, EPERM, c, src, "may not hard-link (protected_hardlinks: the owner, root, "
                "or a plain regular file it may read and write)");
}

/* Sticky directories: only the entry's owner, the directory's or root. */
static int sticky_ok(const mds_caller *c, const mds_inode *dir, const mds_inode *victim, char *why)
{
    if (!(dir->mode & S_ISVTX) || mds_caller_is_root(c) || is_owner(c, dir) || is_owner(c, victim))
        return 0;
    return deny(why, EPERM, c, victim, "may not remove or replace (sticky directory; owners and root only)");
}

int perm_remove(const mds_caller *c, const mds_inode *dir, const mds_inode *victim, char *why)
{
    int rc = perm_access(c, dir, PERM_WRITE | PERM_EXEC, why);
    return rc < 0 ? rc : sticky_ok(c, dir, victim, why);
}

/* A directory that changes parent rewrites its "..". */
static int moved_dir_ok(const mds_caller *c, const mds_inode *d, bool moves, char *why)
{
    if (!moves || !S_ISDIR(d->mode))
        return 0;
    return perm_access(c, d, PERM_WRITE, why);
}

int perm_rename(const mds_caller *c, const mds_inode *spar, const mds_inode *src,
                const mds_inode *dpar, const mds_inode *dst, bool exchange, char *why)
{
    bool moves = spar->ino != dpar->ino;
    int rc = perm_remove(c, spar, src, why);
    if (rc == 0)
        rc = perm_access(c, dpar, PERM_WRITE | PERM_EXEC, why);
    if (rc == 0 && dst)
        rc = sticky_ok(c, dpar, dst, why);
    if (rc == 0)
        rc = moved_dir_ok(c, src, moves, why);
    if (rc == 0 && dst && exchange)
        rc = moved_dir_ok(c, dst, moves, why);
    return rc;
}

/* ----------------------------------------------------------------- setattr */

/* The new perm bits only drop set-id bits: what a writer may do (killpriv). */
static bool only_drops_setid(const mds_inode *in, uint32_t mode)
{
    uint32_t old = in->mode & 07777, new = mode & 07777;
    return (new & ~old) == 0 && ((old ^ new) & ~(uint32_t)PERM_SETID) == 0;
}

static int setattr_owner(const mds_caller *c, const mds_inode *in, uint32_t mask,
                         const mds_setattr_in *a, char *why)
{
    if ((mask & DEPFS_SET_UID) && !(is_owner(c, in) && a->uid == in->uid))
        return deny(why, EPERM, c, in, "may not chown (root only)");
    if ((mask & DEPFS_SET_GID) &&
        !(is_owner(c, in) && (a->gid == in->gid || mds_caller_in_group(c, a->gid))))
        return deny(why, EPERM, c, in, "may not chgrp (the owner, to one of its groups, or root)");
    return 0;
}

static int setattr_mode(const mds_caller *c, const mds_inode *in, const mds_setattr_in *a,
                        char *why)
{
    if (is_owner(c, in) || (only_drops_setid(in, a->mode) && may(c, in, PERM_WRITE)))
        return 0;
    return deny(why, EPERM, c, in, "may not chmod (owner or root only)");
}

static int setattr_times(const mds_caller *c, const mds_inode *in, uint32_t mask, char *why)
{
    bool explicit_times = ((mask & DEPFS_SET_ATIME) && !(mask & DEPFS_SET_ATIME_NOW)) ||
                          ((mask & DEPFS_SET_MTIME) && !(mask & DEPFS_SET_MTIME_NOW));
    /* SET_CTIME is a "now" too: the MDS sets ctime itself (namespace.h) */
    bool now_times = mask & (DEPFS_SET_ATIME_NOW | DEPFS_SET_MTIME_NOW | DEPFS_SET_CTIME);
    if (explicit_times && !is_owner(c, in))
        return deny(why, EPERM, c, in, "may not set times (owner or root only)");
    if (now_times && !is_owner(c, in) && !may(c, in, PERM_WRITE))
        return deny(why, EACCES, c, in, "may not touch (owner or a writer only)");
    return 0;
}

/* Set-id bits a non-root caller's change drops (Linux's killpriv). */
static void drop_setid(const mds_caller *c, const mds_inode *in, uint32_t *mask,
                       mds_setattr_in *a)
{
    uint32_t gid = (*mask & DEPFS_SET_GID) ? a->gid : in->gid;
    if (*mask & DEPFS_SET_MODE) {
        if (!mds_caller_in_group(c, gid))
            a->mode &= ~(uint32_t)S_ISGID;
        return;
    }
    if (!(*mask & (DEPFS_SET_UID | DEPFS_SET_GID | DEPFS_SET_SIZE)) || S_ISDIR(in->mode))
        return;
    uint32_t mode = in->mode & ~(uint32_t)S_ISUID;
    if (mode & S_IXGRP)
        mode &= ~(uint32_t)S_ISGID;
    if (mode == in->mode)
        return;
    *mask |= DEPFS_SET_MODE;
    a->mode = mode;
}

int perm_setattr(const mds_caller *c, const mds_inode *in, uint32_t *mask, mds_setattr_in *a,
                 char *why)
{
    if (mds_caller_is_root(c))
        return 0;
    int rc = setattr_owner(c, in, *mask, a, why);
    if (rc == 0 && (*mask & DEPFS_SET_MODE))
        rc = setattr_mode(c, in, a, why);
    if (rc == 0)
        rc = setattr_times(c, in, *mask, why);
    if (rc == 0 && (*mask & DEPFS_SET_SIZE))
        rc = perm_access(c, in, PERM_WRITE, why);
    if (rc == 0)
        drop_setid(c, in, mask, a);
    return rc;
}

/* -------------------------------------------------------------- open, data */

int perm_open(const mds_caller *c, const mds_inode *in, uint32_t flags, char *why)
{
    unsigned want = 0;
    switch (flags & O_ACCMODE) {
    case O_RDONLY:
        want = PERM_READ;
        break;
    case O_WRONLY:
        want = PERM_WRITE;
        break;
    default:
        want = PERM_READ | PERM_WRITE;
        break;
    }
    if (flags & O_TRUNC)
        want |= PERM_WRITE;
    return perm_access(c, in, want, why);
}

/* A writer's mtime: the time of its writes, no earlier than the file's
 * mtime (a later writer's report came first, or nothing changed), no
 * later than now and the clock skew allowed. */
static int64_t writer_mtime(const mds_inode *in, int64_t now_ns, int64_t mtime_ns)
{
    int64_t latest = now_ns > INT64_MAX - PERM_WRITER_MTIME_AHEAD_NS
                         ? INT64_MAX
                         : now_ns + PERM_WRITER_MTIME_AHEAD_NS;
    if (mtime_ns > latest)
        mtime_ns = latest;
    return mtime_ns < in->mtime_ns ? in->mtime_ns : mtime_ns;
}

int perm_extend(const mds_caller *c, const mds_inode *in, int64_t now_ns, int64_t *mtime_ns,
                char *why)
{
    if (mds_caller_is_root(c) || is_owner(c, in))
        return 0;
    int rc = perm_access(c, in, PERM_WRITE, why);
    if (rc == 0 && mtime_ns)
        *mtime_ns = writer_mtime(in, now_ns, *mtime_ns);
    return rc;
}

/* ------------------------------------------------------------------ xattrs */

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

int perm_xattr(const mds_caller *c, const mds_inode *in, const char *name, bool change,
               char *why)
{
    bool root = mds_caller_is_root(c);
    if (has_prefix(name, WIRE_XATTR_TRUSTED) && !root) {
        if (!change)
            return -ENODATA; /* as Linux: trusted.* does not exist for users */
        return deny(why, EPERM, c, in, "may not change trusted.* xattrs (root only) of");
    }
    if (has_prefix(name, WIRE_XATTR_SECURITY))
        return change && !root ? deny(why, EPERM, c, in,
                                      "may not change security.* xattrs (root only) of")
                               : 0;
    if (strcmp(name, MDS_LAYOUT_XATTR) == 0)
        return change && !root && !is_owner(c, in)
                   ? deny(why, EPERM, c, in, "may not set the layout (owner or root only) of")
                   : 0;
    return perm_access(c, in, change ? PERM_WRITE : PERM_READ, why);
}

bool perm_xattr_listed(const mds_caller *c, const char *name, size_t len)
{
    size_t plen = strlen(WIRE_XATTR_TRUSTED);
    return mds_caller_is_root(c) || len < plen || memcmp(name, WIRE_XATTR_TRUSTED, plen) != 0;
}
