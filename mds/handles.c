/* handles.c - inode handles (handles.h): the tag of an inode and the
 * check that a user's request names only inodes it was given. */
#include "handles.h"

#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "namespace.h" /* MDS_ROOT_INO */

_Static_assert(SIPHASH_KEY_BYTES <= AUTH_KEY_BYTES, "the tag key is a prefix of a derived key");
_Static_assert(SIPHASH128_BYTES >= sizeof(uint64_t), "a tag is a prefix of one SipHash output");

/* The inode-number fields an MdsRequest may carry, each with its tag. */
#define MDS_HANDLE_FIELDS 5u

typedef struct named_ino {
    const char *field;
    bool has;
    uint64_t ino;
    bool has_tag;
    uint64_t tag;
} named_ino;

void mds_handles_init(mds_handles *h, const uint8_t handle_key[AUTH_KEY_BYTES],
                      uint64_t namespace_id)
{
    memcpy(h->key, handle_key, sizeof(h->key));
    h->namespace_id = namespace_id;
    h->keyed = true;
}

void mds_handles_wipe(mds_handles *h)
{
    auth_wipe(h->key, sizeof(h->key));
    h->keyed = false;
}

uint64_t mds_handle_tag(const mds_handles *h, uint64_t ino)
{
    siphash128_state st;
    uint8_t out[SIPHASH128_BYTES];
    uint64_t ns_le = htole64(h->namespace_id), le = htole64(ino), tag;
    assert(h->keyed);
    siphash128_init(&st, h->key);
    siphash128_update(&st, &ns_le, sizeof(ns_le));
    siphash128_update(&st, &le, sizeof(le));
    siphash128_final(&st, out);
    memcpy(&tag, out, sizeof(tag));
    return le64toh(tag);
}

bool mds_handles_exempt(const auth_identity *who)
{
    return !who || who->role == AUTH_ROLE_CLUSTER;
}

/* Every inode-number field of q, present or not. */
static void named_inos(const Depfs__MdsRequest *q, named_ino out[MDS_HANDLE_FIELDS])
{
    out[0] = (named_ino){ "ino", q->has_ino, q->ino, q->has_ino_tag, q->ino_tag };
    out[1] = (named_ino){ "parent", q->has_parent, q->parent, q->has_parent_tag, q->parent_tag };
    out[2] = (named_ino){ "new_parent", q->has_new_parent, q->new_parent, q->has_new_parent_tag,
                          q->new_parent_tag };
    out[3] = (named_ino){ "migrate_ino", q->has_migrate_ino, q->migrate_ino,
                          q->has_migrate_ino_tag, q->migrate_ino_tag };
    out[4] = (named_ino){ "names_via", q->has_names_via, q->names_via, q->has_names_via_tag,
                          q->names_via_tag };
}

static bool tag_ok(const mds_handles *h, const named_ino *n)
{
    uint64_t want = mds_handle_tag(h, n->ino);
    return auth_equal(&want, &n->tag, sizeof(want));
}

static int check_one(const mds_handles *h, const auth_identity *who, const named_ino *n, char *why,
                     size_t why_len)
{
    if (!n->has || n->ino == MDS_ROOT_INO)
        return 0;
    const char *wrong = !h->keyed   ? "this MDS has no handle key (auth off)"
                        : !n->has_tag ? "no handle tag"
                        : !tag_ok(h, n) ? "a wrong handle tag"
                                        : NULL;
    if (!wrong)
        return 0;
    snprintf(why, why_len, "uid %u named inode %llu (%s) with %s: a user reaches an inode only "
             "through the replies that named it (a lookup from the root, a readdir of a "
             "directory it may search)", who->uid, (unsigned long long)n->ino, n->field, wrong);
    return -EACCES;
}

int mds_handles_check(const mds_handles *h, const auth_identity *who, const Depfs__MdsRequest *q,
                      char *why, size_t why_len)
{
    named_ino n[MDS_HANDLE_FIELDS];
    if (mds_handles_exempt(who))
        return 0;
    if (q->n_purge_inos > 0) {
        snprintf(why, why_len, "uid %u sent purge_inos: inode numbers without handles are the "
                 "cluster key's holders' only", who->uid);
        return -EACCES;
    }
    named_inos(q, n);
    for (unsigned i = 0; i < MDS_HANDLE_FIELDS; i++) {
        int rc = check_one(h, who, &n[i], why, why_len);
        if (rc < 0)
            return rc;
    }
    for (size_t i = 0; i < q->n_releases; i++) {
        const Depfs__HoldRelease *r = q->releases[i];
        named_ino one = { "releases.ino", true, r->ino, r->has_ino_tag, r->ino_tag };
        int rc = check_one(h, who, &one, why, why_len);
        if (rc < 0)
            return rc;
    }
    return 0;
}
