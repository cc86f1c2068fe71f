/* authz.h - what each authenticated peer may ask of the MDS (roles of
 * auth.h): server states (MDS_SET_SERVER_STATE) and the purge queue's
 * draining (MDS_PURGE_LIST, MDS_PURGE_DONE), and holds renewed without a
 * capability (MDS_OPEN renew_hold), only from the holders of the cluster
 * key (depfs-recovery, admins). With auth off (who NULL) everything is
 * allowed. */
#ifndef DEPFS_MDS_AUTHZ_H
#define DEPFS_MDS_AUTHZ_H
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "depfs.pb-c.h"

/* 0, or -EPERM with the reason in why. */
int mds_authorize(const auth_identity *who, uint16_t type, const Depfs__MdsRequest *q, char *why,
                  size_t why_len);

#endif
