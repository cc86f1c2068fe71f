/* test_mds_bounds.c - the MDS's boundary (mds/req_check.c and the
 * namespace's own bounds) through mds_process on a real LevelDB: every
 * out-of-bounds field gets its errno and a message, creates nothing, and
 * the values at the edge of each bound still work. Requests are encoded by
 * hand where protobuf-c cannot say them (a string with a NUL). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "depfs.pb-c.h"
#include "kvstore.h"
#include "log.h"
#include "mds/cluster.h"
#include "mds/handlers.h"
#include "mds/namespace.h"
#include "wire_check.h"

#define N_SERVERS 4u
#define ROOT MDS_ROOT_INO
#define ERR_BYTES 256
#define ENC_BYTES (2 * WIRE_XATTR_VALUE_MAX)
#define WT_LEN 2u
#define NAME_FIELD 3
#define PARENT_FIELD 2
#define MODE_FIELD 5
#define XATTR_NAME_BYTES 200u /* long names: the list fills after a few hundred */

static char tmpdir[PATH_MAX];
static kvstore *kv;
static mds_ns *ns;
static mds_cluster *cl;
static mds_ctx ctx;

static void setup(void)
{
    char err[ERR_BYTES], why[MDS_WHY_MAX];
    depfs_config cfg;
    mds_ns_params p;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_mds_bounds.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    ck_assert_int_eq(kv_open(tmpdir, false, &kv, err, sizeof(err)), 0);
    config_defaults(&cfg);
    cfg.n_ioservers = N_SERVERS;
    for (unsigned i = 0; i < N_SERVERS; i++)
        cfg.ioservers[i].id = i;
    cfg.default_n = N_SERVERS;
    cfg.default_k = N_SERVERS - 1;
    mds_ns_params_from_config(&cfg, &p);
    ck_assert_int_eq(mds_ns_open(kv, &p, &ns, why), 0);
    mds_ns_defer_sync(ns); /* no barriers: the test never crashes the store */
    ck_assert_int_eq(mds_cluster_open(kv, &cfg, &cl), 0);
    ctx = (mds_ctx){ .ns = ns, .cluster = cl };
}

static void teardown(void)
{
    char cmd[PATH_MAX + 16];
    mds_cluster_close(cl);
    mds_ns_close(ns);
    kv_close(kv);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Sends encoded bytes as op `type`; returns the reply's err (message
 * required with it) and, when out is given, the attr's ino. */
static int send_raw(uint16_t type, const uint8_t *enc, size_t len, uint64_t *ino)
{
    mds_result *res = mds_process(&ctx, type, enc, len, "test", NULL, NULL);
    ck_assert_ptr_nonnull(res);
    const Depfs__MdsReply *r = mds_result_reply(res);
    int err = r->err;
    if (err)
        ck_assert_msg(r->message && r->message[0], "err %d without a message", err);
    if (ino)
        *ino = !err && r->attr ? r->attr->ino : 0;
    mds_result_free(res);
    return err;
}

static int send_msg(uint16_t type, const Depfs__MdsRequest *q, uint64_t *ino)
{
    static uint8_t enc[ENC_BYTES];
    size_t len = depfs__mds_request__get_packed_size(q);
    ck_assert_uint_le(len, sizeof(enc));
    depfs__mds_request__pack(q, enc);
    return send_raw(type, enc, len, ino);
}

static Depfs__MdsRequest new_req(const char *name, uint32_t mode)
{
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    q.has_parent = true;
    q.parent = ROOT;
    q.name = (char *)name;
    q.has_mode = true;
    q.mode = mode;
    return q;
}

static int lookup(const char *name)
{
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    q.has_parent = true;
    q.parent = ROOT;
    q.name = (char *)name;
    return send_msg(DEPFS__MDS_OP__MDS_LOOKUP, &q, NULL);
}

static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

START_TEST(test_name_with_nul)
{
    /* create parent=ROOT name="a\0b" mode=0644: refused, and no "a" */
    uint8_t enc[64];
    size_t n = put_varint(enc, PARENT_FIELD << 3);
    n += put_varint(enc + n, ROOT);
    n += put_varint(enc + n, NAME_FIELD << 3 | WT_LEN);
    n += put_varint(enc + n, 3);
    memcpy(enc + n, "a\0b", 3);
    n += 3;
    n += put_varint(enc + n, MODE_FIELD << 3);
    n += put_varint(enc + n, 0644);
    ck_assert_int_eq(send_raw(DEPFS__MDS_OP__MDS_CREATE, enc, n, NULL), EINVAL);
    ck_assert_int_eq(lookup("a"), ENOENT);
}
END_TEST

