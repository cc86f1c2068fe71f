/* handles.h - inode handles: the tag of an inode and the check that a
 * user's request names only inodes it was given.
 *
 * Inode numbers are handed out in order (namespace.c next_ino), so anyone
 * can guess them; the permission checks of perm.h look at the inode a
 * request names, not at the path that led to it. Without more, a MUNGE
 * user crafting raw requests could GETATTR, OPEN (and get a capability
 * for), READLINK or LINK any inode whose own mode allows it, even inside
 * another user's 0700 directory (the FUSE mount's path walk would have
 * stopped it). So, as NFS servers do with file handles, an inode number
 * from such a caller counts only with its tag:
 *
 *   tag(ino) = the first 8 bytes (little-endian) of
 *              SipHash-2-4-128(K, N then ino, each as 8 little-endian
 *              bytes)
 *   K        = the first SIPHASH_KEY_BYTES of auth_derive(cluster key,
 *              AUTH_DERIVE_HANDLE) (rpc_auth.h; any prefix of that
 *              BLAKE2b output is as random as the whole)
 *   N        = the namespace's id (namespace.h mds_ns_id: random, made
 *              with the namespace), so a namespace made afresh under the
 *              same cluster key gives other tags to the same numbers
 *
 * The MDS alone holds K (derived at start from the persistent cluster key:
 * tags survive restarts) and hands a tag out with every Attr it sends
 * (handlers.c: a lookup with search permission on the parent, a create, a
 * getattr of a handle held) and with the Dirents of a READDIR when the
 * caller may search the directory read (POSIX: read alone lists names,
 * reaches nothing). Inode numbers are never reused (next_ino only grows),
 * so a tag needs no generation. A tag, like an NFS handle, is not revoked:
 * who reached an inode once keeps reaching it by number (its own mode is
 * still checked at every op), as an open descriptor or a cwd would.
 *
 * mds_handles_check runs in dispatch (handlers.c) before any op, after
 * the role (authz.h) and bounds (req_check.h) checks, over every
 * inode-number field PRESENT in the request, whichever op carries it (so
 * the rule cannot read a request differently from the handler): ino,
 * parent, new_parent, migrate_ino, each with its *_tag, and the ino of
 * every item of releases with the item's ino_tag; the root inode
 * (MDS_ROOT_INO) needs none. purge_inos (inode numbers without tags) is
 * refused from such callers (authz.h already keeps MDS_PURGE_DONE, the op
 * that reads it, to the cluster key's holders). Exempt: the cluster key's
 * holders (daemons, admin tools, mounts with the key: trusted with every
 * inode) and auth off (who NULL: no security at all). Every other role
 * is checked (caller.h refuses all but AUTH_ROLE_USER anyway).
 *
 * Return convention: 0 or -EACCES with the reason (field, inode, uid) in
 * why; the refusal is logged by dispatch (rate-limited, with the peer and
 * the op). */
#ifndef DEPFS_MDS_HANDLES_H
#define DEPFS_MDS_HANDLES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "depfs.pb-c.h"
#include "siphash.h"

/* The key of the tags; zeroed (keyed false): no tags are given, and every
 * checked request naming an inode other than the root is refused. */
typedef struct mds_handles {
    bool keyed;
    uint8_t key[SIPHASH_KEY_BYTES];
    uint64_t namespace_id;
} mds_handles;

/* handle_key: auth_derive(cluster key, AUTH_DERIVE_HANDLE) (rpc_auth.h);
 * namespace_id: mds_ns_id of the namespace served. */
void mds_handles_init(mds_handles *h, const uint8_t handle_key[AUTH_KEY_BYTES],
                      uint64_t namespace_id);
void mds_handles_wipe(mds_handles *h);
/* The tag of ino (h keyed). */
uint64_t mds_handle_tag(const mds_handles *h, uint64_t ino);
/* Whether who's requests need no tags: the cluster key's holders, auth off
 * (NULL). */
bool mds_handles_exempt(const auth_identity *who);
/* The check of every inode-number field present in q (see above). */
int mds_handles_check(const mds_handles *h, const auth_identity *who, const Depfs__MdsRequest *q,
                      char *why, size_t why_len);

#endif
