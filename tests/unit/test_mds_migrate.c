/* test_mds_migrate.c - the MDS side of `depfs migrate`: the data version
 * in the inode record (mds/store_keys.c) and where the namespace bumps it
 * (mds/namespace.c), files created without a name (MDS_CREATE unlinked),
 * the swap itself (mds/ns_migrate.c) on a real LevelDB in a temp dir, the
 * writers the holds table knows (mds/holds.c), and MDS_MIGRATE_SWAP
 * through mds_process as the daemon calls it (busy, stale, bounds, the
 * copy held by the requesting client). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "auth.h"
#include "depfs.pb-c.h"
#include "log.h"
#include "mds/cluster.h"
#include "mds/handlers.h"
#include "mds/holds.h"
#include "mds/namespace.h"
#include "mds/store_keys.h"
#include "tests/lib/mds_handlers.h"
#include "tests/lib/mds_store.h"

#define N_SERVERS 8u
#define DEF_N 8u
#define DEF_K 6u
#define DEF_SU 65536u
#define ROOT MDS_ROOT_INO
#define SIZE 1000000u
#define OLD_MTIME_NS 981173106000000000ll /* 2001-02-03 */
#define T0 1000000u
#define GRACE_S 30u
#define TTL 600u
#define ME 9u     /* the migrating client */
#define OTHER 7u  /* another client */

static tms_store store;
static mds_ns *ns;
static char why[MDS_WHY_MAX];

static void setup(void)
{
    tms_setup(&store, N_SERVERS, DEF_N, DEF_K, DEF_SU);
    ns = store.ns;
}

static void teardown(void)
{
    tms_teardown(&store);
    ns = NULL;
}

static uint64_t version_of(uint64_t ino)
{
    mds_inode in;
    ck_assert_int_eq(mds_ns_getattr(ns, ino, &in, why), 0);
    return in.data_version;
}

/* A source file: SIZE bytes, mode 0640, owner 12:34, an old mtime, an xattr. */
static uint64_t new_source(const char *name)
{
    mds_new nw = { .parent = ROOT, .name = name, .mode = 0640, .uid = 12, .gid = 34 };
    mds_inode in;
    ck_assert_int_eq(mds_ns_create(ns, &nw, O_EXCL, &in, why), 0);
    ck_assert_int_eq(mds_ns_extend(ns, NULL, in.ino, SIZE, false, 0, NULL, &in, why), 0);
    mds_setattr_in a = { .mtime_ns = OLD_MTIME_NS };
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, in.ino, DEPFS_SET_MTIME, &a, &in, why), 0);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, in.ino, "user.color", "blue", 4, 0, why), 0);
    return in.ino;
}

/* A copy: a file without a name of layout 4@2, grown to size. */
static uint64_t new_copy(uint64_t size)
{
    mds_new nw = { .parent = ROOT, .mode = 0600, .want_n = 4, .want_k = 2, .unlinked = true,
                   .held_until_s = (uint64_t)time(NULL) + TTL };
    mds_inode in;
    ck_assert_int_eq(mds_ns_create(ns, &nw, O_EXCL, &in, why), 0);
    ck_assert_uint_eq(in.nlink, 0);
    ck_assert_uint_eq(in.lay.n, 4);
    if (size)
        ck_assert_int_eq(mds_ns_extend(ns, NULL, in.ino, size, false, 0, NULL, &in, why), 0);
    return in.ino;
}

static int swap(const char *name, uint64_t src, uint64_t copy, uint64_t version, mds_inode *out)
{
    mds_removed rm;
    mds_migrate_in in = { .parent = ROOT, .name = name, .src_ino = src, .copy_ino = copy,
                          .data_version = version };
    return mds_ns_migrate_swap(ns, NULL, &in, out, &rm, why);
}

static const mds_open_name unnamed = { .linked = false };
static const mds_open_name named_open = { .linked = true };

/* ------------------------------------------------------- inode records */