START_TEST(test_modes_owners_devices)
{
    Depfs__MdsRequest q = new_req("m31", 0x80000000u | 0644);
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_CREATE, &q, NULL), EINVAL);
    ck_assert_int_eq(lookup("m31"), ENOENT);
    q = new_req("d", S_IFREG | 0755);
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_MKDIR, &q, NULL), EINVAL);
    q = new_req("l", S_IFDIR);
    q.target = "x";
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_SYMLINK, &q, NULL), EINVAL);
    q = new_req("u", 0644);
    q.has_uid = true;
    q.uid = WIRE_OWNER_NONE;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_CREATE, &q, NULL), EINVAL);
    q.uid = WIRE_OWNER_NONE - 1; /* the largest owner: may create where it may write */
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_CREATE, &q, NULL), EACCES);
    Depfs__MdsRequest pub = new_req("pub", 01777);
    uint64_t pub_ino = 0;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_MKDIR, &pub, &pub_ino), 0);
    q.parent = pub_ino;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_CREATE, &q, NULL), 0);
    q = new_req("c", S_IFCHR | 0600);
    q.has_rdev = true;
    q.rdev = UINT64_MAX;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_MKNOD, &q, NULL), EINVAL);
    q.rdev = WIRE_RDEV_MAX;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_MKNOD, &q, NULL), 0);
    q = new_req("x", 0644);
    q.has_flags = true;
    q.flags = O_EXCL | O_APPEND; /* O_APPEND is the client's business */
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_CREATE, &q, NULL), EINVAL);
    uint32_t groups[WIRE_MAX_GROUPS + 1] = { 0 };
    q = new_req("g", 0644);
    q.n_groups = WIRE_MAX_GROUPS + 1;
    q.groups = groups;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_CREATE, &q, NULL), EINVAL);
    q.n_groups = WIRE_MAX_GROUPS;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_CREATE, &q, NULL), 0);
    /* a purge batch holds at most WIRE_PURGE_LIST_MAX inodes (none queued
     * here: the largest batch is answered, nothing dropped) */
    static uint64_t inos[WIRE_PURGE_LIST_MAX + 1];
    for (unsigned i = 0; i <= WIRE_PURGE_LIST_MAX; i++)
        inos[i] = i + 1;
    q = (Depfs__MdsRequest)DEPFS__MDS_REQUEST__INIT;
    q.n_purge_inos = WIRE_PURGE_LIST_MAX + 1;
    q.purge_inos = inos;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_PURGE_DONE, &q, NULL), E2BIG);
    q.n_purge_inos = WIRE_PURGE_LIST_MAX;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_PURGE_DONE, &q, NULL), 0);
    ck_assert_int_eq(mds_ns_getattr(ns, 1, &(mds_inode){ 0 }, NULL), 0); /* root untouched */
    /* a release batch holds at most WIRE_MDS_RELEASES_MAX holds, on
     * MDS_RELEASE without an ino only */
    static Depfs__HoldRelease items[WIRE_MDS_RELEASES_MAX + 1];
    static Depfs__HoldRelease *ptrs[WIRE_MDS_RELEASES_MAX + 1];
    for (unsigned i = 0; i <= WIRE_MDS_RELEASES_MAX; i++) {
        depfs__hold_release__init(&items[i]);
        items[i].ino = 1000 + i; /* holds nobody has: nothing to drop */
        ptrs[i] = &items[i];
    }
    q = (Depfs__MdsRequest)DEPFS__MDS_REQUEST__INIT;
    q.has_client_id = true;
    q.client_id = 7;
    q.releases = ptrs;
    q.n_releases = WIRE_MDS_RELEASES_MAX + 1;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_RELEASE, &q, NULL), E2BIG);
    q.n_releases = WIRE_MDS_RELEASES_MAX;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_RELEASE, &q, NULL), 0);
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_GETATTR, &q, NULL), EINVAL);
    q.has_ino = true;
    q.ino = 1;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_RELEASE, &q, NULL), EINVAL);
}
END_TEST

START_TEST(test_setattr_bounds)
{
    uint64_t ino = 0;
    Depfs__MdsRequest c = new_req("f", 0644);
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_CREATE, &c, &ino), 0);
    Depfs__Attr a = DEPFS__ATTR__INIT;
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    q.has_ino = q.has_set_mask = true;
    q.ino = ino;
    q.attr = &a;
    q.set_mask = 1u << 30;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_SETATTR, &q, NULL), EINVAL);
    q.set_mask = DEPFS_SET_MODE;
    a.mode = S_IFDIR | 0755; /* a file cannot become a directory */
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_SETATTR, &q, NULL), EINVAL);
    a.mode = S_IFREG | 0600;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_SETATTR, &q, NULL), 0);
    q.set_mask = DEPFS_SET_UID;
    a.uid = WIRE_OWNER_NONE;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_SETATTR, &q, NULL), EINVAL);
    q.set_mask = DEPFS_SET_SIZE;
    a.size = UINT64_MAX;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_SETATTR, &q, NULL), EFBIG);
    /* every int64 is an atime or mtime; ctime is the MDS's now whatever
     * the request says (SET_CTIME: FUSE_SET_ATTR_CTIME) */
    int64_t before_ns = clock_real_ns();
    q.set_mask = DEPFS_SET_ATIME | DEPFS_SET_MTIME | DEPFS_SET_CTIME;
    a.atime_ns = INT64_MIN;
    a.mtime_ns = INT64_MAX;
    a.ctime_ns = -1;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_SETATTR, &q, NULL), 0);
    mds_inode in;
    ck_assert_int_eq(mds_ns_getattr(ns, ino, &in, NULL), 0);
    ck_assert_int_eq(in.mtime_ns, INT64_MAX);
    ck_assert_int_ge(in.ctime_ns, before_ns);
    q.set_mask = DEPFS_SET_CTIME; /* alone, without a value: a touch of ctime */
    q.attr = NULL;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_SETATTR, &q, NULL), 0);
}
END_TEST

