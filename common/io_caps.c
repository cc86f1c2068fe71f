/* io_caps.c - the rights each I/O request needs (io_caps.h). */
#include "io_caps.h"

#include "auth.h"

static bool reading_lock(const Depfs__LockSpec *l)
{
    return l && l->has_read_only && l->read_only;
}

uint32_t io_caps_needed(uint16_t type, const Depfs__IoRequest *q)
{
    switch (type) {
    case DEPFS__IO_OP__IO_READ: /* under a lock: a reading one, or a write's pre-read */
        return !q->lock || reading_lock(q->lock) ? AUTH_CAP_READ : AUTH_CAP_WRITE;
    case DEPFS__IO_OP__IO_LOCK:
        return reading_lock(q->lock) ? AUTH_CAP_READ : AUTH_CAP_WRITE;
    case DEPFS__IO_OP__IO_WRITE:
    case DEPFS__IO_OP__IO_TRUNCATE:
    case DEPFS__IO_OP__IO_REMOVE:
        return AUTH_CAP_WRITE;
    case DEPFS__IO_OP__IO_UNLOCK:
    case DEPFS__IO_OP__IO_FSYNC:
    case DEPFS__IO_OP__IO_EXTENTS:
        return AUTH_CAP_READ;
    case DEPFS__IO_OP__IO_STAT:
    case DEPFS__IO_OP__IO_DIRTY:
        return q->file_id != 0 ? AUTH_CAP_READ : 0;
    default:
        return 0;
    }
}

bool io_caps_mds_op_grants(uint16_t mds_op)
{
    switch (mds_op) {
    case DEPFS__MDS_OP__MDS_OPEN:
    case DEPFS__MDS_OP__MDS_CREATE:
        return true;
    default:
        return false;
    }
}

bool io_caps_mds_op_binds_client(uint16_t mds_op)
{
    return io_caps_mds_op_grants(mds_op) || mds_op == DEPFS__MDS_OP__MDS_RELEASE ||
           mds_op == DEPFS__MDS_OP__MDS_MIGRATE_SWAP;
}
