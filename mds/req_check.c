/* req_check.c - the bounds every MdsRequest field is held to where the
 * request is decoded (req_check.h). A field is checked whenever it is
 * present, whichever op carries it: the same field means the same thing in
 * every op. */
#include "req_check.h"

#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "wire.h"
#include "wire_check.h"

/* setattr bits the MDS acts on (DEPFS_SET_*, == proto SetMask) */
#define MDS_SET_KNOWN                                                                        \
    (DEPFS_SET_MODE | DEPFS_SET_UID | DEPFS_SET_GID | DEPFS_SET_SIZE | DEPFS_SET_ATIME |     \
     DEPFS_SET_MTIME | DEPFS_SET_ATIME_NOW | DEPFS_SET_MTIME_NOW | DEPFS_SET_CTIME)
/* open flags the MDS acts on: the access mode and O_TRUNC (permissions,
 * perm.h), and for a create O_EXCL (every other open flag is the client's
 * business and is not sent) */
#define MDS_OPEN_FLAGS_KNOWN ((uint32_t)(O_ACCMODE | O_TRUNC))
#define MDS_CREATE_FLAGS_KNOWN (MDS_OPEN_FLAGS_KNOWN | (uint32_t)O_EXCL)

__attribute__((format(printf, 4, 5)))
static int refuse(int err, char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
    return -err;
}

static int check_strings(const Depfs__MdsRequest *q, char *why, size_t why_len)
{
    int rc = 0;
    if (q->name)
        rc = wire_check_name(q->name, "name", why, why_len);
    if (rc == 0 && q->new_name)
        rc = wire_check_name(q->new_name, "new_name", why, why_len);
    if (rc == 0 && q->target)
        rc = wire_check_symlink_target(q->target, why, why_len);
    if (rc == 0 && q->xattr_name)
        rc = wire_check_xattr_name(q->xattr_name, why, why_len);
    if (rc == 0 && q->has_xattr_value && q->xattr_value.len > WIRE_XATTR_VALUE_MAX)
        rc = refuse(E2BIG, why, why_len, "xattr value of %zu bytes > max %u",
                    q->xattr_value.len, WIRE_XATTR_VALUE_MAX);
    if (rc == 0 && q->has_renew_capability && q->renew_capability.len != AUTH_CAP_BYTES)
        rc = refuse(EINVAL, why, why_len, "renew_capability of %zu bytes, not %u",
                    q->renew_capability.len, AUTH_CAP_BYTES);
    if (rc == 0 && q->has_ticket && q->ticket.len != AUTH_TICKET_BYTES)
        rc = refuse(EINVAL, why, why_len, "ticket of %zu bytes, not %u", q->ticket.len,
                    AUTH_TICKET_BYTES);
    if (rc == 0 && q->has_renew_ticket && q->renew_ticket.len != AUTH_TICKET_BYTES)
        rc = refuse(EINVAL, why, why_len, "renew_ticket of %zu bytes, not %u",
                    q->renew_ticket.len, AUTH_TICKET_BYTES);
    return rc;
}

/* mode, uid, gid and rdev of a new entry */
static int check_new_attrs(const Depfs__MdsRequest *q, char *why, size_t why_len)
{
    int rc = 0;
    if (q->has_mode)
        rc = wire_check_mode(q->mode, why, why_len);
    if (rc == 0 && q->has_uid)
        rc = wire_check_owner(q->uid, "uid", why, why_len);
    if (rc == 0 && q->has_gid)
        rc = wire_check_owner(q->gid, "gid", why, why_len);
    if (rc == 0 && q->has_rdev)
        rc = wire_check_rdev(q->rdev, why, why_len);
    return rc;
}

/* setattr: the mask, and the attr values the mask applies (times are any
 * int64: wire_check.h) */
