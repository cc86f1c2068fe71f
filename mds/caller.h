/* caller.h - who acts in one MDS request: the uid, gid and groups every
 * permission check (perm.h) uses, from the connection's authenticated
 * identity (auth.h) and the request's claimed uid/gid/groups:
 *
 *   - auth off (who NULL): the claimed credentials (no security; the same
 *     semantics, so tests mean the same). Absent credentials: root.
 *   - AUTH_ROLE_CLUSTER (the cluster key: daemons, admin tools, mounts on
 *     nodes with the key): trusted to act for the claimed credentials
 *     (absent: root). Never squashed.
 *   - AUTH_ROLE_USER (MUNGE): the proven uid/gid, with supplementary groups
 *     from the MDS's NSS (groups.h); what the request claims is ignored.
 *     Except: a proven root whose credential was made on a host listed in
 *     `client_nodes` is depfs-fuse serving many users, and acts for the
 *     claimed credentials of each kernel request. Then, with root_squash on
 *     (the default), uid 0 becomes squash_uid/squash_gid with no groups.
 *   - any other role: refused (EACCES).
 *
 * Return convention: 0 or a negative errno with the reason in why. */
#ifndef DEPFS_MDS_CALLER_H
#define DEPFS_MDS_CALLER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "config.h"
#include "depfs.pb-c.h"
#include "wire_check.h"

#define MDS_ROOT_UID 0u
#define MDS_CALLER_GROUPS_MAX WIRE_MAX_GROUPS

typedef struct mds_caller {
    uint32_t uid, gid;
    unsigned n_groups;                       /* supplementary groups */
    uint32_t groups[MDS_CALLER_GROUPS_MAX];
    bool squashed;                           /* root turned into squash_uid */
    uint64_t client_id; /* the mount the request came from (MdsRequest.client_id,
                         * set by the handler; 0: none): whose kernel followed a
                         * directory it moved (mds_ns_rename). Not a permission. */
} mds_caller;

/* The identity rules, from the config (mds_caller_policy_from_config). */
typedef struct mds_caller_policy {
    /* client_nodes, root_squash, squash_uid/gid; NULL: the defaults (no
     * client nodes, root squashed to CONFIG_DEFAULT_SQUASH_ID) */
    const depfs_config *cfg;
    /* a MUNGE user's groups: NULL means NSS (mds_groups_of); tests set it */
    void (*groups_of)(uint32_t uid, uint32_t gid, uint32_t *out, unsigned *n);
} mds_caller_policy;

/* p NULL: the default policy. */
int mds_caller_resolve(const mds_caller_policy *p, const auth_identity *who,
                       const Depfs__MdsRequest *q, mds_caller *out, char *why, size_t why_len);

bool mds_caller_is_root(const mds_caller *c);
/* gid is the caller's gid or one of its groups. */
bool mds_caller_in_group(const mds_caller *c, uint32_t gid);

#endif
