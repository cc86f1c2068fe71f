/* test_perm.c - the MDS's permission rules (mds/perm.c) over made-up
 * inodes, and who acts in a request (mds/caller.c): auth off and the
 * cluster key act for the claimed credentials, a MUNGE user as itself
 * (groups from the group source), MUNGE root on a client node for the
 * claimed credentials, root squashed. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "mds/caller.h"
#include "mds/perm.h"

#define ROOT_UID 0u
#define ALICE 1001u
#define BOB 1002u
#define STAFF 500u /* alice's supplementary group */
#define BOBS 1002u
#define NOBODY 65534u
#define CLIENT_NODE_IP 0x0a000005u /* 10.0.0.5 */
#define OTHER_NODE_IP 0x0a000006u
#define NOW_NS 1700000000000000000ll /* the MDS's clock in the extend cases */

static char why[MDS_WHY_MAX];

static mds_caller as(uint32_t uid, uint32_t gid)
{
    mds_caller c = { .uid = uid, .gid = gid };
    if (uid == ALICE)
        c.groups[c.n_groups++] = STAFF;
    return c;
}

static mds_inode node(uint64_t ino, uint32_t mode, uint32_t uid, uint32_t gid)
{
    mds_inode in;
    memset(&in, 0, sizeof(in));
    in.ino = ino;
    in.mode = mode;
    in.uid = uid;
    in.gid = gid;
    return in;
}

START_TEST(test_access_classes)
{
    mds_caller alice = as(ALICE, ALICE), bob = as(BOB, BOBS), root = as(ROOT_UID, 0);
    mds_inode f = node(5, S_IFREG | 0640, ALICE, STAFF);
    ck_assert_int_eq(perm_access(&alice, &f, PERM_READ | PERM_WRITE, why), 0);
    ck_assert_int_eq(perm_access(&bob, &f, PERM_READ, why), -EACCES);
    ck_assert_ptr_nonnull(strstr(why, "uid 1002"));
    ck_assert_ptr_nonnull(strstr(why, "inode 5"));
    /* the owner class decides for the owner, even when group bits would allow */
    mds_inode g = node(6, S_IFREG | 0060, ALICE, STAFF);
    ck_assert_int_eq(perm_access(&alice, &g, PERM_READ, why), -EACCES);
    mds_caller carol = as(1003, STAFF); /* in the group by its gid */
    ck_assert_int_eq(perm_access(&carol, &g, PERM_READ, why), 0);
    mds_caller dave = as(1004, 1004);
    dave.groups[dave.n_groups++] = STAFF; /* by a supplementary group */
    ck_assert_int_eq(perm_access(&dave, &g, PERM_WRITE, why), 0);
    /* root reads and writes anything, executes a file only with some x bit */
    mds_inode secret = node(7, S_IFREG | 0000, ALICE, ALICE);
    ck_assert_int_eq(perm_access(&root, &secret, PERM_READ | PERM_WRITE, why), 0);
    ck_assert_int_eq(perm_access(&root, &secret, PERM_EXEC, why), -EACCES);
    secret.mode |= S_IXOTH;
    ck_assert_int_eq(perm_access(&root, &secret, PERM_EXEC, why), 0);
    mds_inode d = node(8, S_IFDIR | 0700, ALICE, ALICE);
    ck_assert_int_eq(perm_lookup(&root, &d, why), 0);
    ck_assert_int_eq(perm_lookup(&bob, &d, why), -EACCES);
    ck_assert_int_eq(perm_readdir(&bob, &d, why), -EACCES);
    ck_assert_int_eq(perm_readdir(&alice, &d, why), 0);
}
END_TEST

