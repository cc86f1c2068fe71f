/* authz.h - what each authenticated peer may ask of an I/O server (roles of
 * auth.h). Holders of the cluster key (daemons, admins) may do anything; a
 * client with an MDS ticket may read, write, lock and remove, but locks
 * only in its own name (the connection's client id, never the message's
 * word), and none of the admin operations: server states and epochs
 * (IO_SET_STATE), dirty records (IO_DIRTY but for DIRTY_PROBE, which a
 * writer asks after a cluster change), heartbeats (they renew the
 * recovery lease and list everyone's locks), ignore_locks and lock
 * take-overs. With auth off (who NULL) everything is allowed. */
#ifndef DEPFS_IOS_AUTHZ_H
#define DEPFS_IOS_AUTHZ_H
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "depfs.pb-c.h"

/* 0, or -EPERM with the reason in why. */
int ios_authorize(const auth_identity *who, uint16_t type, const Depfs__IoRequest *q, char *why,
                  size_t why_len);

#endif