START_TEST(test_record_data_version)
{
    mds_inode in = { .ino = 5, .mode = S_IFREG | 0644, .nlink = 1, .has_layout = true,
                     .lay = { .n = 2, .k = 1, .su = 4096, .servers = { 10, 11 } },
                     .may_have_data = true, .data_version = 77, .migrated_away = true };
    mds_inode out;
    uint8_t buf[MDS_INODE_REC_MAX];
    size_t len = mds_inode_encode(&in, buf);
    ck_assert_int_eq(mds_inode_decode(5, buf, len, &out), 0);
    ck_assert_uint_eq(out.data_version, 77);
    ck_assert(out.migrated_away);
    /* a record from before: no version word, read as 0 */
    in.data_version = 0;
    in.migrated_away = false;
    len = mds_inode_encode(&in, buf);
    ck_assert_int_eq(mds_inode_decode(5, buf, len, &out), 0);
    ck_assert_uint_eq(out.data_version, 0);
    ck_assert(!out.migrated_away);
    /* the flags word is the last 4 bytes here: an unknown bit is corrupt */
    buf[len - 4] |= 0x80;
    ck_assert_int_eq(mds_inode_decode(5, buf, len, &out), -EIO);
}
END_TEST

/* Every way a file's bytes may change at the MDS bumps its version: a
 * writer's size commit (extend) and a size change; opens do not (a writer
 * with its handle open is known by its hold: test_holds_writers), nor
 * attribute changes. */
START_TEST(test_data_version_bumps)
{
    mds_inode in;
    uint64_t f = new_source("f"), v = version_of(f);
    ck_assert_uint_gt(v, 0);
    ck_assert_int_eq(mds_ns_open_file(ns, NULL, f, O_RDONLY, &unnamed, &in, why), 0);
    ck_assert_int_eq(mds_ns_open_file(ns, NULL, f, O_WRONLY, &unnamed, &in, why), 0);
    ck_assert_int_eq(mds_ns_open_file(ns, NULL, f, O_RDWR | O_TRUNC, &unnamed, &in, why), 0);
    ck_assert_uint_eq(in.data_version, v);
    ck_assert_uint_eq(version_of(f), v);
    ck_assert_int_eq(mds_ns_extend(ns, NULL, f, 10, true, 1, NULL, &in, why), 0); /* no growth */
    ck_assert_uint_eq(version_of(f), v + 1);
    mds_setattr_in a = { .size = 5 };
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, f, DEPFS_SET_SIZE, &a, &in, why), 0);
    ck_assert_uint_eq(version_of(f), v + 2);
    a.mode = 0600; /* attributes are not data */
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, f, DEPFS_SET_MODE, &a, &in, why), 0);
    ck_assert_uint_eq(version_of(f), v + 2);
    /* an existing file opened for writing by a create: its hold says so */
    mds_new nw = { .parent = ROOT, .name = "f", .mode = 0644 };
    ck_assert_int_eq(mds_ns_create(ns, &nw, O_RDWR, &in, why), 0);
    ck_assert_uint_eq(version_of(f), v + 2);
    tms_reopen(&store); /* durable */
    ns = store.ns;
    ck_assert_uint_eq(version_of(f), v + 2);
}
END_TEST

/* ------------------------------------------------------------- the swap */