START_TEST(test_create_and_remove)
{
    mds_caller alice = as(ALICE, ALICE), bob = as(BOB, BOBS), root = as(ROOT_UID, 0);
    mds_inode rootdir = node(1, S_IFDIR | 0755, ROOT_UID, 0);
    mds_new nw = { .uid = ROOT_UID, .gid = 0 }; /* a claim of another owner */
    uint32_t mode = S_IFREG | 0644;
    ck_assert_int_eq(perm_create(&alice, &rootdir, &nw, &mode, why), -EACCES);
    mds_inode tmp = node(2, S_IFDIR | 01777, ROOT_UID, 0);
    ck_assert_int_eq(perm_create(&alice, &tmp, &nw, &mode, why), 0);
    ck_assert_uint_eq(nw.uid, ALICE); /* the caller owns what it creates */
    ck_assert_uint_eq(nw.gid, ALICE);
    mode = S_IFREG | 02755; /* setgid for a group alice is not in: dropped */
    mds_inode sg = node(3, S_IFDIR | 02777, ROOT_UID, 77);
    ck_assert_int_eq(perm_create(&alice, &sg, &nw, &mode, why), 0);
    ck_assert_uint_eq(mode & S_ISGID, 0);
    mode = S_IFDIR | 02755; /* directories keep it */
    ck_assert_int_eq(perm_create(&alice, &sg, &nw, &mode, why), 0);
    ck_assert_uint_eq(mode & S_ISGID, S_ISGID);
    /* device nodes: root only (Linux's CAP_MKNOD); FIFOs and sockets: anyone */
    static const uint32_t devices[] = { S_IFCHR | 0666, S_IFBLK | 0660 };
    for (size_t i = 0; i < sizeof(devices) / sizeof(devices[0]); i++) {
        mode = devices[i];
        ck_assert_int_eq(perm_create(&alice, &tmp, &nw, &mode, why), -EPERM);
        ck_assert_ptr_nonnull(strstr(why, "device"));
        ck_assert_int_eq(perm_create(&root, &tmp, &nw, &mode, why), 0);
    }
    mode = S_IFIFO | 0644;
    ck_assert_int_eq(perm_create(&alice, &tmp, &nw, &mode, why), 0);
    mode = S_IFSOCK | 0755;
    ck_assert_int_eq(perm_create(&alice, &tmp, &nw, &mode, why), 0);
    mode = S_IFCHR | 0666; /* no write on the parent: EACCES first, as Linux */
    ck_assert_int_eq(perm_create(&alice, &rootdir, &nw, &mode, why), -EACCES);
    /* sticky: bob may not remove alice's file, alice and the dir's owner may */
    mds_inode af = node(10, S_IFREG | 0666, ALICE, ALICE);
    ck_assert_int_eq(perm_remove(&bob, &tmp, &af, why), -EPERM);
    ck_assert_ptr_nonnull(strstr(why, "sticky"));
    ck_assert_int_eq(perm_remove(&alice, &tmp, &af, why), 0);
    ck_assert_int_eq(perm_remove(&root, &tmp, &af, why), 0);
    mds_inode bobdir = node(11, S_IFDIR | 01777, BOB, BOBS);
    ck_assert_int_eq(perm_remove(&bob, &bobdir, &af, why), 0);
    /* no sticky bit: write+search on the parent is enough */
    mds_inode pub = node(12, S_IFDIR | 0777, ROOT_UID, 0);
    ck_assert_int_eq(perm_remove(&bob, &pub, &af, why), 0);
    ck_assert_int_eq(perm_remove(&bob, &rootdir, &af, why), -EACCES);
    ck_assert_int_eq(perm_link(&bob, &rootdir, &af, why), -EACCES);
    /* rename: replacing in a sticky dir; a directory moving needs write on itself */
    ck_assert_int_eq(perm_rename(&bob, &pub, &af, &tmp, &af, false, why), -EPERM);
    ck_assert_int_eq(perm_rename(&bob, &pub, &af, &pub, NULL, false, why), 0);
    mds_inode adir = node(13, S_IFDIR | 0755, ALICE, ALICE);
    ck_assert_int_eq(perm_rename(&bob, &pub, &adir, &bobdir, NULL, false, why), -EACCES);
    ck_assert_int_eq(perm_rename(&bob, &pub, &adir, &pub, NULL, false, why), 0);
    ck_assert_int_eq(perm_rename(&bob, &rootdir, &af, &pub, NULL, false, why), -EACCES);
}
END_TEST

