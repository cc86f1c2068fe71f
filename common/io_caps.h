/* io_caps.h - which capability rights (auth.h) each I/O request needs: the
 * one rule the I/O servers enforce (ioserver/authz.c) and libdepfs asks
 * the MDS for (client/lib/io_fanout.c).
 *
 *   READ : IO_READ (without a lock or under a reading lock), IO_LOCK of a
 *          reading lock, IO_UNLOCK (only one's own locks, authz.c), IO_FSYNC,
 *          IO_STAT of a file (its strip size), IO_DIRTY DIRTY_PROBE,
 *          IO_EXTENTS (where a strip file holds data, its allocation)
 *   WRITE: IO_WRITE, IO_TRUNCATE, IO_REMOVE, IO_LOCK of a writing lock and
 *          IO_READ under one (the pre-read of a read-modify-write)
 *   none : requests that name no file (IO_STAT without one) and the admin
 *          operations, which only the cluster key's holders may send
 * AUTH_CAP_WRITE covers READ (auth_cap_covers). */
#ifndef DEPFS_IO_CAPS_H
#define DEPFS_IO_CAPS_H
#include <stdbool.h>
#include <stdint.h>

#include "depfs.pb-c.h"

/* AUTH_CAP_READ, AUTH_CAP_WRITE or 0 (no capability needed). */
uint32_t io_caps_needed(uint16_t type, const Depfs__IoRequest *q);

/* The MDS requests (MdsOp) whose reply may carry a capability: MDS_OPEN
 * and MDS_CREATE (an unlinked file's strip files are the purge queue's,
 * not the client's). */
bool io_caps_mds_op_grants(uint16_t mds_op);
/* The MDS requests made in the name of a client the MDS must be sure of:
 * those that grant, MDS_RELEASE (a client gives back its hold of a
 * file, mds/holds.h) and MDS_MIGRATE_SWAP (the migrating client's own
 * handles are not counted as other writers). A ticket holder sends its ticket with them
 * (MdsRequest.ticket) and the MDS takes that ticket's client
 * (mds/cap_owner.h). */
bool io_caps_mds_op_binds_client(uint16_t mds_op);

#endif
