/* wire.h - the C names of DePFS's wire values, in one place.
 *
 * proto/depfs.proto is the source of every value that crosses the wire.
 * The ones applications see (setattr bits DEPFS_SET_*, server states
 * DEPFS_SERVER_*, per-file limits) are mirrored in the public depfs.h, which
 * cannot include protobuf headers; the rest of DePFS (MDS, I/O servers,
 * recovery, CLI) uses those same names through this header and nothing
 * else. wire.c ties every mirror to its protobuf value, and the limits that
 * depend on each other, with _Static_assert: a drift fails the build.
 *
 * Limits keep living in the header of the module that enforces them
 * (layout.h stripe units and n, frame.h frame sizes, config.h servers); the
 * relations between them are checked in wire.c (and, for the I/O server's
 * own limits, next to them in ioserver/handlers.h). */
#ifndef DEPFS_WIRE_H
#define DEPFS_WIRE_H
#include <stdbool.h>
#include <stdint.h>

#include "depfs.h"

#define DEPFS_SERVER_STATE_MAX DEPFS_SERVER_RECONSTRUCTING

/* The longest LockSpec.wait_ms an I/O server accepts (ioserver/req_check.c
 * refuses more): a lock request waits at most this long for conflicting
 * locks. Clients ask for less than their request timeout. */
#define WIRE_LOCK_WAIT_MAX_MS 1000u

/* "up", "down", "rebuilding", "reconstructing"; "unknown" for other values.
 * The one spelling of server states in logs, `depfs status` and JSON. */
const char *depfs_state_name(uint32_t state);

/* The MDS requests (MdsOp) that reach inodes through names a client's
 * kernel caches, and so may carry MdsRequest.names_epoch: OPEN, LOOKUP,
 * CREATE, MKNOD, MKDIR, SYMLINK, UNLINK, RMDIR, RENAME, LINK. */
bool wire_mds_op_through_names(uint16_t mds_op);

#endif
