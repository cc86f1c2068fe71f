/* groups.h - the supplementary groups of a MUNGE-proven user, as the MDS's
 * NSS says (getpwuid_r, getgrouplist: /etc/group, LDAP, SSSD... whatever
 * nsswitch.conf names). A MUNGE credential proves only a uid and a gid;
 * the groups a process holds cannot be proven, so the MDS asks its own
 * name service, as NFS servers do with manage-gids. The MDS must therefore
 * see the same users and groups as the clients.
 *
 * Answers are cached per (uid, gid) for MDS_GROUPS_TTL_MS in at most
 * MDS_GROUPS_SLOTS entries (the oldest goes first): a group change reaches
 * the MDS within a minute, and a flood of distinct uids costs a bounded
 * table and one NSS lookup each. Thread-safe. */
#ifndef DEPFS_MDS_GROUPS_H
#define DEPFS_MDS_GROUPS_H
#include <stdint.h>

#include "wire_check.h"

#define MDS_GROUPS_MAX WIRE_MAX_GROUPS /* kept per user; more are dropped (logged) */
#define MDS_GROUPS_TTL_MS 60000u
#define MDS_GROUPS_SLOTS 256u

/* The groups of uid whose primary gid is gid (gid always among them):
 * *n of them into out (MDS_GROUPS_MAX). A uid NSS does not know has gid
 * only. Never fails. */
void mds_groups_of(uint32_t uid, uint32_t gid, uint32_t out[MDS_GROUPS_MAX], unsigned *n);

/* Drops every cached answer (tests). */
void mds_groups_flush(void);

#endif
