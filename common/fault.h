/* fault.h - named fault-injection points (SQLite's and DAOS's way of
 * testing failure paths nothing else reaches): a storage or transport call
 * site asks FAULT_POINT(FAULT_STRIP_PWRITE) and, when the point is armed,
 * fails as the named fault says. Compiled only into test builds (make
 * hooks, -DDEPFS_TEST_HOOKS): everywhere else FAULT_POINT is the constant
 * false and costs nothing.
 *
 * Armed from tests through the environment of the process:
 *   DEPFS_FAULTS="strip_pwrite_enospc=3,kv_sync_eio"
 * NAME[=N]: the next N hits fail (no N: every hit), each failure logged. */
#ifndef DEPFS_FAULT_H
#define DEPFS_FAULT_H
#include <stdbool.h>

typedef enum fault_point {
    FAULT_STRIP_PWRITE_ENOSPC, /* ioserver/strips.c: pwrite of a unit fails ENOSPC */
    FAULT_STRIP_PWRITE_EIO,    /* ioserver/strips.c: pwrite of a unit fails EIO */
    FAULT_STRIP_PREAD_EIO,     /* ioserver/strips.c: pread of a unit fails EIO */
    FAULT_KV_SYNC_EIO,         /* common/kvstore.c: a synced write fails EIO */
    FAULT_XPORT_FLIP_BIT,      /* common/transport_tcp.c: one bit of a frame's bulk flips
                                * on the way (a copy: the sender's bytes stay) */
    FAULT_STRIP_NO_CHECKSUMS,  /* ioserver/strips.c (asked once, at start): strip files
                                * are made and written without checksum sidecars, as
                                * before checksums (make bench's "checksums off") */
    FAULT_WRITE_MEM_FLIP,      /* ioserver/handlers.c: one bit of a WRITE's bulk flips in
                                * the server's memory after the frame's CRC check */
    FAULT_WRITE_UNANSWERED,    /* ioserver/handlers.c: a WRITE carrying units is neither
                                * stored nor answered (its writer alone loses the
                                * server: a one-client partition in miniature) */
    FAULT_DECIDE_LAG,          /* recovery/decide.c: a decision round reads the MDS
                                * FAULT_DECIDE_LAG_MS after it took the probers'
                                * observations (a daemon descheduled between the two) */
    FAULT_POINTS
} fault_point;

/* FAULT_DECIDE_LAG: how long the round waits */
#define FAULT_DECIDE_LAG_MS 1000u

#ifdef DEPFS_TEST_HOOKS
bool fault_hit(fault_point p);
#define FAULT_POINT(p) fault_hit(p)
#else
#define FAULT_POINT(p) false
#endif

#endif
