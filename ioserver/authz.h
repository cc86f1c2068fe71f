/* authz.h - what each authenticated peer may ask of an I/O server (roles of
 * auth.h). Holders of the cluster key (daemons, admins) may do anything; a
 * client with an MDS ticket may read, write, lock and remove, but locks
 * only in its own name (the connection's client id, never the message's
 * word), and none of the admin operations: server states and epochs
 * (IO_SET_STATE), dirty records (IO_DIRTY but for DIRTY_PROBE, which a
 * writer asks after a cluster change), heartbeats (they renew the
 * recovery lease and list everyone's locks), nor, in any op (a dirty
 * probe's too), the flags that are recovery's: ignore_locks, lock
 * take-overs, unverified reads and background I/O. With auth off (who
 * NULL) everything is allowed.
 *
 * A ticket holder must also show, with every request that names a file,
 * the MDS's capability for that file (auth.h): tagged with the capability
 * key, unexpired (AUTH_CAP_SKEW_S of grace for clocks), for this file_id,
 * for the connection's client id (its ticket's), with the rights the op
 * needs (io_caps.h). Nothing is cached and the MDS is never asked: one
 * keyed BLAKE2b over AUTH_CAP_BYTES per request. */
#ifndef DEPFS_IOS_AUTHZ_H
#define DEPFS_IOS_AUTHZ_H
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "depfs.pb-c.h"

/* 0, or -EPERM with the reason in why. */
int ios_authorize(const auth_identity *who, uint16_t type, const Depfs__IoRequest *q, char *why,
                  size_t why_len);

/* 0, or -EACCES with the reason in why. cap_key NULL: auth off (then who
 * is NULL too). now_s: the wall clock, seconds since the epoch. */
int ios_check_capability(const auth_identity *who, uint16_t type, const Depfs__IoRequest *q,
                         const uint8_t *cap_key, uint64_t now_s, char *why, size_t why_len);

#endif
