/* authz.c - the MDS's access rules by role (authz.h). */
#include "authz.h"

#include <errno.h>
#include <stdio.h>

int mds_authorize(const auth_identity *who, uint16_t type, const Depfs__MdsRequest *q, char *why,
                  size_t why_len)
{
    (void)q;
    if (!who || who->role == AUTH_ROLE_CLUSTER)
        return 0;
    if (type == DEPFS__MDS_OP__MDS_SET_SERVER_STATE) {
        snprintf(why, why_len, "MDS_SET_SERVER_STATE is an admin operation (the cluster key's "
                               "holders only); uid %u refused", who->uid);
        return -EPERM;
    }
    return 0;
}