START_TEST(test_extend_alloc_bounds)
{
    /* a writer's allocation report: at most what a layout's strip files
     * hold (ERANGE past it, nothing stored); the edge is taken, and
     * stored as at most every unit of the file's stripes */
    uint64_t ino = 0;
    Depfs__MdsRequest c = new_req("a", 0644);
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_CREATE, &c, &ino), 0);
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    q.has_ino = q.has_size = q.has_alloc_bytes = true;
    q.ino = ino;
    q.size = 1;
    q.alloc_bytes = WIRE_ALLOC_BYTES_MAX + 1;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_EXTEND, &q, NULL), ERANGE);
    q.alloc_bytes = UINT64_MAX;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_EXTEND, &q, NULL), ERANGE);
    mds_inode in;
    ck_assert_int_eq(mds_ns_getattr(ns, ino, &in, NULL), 0);
    ck_assert_uint_eq(in.size, 0);
    ck_assert_uint_eq(in.alloc_bytes, 0);
    q.alloc_bytes = WIRE_ALLOC_BYTES_MAX;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_EXTEND, &q, NULL), 0);
    ck_assert_int_eq(mds_ns_getattr(ns, ino, &in, NULL), 0);
    ck_assert_uint_eq(in.size, 1);
    ck_assert_uint_eq(in.alloc_bytes, (uint64_t)in.lay.n * in.lay.su); /* one stripe */
}
END_TEST

START_TEST(test_empty_layout_value)
{
    /* found by fuzz_mds: an empty value arrives as (NULL, 0) and reached
     * memcpy (UBSan: null pointer argument) */
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    q.has_ino = q.has_xattr_value = true;
    q.ino = ROOT;
    q.xattr_name = "user.depfs.layout";
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_SETXATTR, &q, NULL), EINVAL);
    q.xattr_value.data = (uint8_t *)"4@2";
    q.xattr_value.len = 3;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_SETXATTR, &q, NULL), 0);
}
END_TEST

START_TEST(test_xattr_names_fill_one_list)
{
    uint64_t ino = 0;
    char name[XATTR_NAME_BYTES + 1];
    Depfs__MdsRequest c = new_req("x", 0644);
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_CREATE, &c, &ino), 0);
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    q.has_ino = q.has_xattr_value = true;
    q.ino = ino;
    q.xattr_name = name;
    q.xattr_value.data = (uint8_t *)"v";
    q.xattr_value.len = 1;
    memset(name, 'n', XATTR_NAME_BYTES);
    name[XATTR_NAME_BYTES] = '\0';
    memcpy(name, "user.", 5);
    /* the layout xattr is listed too: the list holds fewer than the bound */
    unsigned fit = WIRE_XATTR_LIST_MAX / (XATTR_NAME_BYTES + 1), set = 0;
    int err = 0;
    for (unsigned i = 0; i <= fit && err == 0; i++) {
        snprintf(name + 5, 8, "%06u", i);
        name[11] = 'n';
        err = send_msg(DEPFS__MDS_OP__MDS_SETXATTR, &q, NULL);
        set += err == 0;
    }
    ck_assert_int_eq(err, ENOSPC);
    ck_assert_uint_ge(set, fit - 1);
    /* what is there stays listable */
    Depfs__MdsRequest l = DEPFS__MDS_REQUEST__INIT;
    l.has_ino = true;
    l.ino = ino;
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_LISTXATTR, &l, NULL), 0);
    /* replacing an existing one needs no room */
    snprintf(name + 5, 8, "%06u", 0);
    name[11] = 'n';
    ck_assert_int_eq(send_msg(DEPFS__MDS_OP__MDS_SETXATTR, &q, NULL), 0);
}
END_TEST

int main(void)
{
    dlog_init("test_mds_bounds", DLOG_ERR);
    Suite *s = suite_create("mds_bounds");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_name_with_nul);
    tcase_add_test(tc, test_modes_owners_devices);
    tcase_add_test(tc, test_setattr_bounds);
    tcase_add_test(tc, test_extend_alloc_bounds);
    tcase_add_test(tc, test_empty_layout_value);
    tcase_add_test(tc, test_xattr_names_fill_one_list);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