static int setattr(const mds_caller *c, const mds_inode *in, uint32_t *mask, mds_setattr_in *a)
{
    why[0] = '\0';
    int rc = perm_setattr(c, in, mask, a, why);
    ck_assert(rc == 0 || why[0]);
    return rc;
}

/* Hard links as Linux's fs.protected_hardlinks: owner, root, or a plain
 * regular file the caller may read and write. */
START_TEST(test_link_source)
{
    mds_caller alice = as(ALICE, ALICE), bob = as(BOB, BOBS), root = as(ROOT_UID, 0);
    mds_caller carol = as(1003, STAFF);
    mds_inode tmp = node(2, S_IFDIR | 01777, ROOT_UID, 0);
    mds_inode secret = node(20, S_IFREG | 0600, ALICE, ALICE);
    ck_assert_int_eq(perm_link(&alice, &tmp, &secret, why), 0); /* its own */
    ck_assert_int_eq(perm_link(&root, &tmp, &secret, why), 0);
    ck_assert_int_eq(perm_link(&bob, &tmp, &secret, why), -EPERM);
    ck_assert_ptr_nonnull(strstr(why, "hard-link"));
    ck_assert_ptr_nonnull(strstr(why, "inode 20"));
    mds_inode readable = node(21, S_IFREG | 0644, ALICE, ALICE); /* read, not write */
    ck_assert_int_eq(perm_link(&bob, &tmp, &readable, why), -EPERM);
    mds_inode shared = node(22, S_IFREG | 0666, ALICE, ALICE);
    ck_assert_int_eq(perm_link(&bob, &tmp, &shared, why), 0);
    mds_inode suid = node(23, S_IFREG | 04777, ALICE, ALICE);
    ck_assert_int_eq(perm_link(&bob, &tmp, &suid, why), -EPERM);
    mds_inode sgid_x = node(24, S_IFREG | 02777, ALICE, STAFF);
    ck_assert_int_eq(perm_link(&carol, &tmp, &sgid_x, why), -EPERM);
    mds_inode sgid_nox = node(25, S_IFREG | 02766, ALICE, STAFF); /* mandatory locking: linkable */
    ck_assert_int_eq(perm_link(&carol, &tmp, &sgid_nox, why), 0);
    mds_inode fifo = node(26, S_IFIFO | 0666, ALICE, ALICE); /* not a regular file */
    ck_assert_int_eq(perm_link(&bob, &tmp, &fifo, why), -EPERM);
    ck_assert_int_eq(perm_link(&alice, &tmp, &fifo, why), 0);
    mds_caller squashed = as(NOBODY, NOBODY); /* squashed root is no root */
    squashed.squashed = true;
    ck_assert_int_eq(perm_link(&squashed, &tmp, &secret, why), -EPERM);
    /* the directory first: no write there is EACCES whatever the file */
    mds_inode rootdir = node(1, S_IFDIR | 0755, ROOT_UID, 0);
    ck_assert_int_eq(perm_link(&alice, &rootdir, &secret, why), -EACCES);
}
END_TEST

