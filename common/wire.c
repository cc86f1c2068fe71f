/* wire.c - server state names and the compile-time ties between C
 * constants, their protobuf values and the limits that depend on each
 * other (wire.h). */
#include "wire.h"

#include "config.h"
#include "depfs.pb-c.h"
#include "frame.h"
#include "layout.h"
#include "wire_check.h"

#include <limits.h>
#include <linux/limits.h>

/* setattr bits: depfs.h == proto SetMask (the MDS reads the mask as sent) */
_Static_assert(DEPFS_SET_MODE == DEPFS__SET_MASK__SET_MODE, "DEPFS_SET_MODE drifted from proto");
_Static_assert(DEPFS_SET_UID == DEPFS__SET_MASK__SET_UID, "DEPFS_SET_UID drifted from proto");
_Static_assert(DEPFS_SET_GID == DEPFS__SET_MASK__SET_GID, "DEPFS_SET_GID drifted from proto");
_Static_assert(DEPFS_SET_SIZE == DEPFS__SET_MASK__SET_SIZE, "DEPFS_SET_SIZE drifted from proto");
_Static_assert(DEPFS_SET_ATIME == DEPFS__SET_MASK__SET_ATIME, "DEPFS_SET_ATIME drifted from proto");
_Static_assert(DEPFS_SET_MTIME == DEPFS__SET_MASK__SET_MTIME, "DEPFS_SET_MTIME drifted from proto");
_Static_assert(DEPFS_SET_ATIME_NOW == DEPFS__SET_MASK__SET_ATIME_NOW,
               "DEPFS_SET_ATIME_NOW drifted from proto");
_Static_assert(DEPFS_SET_MTIME_NOW == DEPFS__SET_MASK__SET_MTIME_NOW,
               "DEPFS_SET_MTIME_NOW drifted from proto");
_Static_assert(DEPFS_SET_CTIME == DEPFS__SET_MASK__SET_CTIME, "DEPFS_SET_CTIME drifted from proto");

/* server states: depfs.h == proto ServerState (stored by the MDS and the
 * I/O servers, so a change here is an on-disk format change too) */
_Static_assert(DEPFS_SERVER_UP == DEPFS__SERVER_STATE__SERVER_UP, "DEPFS_SERVER_UP drifted");
_Static_assert(DEPFS_SERVER_DOWN == DEPFS__SERVER_STATE__SERVER_DOWN, "DEPFS_SERVER_DOWN drifted");
_Static_assert(DEPFS_SERVER_REBUILDING == DEPFS__SERVER_STATE__SERVER_REBUILDING,
               "DEPFS_SERVER_REBUILDING drifted");
_Static_assert(DEPFS_SERVER_RECONSTRUCTING == DEPFS__SERVER_STATE__SERVER_RECONSTRUCTING,
               "DEPFS_SERVER_RECONSTRUCTING drifted");

/* per-file limits: the public ones are the layout module's */
_Static_assert(DEPFS_MAX_SERVERS_PER_FILE == LAYOUT_MAX_N,
               "depfs_layout_info.servers must hold every server of a layout");
_Static_assert(DEPFS_STRIPE_UNIT_MAX == LAYOUT_MAX_SU, "one maximum stripe unit");
_Static_assert(DEPFS_STRIPE_UNIT_ALIGN == LAYOUT_MIN_SU,
               "the smallest stripe unit is the alignment of every stripe unit");
_Static_assert(LAYOUT_MAX_SU % LAYOUT_MIN_SU == 0, "the largest stripe unit is aligned");
_Static_assert(LAYOUT_DEFAULT_SU >= LAYOUT_MIN_SU && LAYOUT_DEFAULT_SU <= LAYOUT_MAX_SU &&
               LAYOUT_DEFAULT_SU % LAYOUT_MIN_SU == 0, "the default stripe unit is valid");
_Static_assert(LAYOUT_MAX_N <= CONFIG_MAX_IOSERVERS, "a layout's servers fit in a cluster");
/* stripe math in 64 bits: one stripe's data (k x su) fits in uint32_t pieces
 * (stripe_piece.off_in_stripe) */
_Static_assert((uint64_t)LAYOUT_MAX_N * LAYOUT_MAX_SU <= UINT32_MAX,
               "k x su of the largest layout fits in 32 bits");
/* frames: one full unit always fits in one frame under the default limits */
_Static_assert(LAYOUT_MAX_SU <= FRAME_DEFAULT_MAX_BULK_BYTES,
               "a whole stripe unit fits in one frame's bulk");

/* allocation (issue 14): a file's strip files' bytes, and that times k
 * (st_blocks is the data's share, alloc x k / n), fit in 64 bits */
_Static_assert(WIRE_ALLOC_BYTES_MAX <= UINT64_MAX / LAYOUT_MAX_N,
               "WIRE_ALLOC_BYTES_MAX x k fits in 64 bits");
_Static_assert(WIRE_DATA_EXTENTS_MAX > 0, "an IO_EXTENTS reply describes something");

/* names and xattrs: the limits of Linux, which the mount advertises */
_Static_assert(WIRE_NAME_MAX == NAME_MAX, "a DePFS name is a Linux name");
_Static_assert(WIRE_SYMLINK_MAX == PATH_MAX - 1, "a symlink target is a Linux path");
_Static_assert(WIRE_XATTR_NAME_MAX == XATTR_NAME_MAX, "xattr names as Linux");
_Static_assert(WIRE_XATTR_VALUE_MAX == XATTR_SIZE_MAX, "xattr values as Linux");
_Static_assert(WIRE_XATTR_LIST_MAX == XATTR_LIST_MAX, "xattr lists as Linux");
_Static_assert(WIRE_MAX_GROUPS == DEPFS_MAX_GROUPS, "the groups a client sends fit the MDS's bound");
_Static_assert(WIRE_EPOCH_MAX <= UINT64_MAX - 1, "an epoch past the bound is representable");

const char *depfs_state_name(uint32_t state)
{
    switch (state) {
    case DEPFS_SERVER_UP: return "up";
    case DEPFS_SERVER_DOWN: return "down";
    case DEPFS_SERVER_REBUILDING: return "rebuilding";
    case DEPFS_SERVER_RECONSTRUCTING: return "reconstructing";
    default: return "unknown";
    }
}

bool wire_mds_op_through_names(uint16_t mds_op)
{
    switch (mds_op) {
    case DEPFS__MDS_OP__MDS_OPEN:
    case DEPFS__MDS_OP__MDS_LOOKUP:
    case DEPFS__MDS_OP__MDS_CREATE:
    case DEPFS__MDS_OP__MDS_MKNOD:
    case DEPFS__MDS_OP__MDS_MKDIR:
    case DEPFS__MDS_OP__MDS_SYMLINK:
    case DEPFS__MDS_OP__MDS_UNLINK:
    case DEPFS__MDS_OP__MDS_RMDIR:
    case DEPFS__MDS_OP__MDS_RENAME:
    case DEPFS__MDS_OP__MDS_LINK:
        return true;
    default:
        return false;
    }
}
