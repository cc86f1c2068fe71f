/* authz.c - the MDS's access rules by role (authz.h). */
#include "authz.h"

#include <errno.h>
#include <stdio.h>

int mds_authorize(const auth_identity *who, uint16_t type, const Depfs__MdsRequest *q, char *why,
                  size_t why_len)
{
    /* every other op is a user's; what it may do to the files it names
     * is checked by the namespace (perm.h): MDS_MIGRATE_SWAP needs what
     * an unlink of the name needs on its directory and write permission
     * on the file and on its copy, which the client must hold open */
    if (!who || who->role == AUTH_ROLE_CLUSTER)
        return 0;
    /* a hold renewed without a capability answers a file's attributes and
     * keeps it from the purge with no permission check: it is for clients
     * that show the I/O servers no capability (the cluster key's holders);
     * a user's handles renew their capabilities instead */
    if (type == DEPFS__MDS_OP__MDS_OPEN && q && q->has_renew_hold && q->renew_hold) {
        snprintf(why, why_len, "MDS_OPEN renew_hold is the cluster key's holders' (a user's "
                 "handles renew their capabilities); uid %u refused", who->uid);
        return -EPERM;
    }
    const char *admin_op = type == DEPFS__MDS_OP__MDS_SET_SERVER_STATE ? "MDS_SET_SERVER_STATE"
                           : type == DEPFS__MDS_OP__MDS_PURGE_LIST     ? "MDS_PURGE_LIST"
                           : type == DEPFS__MDS_OP__MDS_PURGE_DONE     ? "MDS_PURGE_DONE"
                                                                       : NULL;
    if (admin_op) {
        snprintf(why, why_len, "%s is an admin operation (the cluster key's holders only); uid %u "
                 "refused", admin_op, who->uid);
        return -EPERM;
    }
    return 0;
}
