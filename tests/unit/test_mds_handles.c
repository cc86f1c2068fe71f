/* test_mds_handles.c - inode handles at the MDS (mds/handles.c and where
 * handlers.c uses them), on a real LevelDB in a temp dir: the tag (stable
 * for a key, another for another key or inode), the check of every
 * inode-number field present in a request whichever op carries it (root
 * exempt, the cluster key's holders and auth off exempt, an unkeyed MDS
 * refusing), and through mds_process as the daemon calls it: a MUNGE user
 * who guesses the inode numbers inside another user's 0700 directory gets
 * EACCES for GETATTR, OPEN, READLINK, READDIR, LINK, SETATTR, EXTEND,
 * xattrs and a LOOKUP there, also with a forged tag; its own files, reached
 * by lookups from the root, work with the tags the replies gave; a READDIR
 * of a directory it may read but not search gives no tags, one it may
 * search does. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "auth.h"
#include "depfs.pb-c.h"
#include "mds/handlers.h"
#include "mds/handles.h"
#include "mds/namespace.h"
#include "mds/store_keys.h"
#include "tests/lib/mds_handlers.h"
#include "tests/lib/mds_store.h"

#define N_SERVERS 4u
#define DEF_N 4u
#define DEF_K 2u
#define DEF_SU 65536u
#define ROOT MDS_ROOT_INO
#define ALICE 1000u
#define BOB 2000u
#define WHY_LEN 256u
#define FORGED_TAG 0x0123456789abcdefull
#define LOOKUPS 1000u /* inodes whose tags must all differ */

static const auth_identity cluster = { .role = AUTH_ROLE_CLUSTER };
static const auth_identity bob = { .role = AUTH_ROLE_USER, .uid = BOB, .gid = BOB };
static const auth_identity ticket_holder = { .role = AUTH_ROLE_CLIENT, .uid = BOB, .gid = BOB };

static tms_store store;
static tmh hh;
static char why[MDS_WHY_MAX];

/* Alice's tree: /alice (0700) holding secret (0644), lnk (a symlink),
 * pub (0777, holding f 0666); /tmp (01777); /listonly (0744, root's, one
 * file in it): Bob may list it but not search it. */
static struct {
    uint64_t alice, secret, lnk, pub, pubf, tmp, listonly, lof;
} t;

static const uint8_t key_a[AUTH_KEY_BYTES] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
static const uint8_t key_b[AUTH_KEY_BYTES] = { 9, 8, 7, 6, 5, 4, 3, 2, 1 };
#define NS_A 0x5eed5eed5eed5eedull /* a namespace id */

/* Bob's groups: none (not NSS's idea of uid BOB) */
static void no_groups(uint32_t uid, uint32_t gid, uint32_t *out, unsigned *n)
{
    (void)uid;
    (void)gid;
    (void)out;
    *n = 0;
}

static uint64_t make(uint64_t parent, const char *name, uint32_t mode, uint32_t uid,
                     const char *target)
{
    mds_new nw = { .parent = parent, .name = name, .mode = mode, .uid = uid, .gid = uid,
                   .target = target };
    mds_inode in;
    int rc = S_ISDIR(mode)   ? mds_ns_mkdir(store.ns, &nw, &in, why)
             : S_ISLNK(mode) ? mds_ns_symlink(store.ns, &nw, &in, why)
                             : mds_ns_create(store.ns, &nw, O_EXCL, &in, why);
    ck_assert_msg(rc == 0, "%s: %s", name, why);
    return in.ino;
}

static void setup(void)
{
    tms_setup(&store, N_SERVERS, DEF_N, DEF_K, DEF_SU);
    tmh_up(&hh, &store, N_SERVERS, 0);
    mds_handles_init(&hh.ctx.handles, key_a, mds_ns_id(store.ns));
    hh.ctx.callers.groups_of = no_groups;
    t.alice = make(ROOT, "alice", S_IFDIR | 0700, ALICE, NULL);
    t.secret = make(t.alice, "secret", S_IFREG | 0644, ALICE, NULL);
    t.lnk = make(t.alice, "lnk", S_IFLNK | 0777, ALICE, "/very/private/target");
    t.pub = make(t.alice, "pub", S_IFDIR | 0777, ALICE, NULL);
    t.pubf = make(t.pub, "f", S_IFREG | 0666, ALICE, NULL);
    t.tmp = make(ROOT, "tmp", S_IFDIR | 01777, 0, NULL);
    t.listonly = make(ROOT, "listonly", S_IFDIR | 0744, 0, NULL);
    t.lof = make(t.listonly, "lof", S_IFREG | 0644, 0, NULL);
}