START_TEST(test_unlinked_create)
{
    uint64_t files, bytes, files0;
    mds_inode dir0, dir1, in;
    mds_ns_purge_stats(ns, &files0, &bytes);
    ck_assert_int_eq(mds_ns_getattr(ns, ROOT, &dir0, why), 0);
    uint64_t c = new_copy(0);
    mds_ns_purge_stats(ns, &files, &bytes);
    ck_assert_uint_eq(files, files0 + 1); /* queued at once */
    uint64_t held = 0;
    ck_assert_int_eq(mds_ns_purge_recorded(ns, c, &held, why), 0);
    ck_assert_uint_gt(held, (uint64_t)time(NULL)); /* its creator's hold */
    ck_assert_int_eq(mds_ns_getattr(ns, ROOT, &dir1, why), 0);
    ck_assert_int_eq(dir1.mtime_ns, dir0.mtime_ns); /* no name: the directory did not change */
    ck_assert_int_eq(mds_ns_getattr(ns, c, &in, why), 0);
    ck_assert_uint_eq(in.nlink, 0);
    /* an opener that came through a name is told to look it up again; one
     * whose own handle holds the file (O_TMPFILE, /proc/PID/fd) opens it */
    ck_assert_int_eq(mds_ns_open_file(ns, NULL, c, O_RDONLY, &named_open, &in, why), -ESTALE);
    ck_assert_int_eq(mds_ns_open_file(ns, NULL, c, O_RDONLY, &unnamed, &in, why), 0);
    uint64_t named = new_source("named");
    ck_assert_int_eq(mds_ns_open_file(ns, NULL, named, O_RDONLY, &named_open, &in, why), 0);
}
END_TEST

START_TEST(test_swap)
{
    mds_inode out, in;
    uint64_t files, bytes, files0;
    uint64_t f = new_source("f"), v = version_of(f);
    uint64_t c = new_copy(SIZE);
    /* changed since the copy began: nothing happens */
    ck_assert_int_eq(swap("f", f, c, v - 1, &out), -ESTALE);
    ck_assert_ptr_nonnull(strstr(why, "changed while it was copied"));
    ck_assert_int_eq(mds_ns_lookup(ns, NULL, ROOT, "f", &in, why), 0);
    ck_assert_uint_eq(in.ino, f);
    /* a copy of the wrong size, a name of another inode */
    uint64_t short_copy = new_copy(SIZE - 1);
    ck_assert_int_eq(swap("f", f, short_copy, v, &out), -EINVAL);
    ck_assert_int_eq(swap("f", c, f, v, &out), -ESTALE);
    mds_ns_purge_stats(ns, &files0, &bytes);
    /* the swap */
    ck_assert_int_eq(swap("f", f, c, v, &out), 0);
    ck_assert_uint_eq(out.ino, c);
    ck_assert_int_eq(mds_ns_lookup(ns, NULL, ROOT, "f", &in, why), 0);
    ck_assert_uint_eq(in.ino, c);
    ck_assert_uint_eq(in.nlink, 1);
    ck_assert_uint_eq(in.mode, S_IFREG | 0640);
    ck_assert_uint_eq(in.uid, 12);
    ck_assert_uint_eq(in.gid, 34);
    ck_assert_int_eq(in.mtime_ns, OLD_MTIME_NS);
    ck_assert_uint_eq(in.size, SIZE);
    ck_assert_uint_eq(in.lay.n, 4);
    ck_assert_uint_eq(in.lay.k, 2);
    ck_assert_uint_gt(in.data_version, v);
    void *val = NULL;
    size_t len = 0;
    ck_assert_int_eq(mds_ns_getxattr(ns, NULL, c, "user.color", &val, &len, why), 0);
    ck_assert_uint_eq(len, 4);
    ck_assert_mem_eq(val, "blue", 4);
    free(val);
    /* the old inode: queued (the copy is not any more), migrated away */
    mds_ns_purge_stats(ns, &files, &bytes);
    ck_assert_uint_eq(files, files0); /* one in (the old), one out (the copy) */
    uint64_t held;
    ck_assert_int_eq(mds_ns_purge_recorded(ns, f, &held, why), 0);
    ck_assert_int_eq(mds_ns_purge_recorded(ns, c, &held, why), -ENOENT);
    ck_assert_int_eq(mds_ns_getattr(ns, f, &in, why), 0);
    ck_assert_uint_eq(in.nlink, 0);
    ck_assert(in.migrated_away);
    /* a new open of the old inode is told to look the name up again */
    ck_assert_int_eq(mds_ns_open_file(ns, NULL, f, O_RDONLY, &unnamed, &in, why), -ESTALE);
    ck_assert_int_eq(mds_ns_open_file(ns, NULL, c, O_RDONLY, &unnamed, &in, why), 0);
    /* the same swap again (a resent request): the name is the copy's now */
    ck_assert_int_eq(swap("f", f, c, v, &out), -ESTALE);
    /* it survives a restart as it is */
    tms_reopen(&store);
    ns = store.ns;
    ck_assert_int_eq(mds_ns_lookup(ns, NULL, ROOT, "f", &in, why), 0);
    ck_assert_uint_eq(in.ino, c);
}
END_TEST