static int check_setattr(const Depfs__MdsRequest *q, char *why, size_t why_len)
{
    int rc = 0;
    if (!q->has_set_mask)
        return 0;
    if (q->set_mask & ~(uint32_t)MDS_SET_KNOWN)
        return refuse(EINVAL, why, why_len, "set_mask 0x%x has unknown bits 0x%x", q->set_mask,
                      q->set_mask & ~(uint32_t)MDS_SET_KNOWN);
    const Depfs__Attr *a = q->attr;
    if (!a)
        return 0;
    if (q->set_mask & DEPFS_SET_MODE)
        rc = wire_check_mode(a->mode, why, why_len);
    if (rc == 0 && (q->set_mask & DEPFS_SET_UID))
        rc = wire_check_owner(a->uid, "uid", why, why_len);
    if (rc == 0 && (q->set_mask & DEPFS_SET_GID))
        rc = wire_check_owner(a->gid, "gid", why, why_len);
    return rc;
}

static int check_counts(uint16_t type, const Depfs__MdsRequest *q, char *why, size_t why_len)
{
    if (q->n_groups > WIRE_MAX_GROUPS)
        return refuse(EINVAL, why, why_len, "%zu groups > max %u", q->n_groups, WIRE_MAX_GROUPS);
    if (q->n_purge_inos > WIRE_PURGE_LIST_MAX)
        return refuse(E2BIG, why, why_len, "%zu purge_inos > max %u", q->n_purge_inos,
                      WIRE_PURGE_LIST_MAX);
    if (q->n_releases > WIRE_MDS_RELEASES_MAX)
        return refuse(E2BIG, why, why_len, "%zu releases > max %u", q->n_releases,
                      WIRE_MDS_RELEASES_MAX);
    if (q->n_releases > 0 && (type != DEPFS__MDS_OP__MDS_RELEASE || q->has_ino))
        return refuse(EINVAL, why, why_len, "releases: for MDS_RELEASE without an ino only");
    if (type == DEPFS__MDS_OP__MDS_CREATE && q->has_flags &&
        (q->flags & ~MDS_CREATE_FLAGS_KNOWN))
        return refuse(EINVAL, why, why_len, "create: unknown flags 0x%x", q->flags);
    if (q->has_alloc_bytes && q->alloc_bytes > WIRE_ALLOC_BYTES_MAX)
        return refuse(ERANGE, why, why_len, "alloc_bytes %llu > %llu, what the strip files of "
                      "a layout can hold", (unsigned long long)q->alloc_bytes,
                      (unsigned long long)WIRE_ALLOC_BYTES_MAX);
    if (q->has_unlinked && q->unlinked && (type != DEPFS__MDS_OP__MDS_CREATE || q->name))
        return refuse(EINVAL, why, why_len, "unlinked: for MDS_CREATE without a name only");
    if (q->has_migrate_ino && (q->migrate_ino == 0 || (q->has_ino && q->migrate_ino == q->ino)))
        return refuse(EINVAL, why, why_len, "migrate_ino %llu is no inode apart from ino",
                      (unsigned long long)q->migrate_ino);
    if (type == DEPFS__MDS_OP__MDS_OPEN && q->has_flags && (q->flags & ~MDS_OPEN_FLAGS_KNOWN))
        return refuse(EINVAL, why, why_len, "open: unknown flags 0x%x", q->flags);
    return 0;
}

int mds_req_check(uint16_t type, const Depfs__MdsRequest *q, const uint8_t *hdr, size_t hdr_len,
                  char *why, size_t why_len)
{
    int rc = wire_check_strings(&depfs__mds_request__descriptor, hdr, hdr_len, why, why_len);
    if (rc == 0)
        rc = check_strings(q, why, why_len);
    if (rc == 0)
        rc = check_new_attrs(q, why, why_len);
    if (rc == 0)
        rc = check_setattr(q, why, why_len);
    if (rc == 0)
        rc = check_counts(type, q, why, why_len);
    return rc;
}