static void teardown(void)
{
    tmh_down(&hh);
    tms_teardown(&store);
}

static uint64_t tag_of(uint64_t ino)
{
    return mds_handle_tag(&hh.ctx.handles, ino);
}

/* The err of one request from who. */
static int req(const auth_identity *who, Depfs__MdsOp op, Depfs__MdsRequest *q)
{
    return tmh_req_as(&hh, who, op, q, NULL);
}

static Depfs__MdsRequest by_ino(uint64_t ino, bool with_tag, uint64_t tag)
{
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    q.has_ino = true;
    q.ino = ino;
    q.has_ino_tag = with_tag;
    q.ino_tag = tag;
    return q;
}

/* Bob's LOOKUP of name in parent with parent's tag: err, *ino, *tag. */
static int lookup(uint64_t parent, uint64_t parent_tag, const char *name, uint64_t *ino,
                  uint64_t *tag)
{
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    mds_result *r;
    q.has_parent = true;
    q.parent = parent;
    q.has_parent_tag = parent != ROOT;
    q.parent_tag = parent_tag;
    q.name = (char *)name;
    int err = tmh_req_as(&hh, &bob, DEPFS__MDS_OP__MDS_LOOKUP, &q, &r);
    const Depfs__MdsReply *rep = mds_result_reply(r);
    if (err == 0) {
        ck_assert_ptr_nonnull(rep->attr);
        ck_assert(rep->attr->has_tag);
        *ino = rep->attr->ino;
        *tag = rep->attr->tag;
    }
    mds_result_free(r);
    return err;
}

/* ------------------------------------------------------------ the tag */

START_TEST(test_tag)
{
    mds_handles a, a2, b, other_ns;
    mds_handles_init(&a, key_a, NS_A);
    mds_handles_init(&a2, key_a, NS_A);
    mds_handles_init(&b, key_b, NS_A);
    mds_handles_init(&other_ns, key_a, NS_A + 1);
    ck_assert(a.keyed);
    ck_assert_uint_eq(mds_handle_tag(&a, 7), mds_handle_tag(&a2, 7)); /* a restart: the same */
    ck_assert_uint_ne(mds_handle_tag(&a, 7), mds_handle_tag(&b, 7));
    ck_assert_uint_ne(mds_handle_tag(&a, 7), mds_handle_tag(&other_ns, 7));
    uint64_t seen[LOOKUPS];
    for (unsigned i = 0; i < LOOKUPS; i++) {
        seen[i] = mds_handle_tag(&a, ROOT + 1 + i);
        for (unsigned j = 0; j < i; j++)
            ck_assert_uint_ne(seen[i], seen[j]);
    }
    mds_handles_wipe(&a);
    ck_assert(!a.keyed);
}
END_TEST

/* The namespace id the tags are bound to: made with the namespace, kept
 * by a restart, another for a namespace made afresh (under the same
 * cluster key, an old namespace's tags name nothing in the new one). */
START_TEST(test_namespace_id)
{
    uint64_t id = mds_ns_id(store.ns);
    ck_assert_uint_ne(id, 0);
    tms_reopen(&store);
    hh.ctx.ns = store.ns; /* the restarted namespace serves the requests */
    ck_assert_uint_eq(mds_ns_id(store.ns), id);
    tms_store fresh;
    tms_setup(&fresh, N_SERVERS, DEF_N, DEF_K, DEF_SU);
    ck_assert_uint_ne(mds_ns_id(fresh.ns), id);
    tms_teardown(&fresh);
    /* a store from before namespace ids gets one at its next start, kept */
    uint8_t key[MDS_KEY_MAX];
    ck_assert_int_eq(kv_delete(store.kv, key, mds_key_counter(key, MDS_COUNTER_NAMESPACE_ID)), 0);
    tms_reopen(&store);
    hh.ctx.ns = store.ns;
    id = mds_ns_id(store.ns);
    ck_assert_uint_ne(id, 0);
    tms_reopen(&store);
    hh.ctx.ns = store.ns;
    ck_assert_uint_eq(mds_ns_id(store.ns), id);
}
END_TEST

/* ---------------------------------------------------- the check itself */