static bool always_busy(void *arg, uint64_t ino, char *why_out)
{
    (void)ino;
    ++*(unsigned *)arg;
    snprintf(why_out, MDS_WHY_MAX, "busy in a test");
    return true;
}

START_TEST(test_swap_refusals)
{
    mds_inode out, in;
    uint64_t f = new_source("f"), v = version_of(f);
    uint64_t c = new_copy(SIZE);
    /* hard links: refused */
    ck_assert_int_eq(mds_ns_link(ns, NULL, f, ROOT, "f2", &in, why), 0);
    ck_assert_int_eq(swap("f", f, c, version_of(f), &out), -EMLINK);
    mds_removed rm;
    ck_assert_int_eq(mds_ns_unlink(ns, NULL, ROOT, "f2", &rm, why), 0);
    /* a copy that has a name (not queued) is no copy */
    uint64_t g = new_source("g");
    ck_assert_int_eq(swap("f", f, g, v, &out), -EINVAL);
    /* the file itself */
    ck_assert_int_eq(swap("f", f, f, v, &out), -EINVAL);
    /* no such name */
    ck_assert_int_eq(swap("nope", f, c, v, &out), -ENOENT);
    /* busy: asked about the file, after every other check; nothing written */
    unsigned calls = 0;
    mds_migrate_in mi = { .parent = ROOT, .name = "f", .src_ino = f, .copy_ino = c,
                          .data_version = version_of(f), .busy = always_busy, .arg = &calls };
    ck_assert_int_eq(mds_ns_migrate_swap(ns, NULL, &mi, &out, &rm, why), -EBUSY);
    ck_assert_uint_eq(calls, 1);
    ck_assert_str_eq(why, "busy in a test");
    mi.data_version--; /* a stale copy is refused before busy is asked */
    ck_assert_int_eq(mds_ns_migrate_swap(ns, NULL, &mi, &out, &rm, why), -ESTALE);
    ck_assert_uint_eq(calls, 1);
    ck_assert_int_eq(mds_ns_lookup(ns, NULL, ROOT, "f", &in, why), 0);
    ck_assert_uint_eq(in.ino, f);
    ck_assert_int_eq(mds_ns_getattr(ns, c, &in, why), 0);
    ck_assert_uint_eq(in.nlink, 0);
}
END_TEST

/* A directory of mode `mode` owned by uid:gid in the root. */
static uint64_t new_dir(const char *name, uint32_t mode, uint32_t uid, uint32_t gid)
{
    mds_new nw = { .parent = ROOT, .name = name, .mode = mode };
    mds_inode in;
    ck_assert_int_eq(mds_ns_mkdir(ns, &nw, &in, why), 0);
    mds_setattr_in a = { .uid = uid, .gid = gid };
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, in.ino, DEPFS_SET_UID | DEPFS_SET_GID, &a, &in, why), 0);
    return in.ino;
}

/* A file of SIZE bytes in dir, of mode and owner uid:gid. */
static uint64_t new_file_in(uint64_t dir, const char *name, uint32_t mode, uint32_t uid, uint32_t gid)
{
    mds_new nw = { .parent = dir, .name = name, .mode = mode, .uid = uid, .gid = gid };
    mds_inode in;
    ck_assert_int_eq(mds_ns_create(ns, &nw, O_EXCL, &in, why), 0);
    ck_assert_int_eq(mds_ns_extend(ns, NULL, in.ino, SIZE, false, 0, NULL, &in, why), 0);
    return in.ino;
}

