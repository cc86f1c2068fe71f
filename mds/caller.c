/* caller.c - the acting credentials of an MDS request (caller.h). */
#include "caller.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "groups.h"

_Static_assert(MDS_GROUPS_MAX == MDS_CALLER_GROUPS_MAX, "one bound on a caller's groups");

/* What the request claims (absent: root), bounded by WIRE_MAX_GROUPS. */
static void claimed(const Depfs__MdsRequest *q, mds_caller *out)
{
    memset(out, 0, sizeof(*out));
    out->uid = q && q->has_uid ? q->uid : MDS_ROOT_UID;
    out->gid = q && q->has_gid ? q->gid : MDS_ROOT_UID;
    size_t n = q ? q->n_groups : 0;
    if (n > MDS_CALLER_GROUPS_MAX)
        n = MDS_CALLER_GROUPS_MAX; /* req_check.c refuses more before we get here */
    for (size_t i = 0; i < n; i++)
        out->groups[i] = q->groups[i];
    out->n_groups = (unsigned)n;
}

static void proven(const mds_caller_policy *p, const auth_identity *who, mds_caller *out)
{
    memset(out, 0, sizeof(*out));
    out->uid = who->uid;
    out->gid = who->gid;
    if (p && p->groups_of)
        p->groups_of(who->uid, who->gid, out->groups, &out->n_groups);
    else
        mds_groups_of(who->uid, who->gid, out->groups, &out->n_groups);
}

/* cfg NULL: the defaults (root_squash on, CONFIG_DEFAULT_SQUASH_ID). */
static void squash(const depfs_config *cfg, mds_caller *c)
{
    if ((cfg && !cfg->root_squash) || c->uid != MDS_ROOT_UID)
        return;
    c->uid = cfg ? cfg->squash_uid : CONFIG_DEFAULT_SQUASH_ID;
    c->gid = cfg ? cfg->squash_gid : CONFIG_DEFAULT_SQUASH_ID;
    c->n_groups = 0;
    c->squashed = true;
}

int mds_caller_resolve(const mds_caller_policy *p, const auth_identity *who,
                       const Depfs__MdsRequest *q, mds_caller *out, char *why, size_t why_len)
{
    if (!who || who->role == AUTH_ROLE_CLUSTER) {
        claimed(q, out);
        return 0;
    }
    if (who->role != AUTH_ROLE_USER) {
        snprintf(why, why_len, "a peer of role %d has no business at the MDS", (int)who->role);
        return -EACCES;
    }
    const depfs_config *cfg = p ? p->cfg : NULL;
    if (who->uid == MDS_ROOT_UID && cfg && config_is_client_node(cfg, who->origin_ipv4))
        claimed(q, out); /* depfs-fuse on a client node, for its kernel's callers */
    else
        proven(p, who, out);
    squash(cfg, out);
    return 0;
}

bool mds_caller_is_root(const mds_caller *c)
{
    return c->uid == MDS_ROOT_UID;
}

bool mds_caller_in_group(const mds_caller *c, uint32_t gid)
{
    if (c->gid == gid)
        return true;
    for (unsigned i = 0; i < c->n_groups && i < MDS_CALLER_GROUPS_MAX; i++)
        if (c->groups[i] == gid)
            return true;
    return false;
}