static int check(const mds_handles *h, const auth_identity *who, const Depfs__MdsRequest *q)
{
    char w[WHY_LEN] = "";
    int rc = mds_handles_check(h, who, q, w, sizeof(w));
    ck_assert(rc == 0 || (rc == -EACCES && strstr(w, "inode") != NULL));
    return rc;
}

START_TEST(test_check_fields)
{
    mds_handles h, none = { 0 };
    mds_handles_init(&h, key_a, NS_A);
    const uint64_t ino = 42;
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    ck_assert_int_eq(check(&h, &bob, &q), 0); /* names no inode */

    /* each field, whichever op would carry it: none, forged, right */
    struct {
        protobuf_c_boolean *has;
        uint64_t *ino;
        protobuf_c_boolean *has_tag;
        uint64_t *tag;
    } f[] = {
        { &q.has_ino, &q.ino, &q.has_ino_tag, &q.ino_tag },
        { &q.has_parent, &q.parent, &q.has_parent_tag, &q.parent_tag },
        { &q.has_new_parent, &q.new_parent, &q.has_new_parent_tag, &q.new_parent_tag },
        { &q.has_migrate_ino, &q.migrate_ino, &q.has_migrate_ino_tag, &q.migrate_ino_tag },
        { &q.has_names_via, &q.names_via, &q.has_names_via_tag, &q.names_via_tag },
    };
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
        *f[i].has = true;
        *f[i].ino = ino + i;
        ck_assert_int_eq(check(&h, &bob, &q), -EACCES);
        ck_assert_int_eq(check(&h, &ticket_holder, &q), -EACCES);
        ck_assert_int_eq(check(&h, &cluster, &q), 0);
        ck_assert_int_eq(check(&h, NULL, &q), 0);
        *f[i].has_tag = true;
        *f[i].tag = FORGED_TAG;
        ck_assert_int_eq(check(&h, &bob, &q), -EACCES);
        *f[i].tag = mds_handle_tag(&h, ino + i + 1); /* another inode's */
        ck_assert_int_eq(check(&h, &bob, &q), -EACCES);
        *f[i].tag = mds_handle_tag(&h, ino + i);
        ck_assert_int_eq(check(&h, &bob, &q), 0);
        ck_assert_int_eq(check(&none, &bob, &q), -EACCES); /* no key: no tag is right */
    }
    /* the root needs none */
    Depfs__MdsRequest r = DEPFS__MDS_REQUEST__INIT;
    r.has_parent = r.has_ino = true;
    r.parent = r.ino = ROOT;
    ck_assert_int_eq(check(&h, &bob, &r), 0);
    ck_assert_int_eq(check(&none, &bob, &r), 0);
    /* inode numbers without tags: the cluster key's only */
    uint64_t purge[] = { ino };
    r.n_purge_inos = 1;
    r.purge_inos = purge;
    ck_assert_int_eq(check(&h, &bob, &r), -EACCES);
    ck_assert_int_eq(check(&h, &cluster, &r), 0);

    /* the holds a batch gives back: each inode with its own tag */
    Depfs__HoldRelease a = DEPFS__HOLD_RELEASE__INIT, b = DEPFS__HOLD_RELEASE__INIT;
    Depfs__HoldRelease *items[] = { &a, &b };
    Depfs__MdsRequest rel = DEPFS__MDS_REQUEST__INIT;
    a.ino = ino;
    b.ino = ino + 1;
    rel.n_releases = 2;
    rel.releases = items;
    ck_assert_int_eq(check(&h, &bob, &rel), -EACCES);
    ck_assert_int_eq(check(&h, &cluster, &rel), 0);
    a.has_ino_tag = b.has_ino_tag = true;
    a.ino_tag = mds_handle_tag(&h, ino);
    b.ino_tag = mds_handle_tag(&h, ino); /* the first one's */
    ck_assert_int_eq(check(&h, &bob, &rel), -EACCES);
    b.ino_tag = mds_handle_tag(&h, ino + 1);
    ck_assert_int_eq(check(&h, &bob, &rel), 0);
}
END_TEST

/* ---------------------------------------------- through mds_process */