/* A copy (new_copy) owned by uid. */
static uint64_t new_copy_of(uint32_t uid)
{
    mds_inode in;
    uint64_t c = new_copy(SIZE);
    mds_setattr_in a = { .uid = uid };
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, c, DEPFS_SET_UID, &a, &in, why), 0);
    return c;
}

static int swap_in_as(const mds_caller *who, uint64_t dir, const char *name, uint64_t src,
                      uint64_t copy)
{
    mds_inode out;
    mds_removed rm;
    mds_migrate_in mi = { .parent = dir, .name = name, .src_ino = src, .copy_ino = copy,
                          .data_version = version_of(src) };
    return mds_ns_migrate_swap(ns, who, &mi, &out, &rm, why);
}

/* Who may swap: one who may write the file and the copy (perm.h), and
 * change the name's entry as an unlink and a create of it would: search
 * and write on the directory, and in a sticky one own it or the file. */
START_TEST(test_swap_permissions)
{
    mds_caller reader = { .uid = 99, .gid = 34 }, owner = { .uid = 12, .gid = 34 };
    mds_caller writer = { .uid = 77, .gid = 77 };
    uint64_t d = new_dir("d", 0755, 12, 34);
    uint64_t f = new_file_in(d, "f", 0640, 12, 34);
    uint64_t c = new_copy_of(0); /* 0600, root's */
    /* group may read only: no swap */
    ck_assert_int_eq(swap_in_as(&reader, d, "f", f, c), -EACCES);
    /* the owner may write the file, not root's copy */
    ck_assert_int_eq(swap_in_as(&owner, d, "f", f, c), -EACCES);
    /* a writer of the file and of its own copy, without write on the directory */
    uint64_t g = new_file_in(d, "g", 0666, 12, 34);
    uint64_t wc = new_copy_of(77);
    ck_assert_int_eq(swap_in_as(&writer, d, "g", g, wc), -EACCES);
    ck_assert_ptr_nonnull(strstr(why, "write+search"));
    /* write+search is what it takes (no read) */
    uint64_t wx = new_dir("wx", 0733, 12, 34);
    uint64_t p = new_file_in(wx, "p", 0666, 12, 34);
    ck_assert_int_eq(swap_in_as(&writer, wx, "p", p, wc), 0);
    /* no search: refused before the name is even looked up */
    uint64_t closed = new_dir("closed", 0776, 12, 34);
    uint64_t q = new_file_in(closed, "q", 0666, 12, 34);
    uint64_t wc2 = new_copy_of(77);
    ck_assert_int_eq(swap_in_as(&writer, closed, "q", q, wc2), -EACCES);
    ck_assert_ptr_nonnull(strstr(why, "search"));
    ck_assert_int_eq(swap_in_as(&writer, closed, "nope", q, wc2), -EACCES); /* not ENOENT */
    /* sticky: neither the directory's nor the file's owner */
    uint64_t tmp = new_dir("tmp", 01777, 0, 0);
    uint64_t t = new_file_in(tmp, "t", 0666, 12, 34);
    ck_assert_int_eq(swap_in_as(&writer, tmp, "t", t, wc2), -EPERM);
    ck_assert_ptr_nonnull(strstr(why, "sticky"));
    mds_inode in;
    ck_assert_int_eq(mds_ns_lookup(ns, NULL, tmp, "t", &in, why), 0);
    ck_assert_uint_eq(in.ino, t); /* nothing changed */
    /* the file's owner may, in a sticky directory too */
    uint64_t oc = new_copy_of(12);
    ck_assert_int_eq(swap_in_as(&owner, tmp, "t", t, oc), 0);
    ck_assert_int_eq(swap_in_as(&owner, d, "f", f, new_copy_of(12)), 0);
    ck_assert_int_eq(mds_ns_lookup(ns, NULL, d, "f", &in, why), 0);
    ck_assert_uint_ne(in.ino, f);
}
END_TEST

/* ------------------------------------------------------------ the holds */