START_TEST(test_setattr_rules)
{
    mds_caller alice = as(ALICE, ALICE), bob = as(BOB, BOBS), root = as(ROOT_UID, 0);
    mds_inode f = node(5, S_IFREG | 0644, ALICE, ALICE);
    mds_setattr_in a = { .mode = 04777, .uid = ROOT_UID };
    uint32_t mask = DEPFS_SET_MODE;
    ck_assert_int_eq(setattr(&bob, &f, &mask, &a), -EPERM);
    ck_assert_int_eq(setattr(&alice, &f, &mask, &a), 0);
    mask = DEPFS_SET_UID;
    ck_assert_int_eq(setattr(&alice, &f, &mask, &a), -EPERM); /* chown: root only */
    ck_assert_int_eq(setattr(&root, &f, &mask, &a), 0);
    a.uid = ALICE; /* to oneself: allowed (nothing changes) */
    ck_assert_int_eq(setattr(&alice, &f, &mask, &a), 0);
    mask = DEPFS_SET_GID;
    a.gid = STAFF;
    ck_assert_int_eq(setattr(&alice, &f, &mask, &a), 0);
    a.gid = BOBS;
    ck_assert_int_eq(setattr(&alice, &f, &mask, &a), -EPERM);
    ck_assert_int_eq(setattr(&bob, &f, &mask, &a), -EPERM);
    /* size: write permission */
    mask = DEPFS_SET_SIZE;
    ck_assert_int_eq(setattr(&bob, &f, &mask, &a), -EACCES);
    mds_inode w = node(6, S_IFREG | 06775, ALICE, STAFF);
    mds_caller carol = as(1003, STAFF);
    mask = DEPFS_SET_SIZE;
    ck_assert_int_eq(setattr(&carol, &w, &mask, &a), 0);
    /* a non-root size change drops setuid, and setgid with group-exec */
    ck_assert_uint_eq(mask & DEPFS_SET_MODE, DEPFS_SET_MODE);
    ck_assert_uint_eq(a.mode & 07777, 0775);
    mask = DEPFS_SET_SIZE;
    ck_assert_int_eq(setattr(&root, &w, &mask, &a), 0);
    ck_assert_uint_eq(mask, DEPFS_SET_SIZE);
    /* a writer may drop the set-id bits, nothing else */
    mask = DEPFS_SET_MODE;
    a.mode = 0775;
    ck_assert_int_eq(setattr(&carol, &w, &mask, &a), 0);
    a.mode = 0777;
    ck_assert_int_eq(setattr(&carol, &w, &mask, &a), -EPERM);
    /* chmod by the owner not in the file's group drops setgid */
    mds_inode o = node(7, S_IFREG | 0644, ALICE, 77);
    mask = DEPFS_SET_MODE;
    a.mode = 02755;
    ck_assert_int_eq(setattr(&alice, &o, &mask, &a), 0);
    ck_assert_uint_eq(a.mode & S_ISGID, 0);
    /* times: explicit by owner/root; now by owner, root or a writer */
    mask = DEPFS_SET_MTIME;
    ck_assert_int_eq(setattr(&carol, &w, &mask, &a), -EPERM);
    ck_assert_int_eq(setattr(&alice, &w, &mask, &a), 0);
    mask = DEPFS_SET_MTIME | DEPFS_SET_MTIME_NOW | DEPFS_SET_ATIME | DEPFS_SET_ATIME_NOW;
    ck_assert_int_eq(setattr(&carol, &w, &mask, &a), 0);
    ck_assert_int_eq(setattr(&bob, &f, &mask, &a), -EACCES);
}
END_TEST