START_TEST(test_guessed_numbers_refused)
{
    Depfs__MdsRequest q;
    /* Bob guesses the numbers inside Alice's 0700 directory */
    uint64_t inside[] = { t.secret, t.lnk, t.pub, t.pubf };
    for (size_t i = 0; i < sizeof(inside) / sizeof(inside[0]); i++) {
        q = by_ino(inside[i], false, 0);
        ck_assert_int_eq(req(&bob, DEPFS__MDS_OP__MDS_GETATTR, &q), EACCES);
        q = by_ino(inside[i], true, FORGED_TAG);
        ck_assert_int_eq(req(&bob, DEPFS__MDS_OP__MDS_GETATTR, &q), EACCES);
        q = by_ino(inside[i], true, tag_of(inside[i]));
        ck_assert_int_eq(req(&cluster, DEPFS__MDS_OP__MDS_GETATTR, &q), 0);
    }
    q = by_ino(t.pubf, false, 0);
    q.has_flags = true;
    q.flags = O_RDWR;
    ck_assert_int_eq(req(&bob, DEPFS__MDS_OP__MDS_OPEN, &q), EACCES);
    q = by_ino(t.lnk, false, 0);
    ck_assert_int_eq(req(&bob, DEPFS__MDS_OP__MDS_READLINK, &q), EACCES);
    q = by_ino(t.pub, false, 0);
    ck_assert_int_eq(req(&bob, DEPFS__MDS_OP__MDS_READDIR, &q), EACCES);
    q = by_ino(t.pubf, false, 0);
    q.has_size = true;
    q.size = 1;
    ck_assert_int_eq(req(&bob, DEPFS__MDS_OP__MDS_EXTEND, &q), EACCES);
    q = by_ino(t.pubf, false, 0);
    q.xattr_name = "user.x";
    q.has_xattr_value = true;
    ck_assert_int_eq(req(&bob, DEPFS__MDS_OP__MDS_SETXATTR, &q), EACCES);
    q = by_ino(t.pubf, false, 0);
    q.has_set_mask = true;
    q.set_mask = DEPFS_SET_MTIME_NOW;
    ck_assert_int_eq(req(&bob, DEPFS__MDS_OP__MDS_SETATTR, &q), EACCES);
    /* a link of Alice's file into /tmp, which Bob may write */
    q = by_ino(t.secret, false, 0);
    q.has_new_parent = true;
    q.new_parent = t.tmp;
    q.has_new_parent_tag = true;
    q.new_parent_tag = tag_of(t.tmp);
    q.new_name = "stolen";
    ck_assert_int_eq(req(&bob, DEPFS__MDS_OP__MDS_LINK, &q), EACCES);
    /* a lookup and a create in the 0777 directory inside */
    uint64_t ino, tag;
    ck_assert_int_eq(lookup(t.pub, FORGED_TAG, "f", &ino, &tag), EACCES);
    q = (Depfs__MdsRequest)DEPFS__MDS_REQUEST__INIT;
    q.has_parent = true;
    q.parent = t.pub;
    q.name = "planted";
    q.has_mode = true;
    q.mode = S_IFREG | 0644;
    ck_assert_int_eq(req(&bob, DEPFS__MDS_OP__MDS_CREATE, &q), EACCES);
    /* the path walk Bob may make stops at Alice's directory */
    ck_assert_int_eq(lookup(ROOT, 0, "alice", &ino, &tag), 0);
    ck_assert_uint_eq(ino, t.alice);
    ck_assert_int_eq(lookup(t.alice, tag, "pub", &ino, &tag), EACCES);
}
END_TEST