START_TEST(test_holds_writers)
{
    mds_holds *h;
    ck_assert_int_eq(mds_holds_new(MDS_HOLDS_MAX, GRACE_S, 0, &h), 0);
    mds_holds_note(h, 5, OTHER, T0 + TTL, false, 0, T0, NULL);
    ck_assert(!mds_holds_other_writer(h, 5, ME, T0)); /* a reader */
    mds_holds_mark_writer(h, 5, OTHER, T0);
    ck_assert(mds_holds_other_writer(h, 5, ME, T0));
    ck_assert(!mds_holds_other_writer(h, 5, OTHER, T0)); /* its own */
    ck_assert(!mds_holds_other_writer(h, 6, ME, T0));
    ck_assert(!mds_holds_other_writer(h, 5, ME, T0 + TTL + GRACE_S + 1)); /* expired */
    mds_holds_note(h, 5, OTHER, T0 + TTL, false, 0, T0, NULL);
    mds_holds_mark_writer(h, 5, OTHER, T0);
    mds_holds_release(h, 5, OTHER, MDS_HOLD_GEN_ANY);
    ck_assert(!mds_holds_other_writer(h, 5, ME, T0));
    mds_holds_mark_writer(h, 5, OTHER, T0); /* no hold: nothing */
    ck_assert(!mds_holds_other_writer(h, 5, ME, T0));
    mds_holds_free(h);
    /* after a crash the writers of before are unknown: every file is busy */
    ck_assert_int_eq(mds_holds_new(MDS_HOLDS_MAX, GRACE_S, T0 + TTL, &h), 0);
    ck_assert(mds_holds_other_writer(h, 5, ME, T0));
    ck_assert(!mds_holds_other_writer(h, 5, ME, T0 + TTL + GRACE_S + 1));
    mds_holds_free(h);
}
END_TEST

/* ------------------------------------------------------------ handlers */

static tmh hh; /* tests/lib/mds_handlers.h */

static void handlers_up(void)
{
    tmh_up(&hh, &store, N_SERVERS, 0);
}

static void handlers_down(void)
{
    tmh_down(&hh);
}

static int req(Depfs__MdsOp op, Depfs__MdsRequest *q, mds_result **out)
{
    return tmh_req(&hh, op, q, out);
}

static int open_as(uint64_t client, uint64_t ino, uint32_t flags)
{
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    q.has_client_id = q.has_ino = q.has_flags = true;
    q.client_id = client;
    q.ino = ino;
    q.flags = flags;
    return req(DEPFS__MDS_OP__MDS_OPEN, &q, NULL);
}

static int release_as(uint64_t client, uint64_t ino)
{
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    q.has_client_id = q.has_ino = true;
    q.client_id = client;
    q.ino = ino;
    return req(DEPFS__MDS_OP__MDS_RELEASE, &q, NULL);
}

static uint64_t create_unlinked_as(uint64_t client)
{
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    mds_result *r;
    q.has_client_id = q.has_parent = q.has_mode = q.has_flags = q.has_unlinked = true;
    q.client_id = client;
    q.parent = ROOT;
    q.mode = 0600;
    q.flags = O_RDWR;
    q.unlinked = true;
    ck_assert_int_eq(req(DEPFS__MDS_OP__MDS_CREATE, &q, &r), 0);
    uint64_t ino = mds_result_reply(r)->attr->ino;
    ck_assert_uint_eq(mds_result_reply(r)->attr->nlink, 0);
    mds_result_free(r);
    mds_inode in;
    ck_assert_int_eq(mds_ns_extend(ns, NULL, ino, SIZE, false, 0, NULL, &in, why), 0);
    return ino;
}

static int swap_as(uint64_t client, uint64_t src, uint64_t copy, uint64_t version, mds_result **out)
{
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    q.has_client_id = q.has_parent = q.has_ino = q.has_migrate_ino = q.has_data_version = true;
    q.client_id = client;
    q.parent = ROOT;
    q.name = "f";
    q.ino = src;
    q.migrate_ino = copy;
    q.data_version = version;
    return req(DEPFS__MDS_OP__MDS_MIGRATE_SWAP, &q, out);
}