START_TEST(test_open_extend_xattrs)
{
    mds_caller alice = as(ALICE, ALICE), bob = as(BOB, BOBS), root = as(ROOT_UID, 0);
    mds_inode f = node(5, S_IFREG | 0604, ALICE, ALICE);
    ck_assert_int_eq(perm_open(&bob, &f, O_RDONLY, why), 0);
    ck_assert_int_eq(perm_open(&bob, &f, O_WRONLY, why), -EACCES);
    ck_assert_int_eq(perm_open(&bob, &f, O_RDONLY | O_TRUNC, why), -EACCES);
    ck_assert_int_eq(perm_open(&alice, &f, O_RDWR, why), 0);
    mds_inode ro = node(6, S_IFREG | 0444, ALICE, ALICE);
    /* created 0444, written by its fd */
    ck_assert_int_eq(perm_extend(&alice, &ro, NOW_NS, NULL, why), 0);
    ck_assert_int_eq(perm_extend(&bob, &ro, NOW_NS, NULL, why), -EACCES);
    /* the mtime a writer reports: the time of its writes, bounded */
    mds_inode rw = node(7, S_IFREG | 0666, ALICE, ALICE);
    rw.mtime_ns = NOW_NS - 5 * (int64_t)CLOCK_NS_PER_S;
    int64_t t = 42;
    ck_assert_int_eq(perm_extend(&bob, &rw, NOW_NS, &t, why), 0);
    ck_assert_int_eq(t, rw.mtime_ns); /* never back */
    t = INT64_MAX;
    ck_assert_int_eq(perm_extend(&bob, &rw, NOW_NS, &t, why), 0);
    ck_assert_int_eq(t, NOW_NS + PERM_WRITER_MTIME_AHEAD_NS); /* a clock ahead by the skew */
    t = NOW_NS - 1;
    ck_assert_int_eq(perm_extend(&bob, &rw, NOW_NS, &t, why), 0);
    ck_assert_int_eq(t, NOW_NS - 1);
    t = 42; /* the owner and root set any time, as their setattr may */
    ck_assert_int_eq(perm_extend(&alice, &rw, NOW_NS, &t, why), 0);
    ck_assert_int_eq(t, 42);
    ck_assert_int_eq(perm_extend(&root, &rw, NOW_NS, &t, why), 0);
    ck_assert_int_eq(t, 42);
    ck_assert_int_eq(perm_extend(&bob, &rw, INT64_MAX, &t, why), 0); /* no overflow */
    ck_assert_int_eq(t, rw.mtime_ns);
    mds_inode d = node(1, S_IFDIR | 0755, ROOT_UID, 0);
    ck_assert_int_eq(perm_xattr(&bob, &d, MDS_LAYOUT_XATTR, true, why), -EPERM);
    ck_assert_int_eq(perm_xattr(&bob, &d, MDS_LAYOUT_XATTR, false, why), 0);
    ck_assert_int_eq(perm_xattr(&root, &d, MDS_LAYOUT_XATTR, true, why), 0);
    ck_assert_int_eq(perm_xattr(&bob, &f, "user.x", false, why), 0);
    ck_assert_int_eq(perm_xattr(&bob, &f, "user.x", true, why), -EACCES);
    ck_assert_int_eq(perm_xattr(&alice, &f, "user.x", true, why), 0);
    ck_assert_int_eq(perm_xattr(&alice, &f, "trusted.x", true, why), -EPERM);
    ck_assert_int_eq(perm_xattr(&alice, &f, "trusted.x", false, why), -ENODATA);
    ck_assert_int_eq(perm_xattr(&root, &f, "trusted.x", true, why), 0);
    ck_assert_int_eq(perm_xattr(&alice, &f, "security.x", true, why), -EPERM);
    ck_assert_int_eq(perm_xattr(&alice, &f, "security.x", false, why), 0);
    ck_assert(!perm_xattr_listed(&alice, "trusted.x", strlen("trusted.x")));
    ck_assert(perm_xattr_listed(&alice, "user.x", strlen("user.x")));
    ck_assert(perm_xattr_listed(&root, "trusted.x", strlen("trusted.x")));
}
END_TEST

/* ------------------------------------------------------------- caller.c */

static void fake_groups(uint32_t uid, uint32_t gid, uint32_t *out, unsigned *n)
{
    (void)uid;
    out[0] = gid;
    out[1] = STAFF;
    *n = 2;
}

static depfs_config cfg; /* big: off the stack */

static int resolve(const auth_identity *who, const Depfs__MdsRequest *q, mds_caller *c)
{
    mds_caller_policy p = { .cfg = &cfg, .groups_of = fake_groups };
    char w[MDS_WHY_MAX] = "";
    return mds_caller_resolve(&p, who, q, c, w, sizeof(w));
}