START_TEST(test_own_files_work)
{
    uint64_t tmp, tmp_tag, f, f_tag, ino, tag;
    mds_result *r;
    ck_assert_int_eq(lookup(ROOT, 0, "tmp", &tmp, &tmp_tag), 0);
    ck_assert_uint_eq(tmp_tag, tag_of(t.tmp));
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    q.has_parent = q.has_parent_tag = true;
    q.parent = tmp;
    q.parent_tag = tmp_tag;
    q.name = "bobs";
    q.has_mode = q.has_flags = true;
    q.mode = S_IFREG | 0600;
    q.flags = O_RDWR;
    ck_assert_int_eq(tmh_req_as(&hh, &bob, DEPFS__MDS_OP__MDS_CREATE, &q, &r), 0);
    const Depfs__MdsReply *rep = mds_result_reply(r);
    ck_assert(rep->attr->has_tag && rep->dir_attr && rep->dir_attr->has_tag);
    f = rep->attr->ino;
    f_tag = rep->attr->tag;
    ck_assert_uint_eq(rep->dir_attr->tag, tmp_tag);
    mds_result_free(r);
    q = by_ino(f, true, f_tag);
    ck_assert_int_eq(req(&bob, DEPFS__MDS_OP__MDS_GETATTR, &q), 0);
    q.has_flags = true;
    q.flags = O_RDWR;
    ck_assert_int_eq(req(&bob, DEPFS__MDS_OP__MDS_OPEN, &q), 0);
    q = by_ino(f, true, f_tag);
    q.has_size = true;
    q.size = 10;
    ck_assert_int_eq(req(&bob, DEPFS__MDS_OP__MDS_EXTEND, &q), 0);
    q = by_ino(f, true, f_tag);
    q.has_new_parent = q.has_new_parent_tag = true;
    q.new_parent = tmp;
    q.new_parent_tag = tmp_tag;
    q.new_name = "bobs2";
    ck_assert_int_eq(req(&bob, DEPFS__MDS_OP__MDS_LINK, &q), 0);
    ck_assert_int_eq(lookup(tmp, tmp_tag, "bobs2", &ino, &tag), 0);
    ck_assert_uint_eq(ino, f);
    ck_assert_uint_eq(tag, f_tag);
    /* a rename names parent and new_parent: both need their tags */
    q = (Depfs__MdsRequest)DEPFS__MDS_REQUEST__INIT;
    q.has_parent = q.has_parent_tag = q.has_new_parent = true;
    q.parent = q.new_parent = tmp;
    q.parent_tag = tmp_tag;
    q.name = "bobs2";
    q.new_name = "bobs3";
    ck_assert_int_eq(req(&bob, DEPFS__MDS_OP__MDS_RENAME, &q), EACCES);
    q.has_new_parent_tag = true;
    q.new_parent_tag = tmp_tag;
    ck_assert_int_eq(req(&bob, DEPFS__MDS_OP__MDS_RENAME, &q), 0);
    /* the root by number, with no tag */
    q = by_ino(ROOT, false, 0);
    ck_assert_int_eq(req(&bob, DEPFS__MDS_OP__MDS_GETATTR, &q), 0);
    ck_assert_int_eq(req(&bob, DEPFS__MDS_OP__MDS_READDIR, &q), 0);
}
END_TEST

/* A READDIR's entries carry tags only for a caller that may search. */
static size_t tagged_entries(const auth_identity *who, uint64_t dir, size_t *n)
{
    mds_result *r;
    Depfs__MdsRequest q = by_ino(dir, dir != ROOT, tag_of(dir));
    ck_assert_int_eq(tmh_req_as(&hh, who, DEPFS__MDS_OP__MDS_READDIR, &q, &r), 0);
    const Depfs__MdsReply *rep = mds_result_reply(r);
    size_t tagged = 0;
    *n = rep->n_entries;
    for (size_t i = 0; i < rep->n_entries; i++) {
        if (!rep->entries[i]->has_tag)
            continue;
        ck_assert_uint_eq(rep->entries[i]->tag, tag_of(rep->entries[i]->ino));
        tagged++;
    }
    mds_result_free(r);
    return tagged;
}

START_TEST(test_readdir_tags)
{
    size_t n;
    /* "." "..", lof: listed, not reachable */
    ck_assert_uint_eq(tagged_entries(&bob, t.listonly, &n), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(tagged_entries(&cluster, t.listonly, &n), n);
    ck_assert_uint_eq(tagged_entries(&bob, ROOT, &n), n); /* root: 0755, searchable */
    ck_assert_uint_gt(n, 3);
    /* so Bob cannot get at lof by its number either */
    Depfs__MdsRequest q = by_ino(t.lof, false, 0);
    ck_assert_int_eq(req(&bob, DEPFS__MDS_OP__MDS_GETATTR, &q), EACCES);
    /* an MDS without the key (auth off) gives none */
    mds_handles_wipe(&hh.ctx.handles);
    mds_result *r;
    q = by_ino(ROOT, false, 0);
    ck_assert_int_eq(tmh_req_as(&hh, NULL, DEPFS__MDS_OP__MDS_GETATTR, &q, &r), 0);
    ck_assert(!mds_result_reply(r)->attr->has_tag);
    mds_result_free(r);
}
END_TEST

static Suite *handles_suite(void)
{
    Suite *s = suite_create("mds_handles");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_tag);
    tcase_add_test(tc, test_namespace_id);
    tcase_add_test(tc, test_check_fields);
    tcase_add_test(tc, test_guessed_numbers_refused);
    tcase_add_test(tc, test_own_files_work);
    tcase_add_test(tc, test_readdir_tags);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(handles_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