static int renew_hold_as(uint64_t client, uint64_t ino, bool say_access, uint32_t flags)
{
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    q.has_client_id = q.has_ino = q.has_renew_hold = q.renew_hold = true;
    q.client_id = client;
    q.ino = ino;
    q.has_flags = say_access;
    q.flags = flags;
    return req(DEPFS__MDS_OP__MDS_OPEN, &q, NULL);
}

/* A client without capabilities renews its hold saying whether a handle
 * of its was opened for writing: a reader's renewal does not make the
 * file busy for a migrate; a writer's, or one that says nothing (a client
 * from before), does. */
START_TEST(test_hold_renewal_access)
{
    handlers_up();
    uint64_t f = new_source("f");
    uint64_t c = create_unlinked_as(ME);
    ck_assert_int_eq(open_as(OTHER, f, O_RDONLY), 0);
    ck_assert_int_eq(renew_hold_as(OTHER, f, true, O_RDONLY), 0);
    ck_assert(!mds_holds_other_writer(hh.ctx.holds, f, ME, (uint64_t)time(NULL)));
    ck_assert_int_eq(renew_hold_as(OTHER, f, true, O_WRONLY), 0);
    ck_assert(mds_holds_other_writer(hh.ctx.holds, f, ME, (uint64_t)time(NULL)));
    ck_assert_int_eq(swap_as(ME, f, c, version_of(f), NULL), EBUSY);
    ck_assert_int_eq(release_as(OTHER, f), 0);
    ck_assert_int_eq(open_as(OTHER, f, O_RDONLY), 0);
    ck_assert_int_eq(renew_hold_as(OTHER, f, false, 0), 0);
    ck_assert(mds_holds_other_writer(hh.ctx.holds, f, ME, (uint64_t)time(NULL)));
    ck_assert_int_eq(release_as(OTHER, f), 0);
    ck_assert_int_eq(swap_as(ME, f, c, version_of(f), NULL), 0);
    handlers_down();
}
END_TEST

START_TEST(test_handler_swap)
{
    mds_result *r;
    handlers_up();
    uint64_t f = new_source("f");
    /* another client writes: busy, with a message that says so */
    ck_assert_int_eq(open_as(OTHER, f, O_RDWR), 0);
    uint64_t v = version_of(f);
    ck_assert_int_eq(open_as(ME, f, O_RDONLY), 0);
    uint64_t c = create_unlinked_as(ME);
    ck_assert_int_eq(swap_as(ME, f, c, v, &r), EBUSY);
    ck_assert_ptr_nonnull(strstr(mds_result_reply(r)->message, "open for writing"));
    mds_result_free(r);
    /* its last close: the swap goes, reading the attributes back */
    ck_assert_int_eq(release_as(OTHER, f), 0);
    ck_assert_int_eq(swap_as(ME, f, c, v, &r), 0);
    ck_assert_uint_eq(mds_result_reply(r)->attr->ino, c);
    ck_assert(mds_result_reply(r)->attr->has_data_version);
    ck_assert_uint_eq(mds_result_reply(r)->removed_ino, f);
    mds_result_free(r);
    /* the old inode is held by ME's read handle: not listed for the purge */
    ck_assert(mds_holds_held(hh.ctx.holds, f, (uint64_t)time(NULL)));
    /* a writer who opens the old inode by number afterwards: look again */
    ck_assert_int_eq(open_as(OTHER, f, O_WRONLY), ESTALE);
    /* a writer that opened, wrote (its close's size commit) and closed
     * after the copy began: refused as changed */
    uint64_t c2 = create_unlinked_as(ME);
    uint64_t v2 = version_of(c);
    mds_inode in;
    ck_assert_int_eq(open_as(OTHER, c, O_WRONLY), 0);
    ck_assert_int_eq(mds_ns_extend(hh.ctx.ns, NULL, c, 0, true, 1, NULL, &in, why), 0);
    ck_assert_int_eq(release_as(OTHER, c), 0);
    ck_assert_int_eq(swap_as(ME, c, c2, v2, NULL), ESTALE);
    /* the migrating client's own write handle does not make it busy */
    ck_assert_int_eq(open_as(ME, c, O_RDWR), 0);
    ck_assert_int_eq(swap_as(ME, c, c2, version_of(c), NULL), 0);
    /* bounds: a missing or absurd migrate_ino, unlinked with a name */
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    q.has_parent = q.has_ino = q.has_data_version = true;
    q.parent = ROOT;
    q.name = "f";
    q.ino = c2;
    ck_assert_int_eq(req(DEPFS__MDS_OP__MDS_MIGRATE_SWAP, &q, NULL), EINVAL);
    q.has_migrate_ino = true;
    q.migrate_ino = 0;
    ck_assert_int_eq(req(DEPFS__MDS_OP__MDS_MIGRATE_SWAP, &q, NULL), EINVAL);
    q.migrate_ino = c2;
    ck_assert_int_eq(req(DEPFS__MDS_OP__MDS_MIGRATE_SWAP, &q, NULL), EINVAL);
    Depfs__MdsRequest cq = DEPFS__MDS_REQUEST__INIT;
    cq.has_parent = cq.has_unlinked = cq.unlinked = true;
    cq.parent = ROOT;
    cq.name = "named";
    ck_assert_int_eq(req(DEPFS__MDS_OP__MDS_CREATE, &cq, NULL), EINVAL);
    cq.name = NULL;
    ck_assert_int_eq(req(DEPFS__MDS_OP__MDS_MKDIR, &cq, NULL), EINVAL);
    handlers_down();
}
END_TEST