START_TEST(test_caller_roles)
{
    uint32_t claimed_groups[] = { 9, 10 };
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    mds_caller c;
    config_defaults(&cfg);
    cfg.n_client_nodes = 1;
    cfg.client_nodes[0] = (config_net){ .addr = CLIENT_NODE_IP, .mask = UINT32_MAX };

    /* no credentials claimed: root, for auth off and the cluster key */
    auth_identity cluster = { .role = AUTH_ROLE_CLUSTER };
    ck_assert_int_eq(resolve(NULL, &q, &c), 0);
    ck_assert_uint_eq(c.uid, ROOT_UID);
    ck_assert_int_eq(resolve(&cluster, &q, &c), 0);
    ck_assert_uint_eq(c.uid, ROOT_UID);
    ck_assert(!c.squashed);
    q.has_uid = q.has_gid = true;
    q.uid = ROOT_UID;
    q.gid = 0;
    q.n_groups = 2;
    q.groups = claimed_groups;
    ck_assert_int_eq(resolve(&cluster, &q, &c), 0); /* the cluster key is never squashed */
    ck_assert_uint_eq(c.uid, ROOT_UID);
    q.uid = ALICE;
    q.gid = ALICE;
    ck_assert_int_eq(resolve(&cluster, &q, &c), 0);
    ck_assert_uint_eq(c.uid, ALICE);
    ck_assert_uint_eq(c.n_groups, 2);
    ck_assert_uint_eq(c.groups[1], 10);

    /* a MUNGE user is what MUNGE proved, whatever it claims */
    auth_identity bob = { .role = AUTH_ROLE_USER, .uid = BOB, .gid = BOBS,
                          .origin_ipv4 = htonl(CLIENT_NODE_IP) };
    q.uid = ROOT_UID;
    ck_assert_int_eq(resolve(&bob, &q, &c), 0);
    ck_assert_uint_eq(c.uid, BOB);
    ck_assert_uint_eq(c.gid, BOBS);
    ck_assert(mds_caller_in_group(&c, STAFF)); /* from the group source, not the claim */
    ck_assert(!mds_caller_in_group(&c, 9));

    /* MUNGE root on a client node acts for the kernel's caller */
    auth_identity fuse = { .role = AUTH_ROLE_USER, .uid = ROOT_UID, .gid = 0,
                           .origin_ipv4 = htonl(CLIENT_NODE_IP) };
    q.uid = ALICE;
    q.gid = ALICE;
    ck_assert_int_eq(resolve(&fuse, &q, &c), 0);
    ck_assert_uint_eq(c.uid, ALICE);
    ck_assert(mds_caller_in_group(&c, 9));
    q.uid = ROOT_UID; /* its root callers are squashed */
    ck_assert_int_eq(resolve(&fuse, &q, &c), 0);
    ck_assert_uint_eq(c.uid, NOBODY);
    ck_assert(c.squashed);
    /* elsewhere MUNGE root is itself: squashed */
    fuse.origin_ipv4 = htonl(OTHER_NODE_IP);
    q.uid = ALICE;
    ck_assert_int_eq(resolve(&fuse, &q, &c), 0);
    ck_assert_uint_eq(c.uid, NOBODY);
    ck_assert_uint_eq(c.gid, NOBODY);
    ck_assert_uint_eq(c.n_groups, 0);
    cfg.root_squash = false;
    ck_assert_int_eq(resolve(&fuse, &q, &c), 0);
    ck_assert_uint_eq(c.uid, ROOT_UID);
    cfg.root_squash = true;
    cfg.squash_uid = 99;
    ck_assert_int_eq(resolve(&fuse, &q, &c), 0);
    ck_assert_uint_eq(c.uid, 99);

    auth_identity ticket = { .role = AUTH_ROLE_CLIENT, .uid = BOB };
    ck_assert_int_eq(resolve(&ticket, &q, &c), -EACCES);
}
END_TEST

static Suite *perm_suite(void)
{
    Suite *s = suite_create("perm");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_access_classes);
    tcase_add_test(tc, test_create_and_remove);
    tcase_add_test(tc, test_link_source);
    tcase_add_test(tc, test_setattr_rules);
    tcase_add_test(tc, test_open_extend_xattrs);
    tcase_add_test(tc, test_caller_roles);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(perm_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