/* The copy must be the requesting client's own, still open (the proto's
 * "still held by the caller"): a copy of another client, one given back
 * (its strip files may be going with the purge), or a request that names
 * no client is refused (EPERM), nothing changed. */
START_TEST(test_handler_swap_copy_held)
{
    mds_result *r;
    mds_inode in;
    handlers_up();
    uint64_t f = new_source("f");
    uint64_t theirs = create_unlinked_as(OTHER);
    ck_assert_int_eq(swap_as(ME, f, theirs, version_of(f), &r), EPERM);
    ck_assert_ptr_nonnull(strstr(mds_result_reply(r)->message, "not held open by client 9"));
    mds_result_free(r);
    uint64_t given_back = create_unlinked_as(ME);
    ck_assert_int_eq(release_as(ME, given_back), 0);
    ck_assert_int_eq(swap_as(ME, f, given_back, version_of(f), NULL), EPERM);
    uint64_t nobodys = create_unlinked_as(0);
    ck_assert_int_eq(swap_as(0, f, nobodys, version_of(f), NULL), EPERM);
    ck_assert_int_eq(mds_ns_lookup(ns, NULL, ROOT, "f", &in, why), 0);
    ck_assert_uint_eq(in.ino, f);
    ck_assert_int_eq(swap_as(OTHER, f, theirs, version_of(f), NULL), 0); /* its own: swapped */
    ck_assert_int_eq(mds_ns_lookup(ns, NULL, ROOT, "f", &in, why), 0);
    ck_assert_uint_eq(in.ino, theirs);
    handlers_down();
}
END_TEST

static Suite *migrate_suite(void)
{
    Suite *s = suite_create("mds_migrate");
    TCase *tc = tcase_create("pure");
    tcase_add_test(tc, test_record_data_version);
    tcase_add_test(tc, test_holds_writers);
    suite_add_tcase(s, tc);
    tc = tcase_create("store");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_data_version_bumps);
    tcase_add_test(tc, test_hold_renewal_access);
    tcase_add_test(tc, test_unlinked_create);
    tcase_add_test(tc, test_swap);
    tcase_add_test(tc, test_swap_refusals);
    tcase_add_test(tc, test_swap_permissions);
    tcase_add_test(tc, test_handler_swap);
    tcase_add_test(tc, test_handler_swap_copy_held);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    dlog_init("test_mds_migrate", DLOG_ERR);
    SRunner *sr = srunner_create(migrate_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
