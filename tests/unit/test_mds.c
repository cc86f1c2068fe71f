/* test_mds.c - the MDS namespace (mds/namespace.c, ns_xattr.c, cluster.c)
 * on a real LevelDB in a temp dir, plus the RPC handlers over a real TCP
 * socket on 127.0.0.1. */
#include <check.h>
#include <dirent.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "mds/cluster.h"
#include "depfs.pb-c.h"
#include "mds/handlers.h"
#include "kvstore.h"
#include "log.h"
#include "mds/namespace.h"
#include "mds/perm.h"
#include "mds/store_keys.h"
#include "mds/syncer.h"
#include "rpc.h"
#include "tests/lib/mds_store.h"
#include "wire_check.h"

#define N_SERVERS 6u
#define DEF_N 4u
#define DEF_K 2u
#define DEF_SU 65536u
#define ROOT MDS_ROOT_INO
#define RPC_TIMEOUT_MS 5000

static tms_store store; /* tests/lib/mds_store.h: the temp dir, store and namespace */
static kvstore *kv;      /* store.kv and store.ns while open */
static mds_ns *ns;
static char why[MDS_WHY_MAX];

static void store_open(void)
{
    tms_open(&store);
    kv = store.kv;
    ns = store.ns;
}

static void store_close(void)
{
    tms_close(&store);
    ns = NULL;
    kv = NULL;
}

static void setup(void)
{
    tms_setup(&store, N_SERVERS, DEF_N, DEF_K, DEF_SU);
    kv = store.kv;
    ns = store.ns;
}

static void teardown(void)
{
    tms_teardown(&store);
    ns = NULL;
    kv = NULL;
}

/* ---------------------------------------------------------------- helpers */

static mds_new mk(uint64_t parent, const char *name, uint32_t mode)
{
    mds_new nw = { .parent = parent, .name = name, .mode = mode, .uid = 1000, .gid = 100 };
    return nw;
}

static uint64_t new_file(uint64_t parent, const char *name)
{
    mds_new nw = mk(parent, name, 0644);
    mds_inode in;
    ck_assert_int_eq(mds_ns_create(ns, &nw, O_EXCL, &in, why), 0);
    return in.ino;
}

static uint64_t new_dir(uint64_t parent, const char *name)
{
    mds_new nw = mk(parent, name, 0755);
    mds_inode in;
    ck_assert_int_eq(mds_ns_mkdir(ns, &nw, &in, why), 0);
    return in.ino;
}

static mds_inode attr_of(uint64_t ino)
{
    mds_inode in;
    ck_assert_int_eq(mds_ns_getattr(ns, ino, &in, why), 0);
    return in;
}

static uint64_t ino_of(uint64_t parent, const char *name)
{
    mds_inode in;
    int rc = mds_ns_lookup(ns, NULL, parent, name, &in, why);
    return rc == 0 ? in.ino : 0;
}

static char *xattr_str(uint64_t ino, const char *name, int *rc)
{
    void *v = NULL;
    size_t len = 0;
    *rc = mds_ns_getxattr(ns, NULL, ino, name, &v, &len, why);
    if (*rc < 0)
        return NULL;
    char *s = calloc(1, len + 1);
    memcpy(s, v, len);
    free(v);
    return s;
}

/* A regular file whose last link went is kept (nlink 0) in the purge
 * queue: drops it as the drainer would, after checking it is queued. */
static void purge(uint64_t ino)
{
    ck_assert_uint_eq(attr_of(ino).nlink, 0);
    unsigned dropped = 0;
    ck_assert_int_eq(mds_ns_purge_done(ns, &ino, 1, NULL, NULL, &dropped, why), 0);
    ck_assert_uint_eq(dropped, 1);
    mds_inode in;
    ck_assert_int_eq(mds_ns_getattr(ns, ino, &in, why), -ENOENT);
}

static void assert_layout_str(uint64_t ino, const char *want)
{
    int rc;
    char *s = xattr_str(ino, MDS_LAYOUT_XATTR, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(s, want);
    free(s);
}

/* ------------------------------------------------------------------ tests */

START_TEST(test_root)
{
    mds_inode r = attr_of(ROOT);
    ck_assert(S_ISDIR(r.mode));
    ck_assert_uint_eq(r.mode & 07777, 0755);
    ck_assert_uint_eq(r.nlink, 2);
    ck_assert_uint_eq(r.uid, 0);
    uint64_t files, bytes;
    mds_ns_statfs(ns, &files, &bytes);
    ck_assert_uint_eq(files, 1);
    ck_assert_uint_eq(bytes, 0);
}
END_TEST

START_TEST(test_create_lookup)
{
    mds_new nw = mk(ROOT, "f", 0640);
    mds_inode a, b;
    ck_assert_int_eq(mds_ns_create(ns, &nw, O_EXCL, &a, why), 0);
    ck_assert(S_ISREG(a.mode));
    ck_assert_uint_eq(a.mode & 07777, 0640);
    ck_assert_uint_eq(a.uid, 1000);
    ck_assert_uint_eq(a.gid, 100);
    ck_assert_uint_eq(a.nlink, 1);
    ck_assert(a.has_layout);
    ck_assert_uint_eq(a.lay.n, DEF_N);
    ck_assert_uint_eq(a.lay.k, DEF_K);
    ck_assert_uint_eq(a.lay.su, DEF_SU);
    ck_assert_uint_eq(a.lay.version, 1);
    for (unsigned i = 0; i < a.lay.n; i++) {
        ck_assert(a.lay.servers[i] >= 10 && a.lay.servers[i] < 10 + N_SERVERS);
        for (unsigned j = i + 1; j < a.lay.n; j++)
            ck_assert_uint_ne(a.lay.servers[i], a.lay.servers[j]);
    }
    ck_assert_int_eq(mds_ns_lookup(ns, NULL, ROOT, "f", &b, why), 0);
    ck_assert_uint_eq(b.ino, a.ino);
    ck_assert_int_eq(memcmp(&b.lay, &a.lay, sizeof(a.lay)), 0);
    /* O_EXCL vs plain create of an existing name */
    ck_assert_int_eq(mds_ns_create(ns, &nw, O_EXCL, &b, why), -EEXIST);
    ck_assert_int_eq(mds_ns_create(ns, &nw, 0, &b, why), 0);
    ck_assert_uint_eq(b.ino, a.ino);
    /* parent's mtime moved */
    ck_assert(attr_of(ROOT).mtime_ns >= a.mtime_ns);
    /* "." and ".." lookups */
    ck_assert_uint_eq(ino_of(ROOT, "."), ROOT);
    ck_assert_uint_eq(ino_of(ROOT, ".."), ROOT);
    /* errors */
    ck_assert_int_eq(mds_ns_lookup(ns, NULL, ROOT, "nope", &b, why), -ENOENT);
    ck_assert_int_eq(mds_ns_lookup(ns, NULL, a.ino, "x", &b, why), -ENOTDIR);
    ck_assert_int_eq(mds_ns_getattr(ns, 999999, &b, why), -ENOENT);
    const char *bad[] = { "", ".", "..", "a/b" };
    for (unsigned i = 0; i < 4; i++) {
        nw.name = bad[i];
        ck_assert_int_eq(mds_ns_create(ns, &nw, O_EXCL, &b, why), -EINVAL);
    }
    char longname[300];
    memset(longname, 'x', 256);
    longname[256] = '\0';
    nw.name = longname;
    ck_assert_int_eq(mds_ns_create(ns, &nw, O_EXCL, &b, why), -ENAMETOOLONG);
    longname[255] = '\0';
    ck_assert_int_eq(mds_ns_create(ns, &nw, O_EXCL, &b, why), 0);
    nw.parent = 424242;
    nw.name = "orphan";
    ck_assert_int_eq(mds_ns_create(ns, &nw, O_EXCL, &b, why), -ESTALE); /* no such parent */
}
END_TEST

START_TEST(test_spread)
{
    /* layouts spread over all servers */
    unsigned used[N_SERVERS] = { 0 };
    char name[32];
    for (unsigned i = 0; i < 12; i++) {
        snprintf(name, sizeof(name), "s%u", i);
        mds_inode in = attr_of(new_file(ROOT, name));
        for (unsigned j = 0; j < in.lay.n; j++)
            used[in.lay.servers[j] - 10]++;
    }
    for (unsigned i = 0; i < N_SERVERS; i++)
        ck_assert_uint_gt(used[i], 0);
}
END_TEST

START_TEST(test_mkdir_rmdir)
{
    mds_inode in;
    uint64_t d = new_dir(ROOT, "d");
    ck_assert_uint_eq(attr_of(ROOT).nlink, 3);
    ck_assert_uint_eq(attr_of(d).nlink, 2);
    ck_assert_uint_eq(ino_of(d, ".."), ROOT);
    uint64_t sub = new_dir(d, "sub");
    ck_assert_uint_eq(attr_of(d).nlink, 3);
    new_file(d, "f");
    mds_new nw = mk(ROOT, "d", 0755);
    ck_assert_int_eq(mds_ns_mkdir(ns, &nw, &in, why), -EEXIST);
    ck_assert_int_eq(mds_ns_rmdir(ns, NULL, ROOT, "d", why), -ENOTEMPTY);
    ck_assert_int_eq(mds_ns_rmdir(ns, NULL, d, "f", why), -ENOTDIR);
    mds_removed rm;
    ck_assert_int_eq(mds_ns_unlink(ns, NULL, d, "sub", &rm, why), -EISDIR);
    ck_assert_int_eq(mds_ns_rmdir(ns, NULL, d, "sub", why), 0);
    ck_assert_int_eq(mds_ns_getattr(ns, sub, &in, why), -ENOENT);
    ck_assert_uint_eq(attr_of(d).nlink, 2);
    ck_assert_int_eq(mds_ns_unlink(ns, NULL, d, "f", &rm, why), 0);
    ck_assert_int_eq(mds_ns_rmdir(ns, NULL, ROOT, "d", why), 0);
    ck_assert_uint_eq(attr_of(ROOT).nlink, 2);
    ck_assert_int_eq(mds_ns_rmdir(ns, NULL, ROOT, "d", why), -ENOENT);
    uint64_t files, bytes;
    mds_ns_statfs(ns, &files, &bytes);
    ck_assert_uint_eq(files, 2); /* f counts until its strip files are purged */
    purge(rm.ino);
    mds_ns_statfs(ns, &files, &bytes);
    ck_assert_uint_eq(files, 1);
}
END_TEST

START_TEST(test_rename_files)
{
    mds_removed rm;
    uint64_t a = new_file(ROOT, "a");
    uint64_t b = new_file(ROOT, "b");
    mds_inode bi = attr_of(b);
    uint64_t d = new_dir(ROOT, "d");

    /* replace: b's last link goes, reply names it with its layout */
    ck_assert_int_eq(mds_ns_rename(ns, NULL, ROOT, "a", ROOT, "b", 0, &rm, NULL, why), 0);
    ck_assert_uint_eq(rm.ino, b);
    ck_assert(rm.has_layout);
    ck_assert_int_eq(memcmp(&rm.lay, &bi.lay, sizeof(bi.lay)), 0);
    ck_assert_uint_eq(ino_of(ROOT, "b"), a);
    ck_assert_uint_eq(ino_of(ROOT, "a"), 0);
    ck_assert(rm.queued);
    purge(b);
    /* across directories */
    ck_assert_int_eq(mds_ns_rename(ns, NULL, ROOT, "b", d, "moved", 0, &rm, NULL, why), 0);
    ck_assert_uint_eq(rm.ino, 0);
    ck_assert_uint_eq(ino_of(d, "moved"), a);
    ck_assert_uint_eq(ino_of(ROOT, "b"), 0);
    /* missing source */
    ck_assert_int_eq(mds_ns_rename(ns, NULL, ROOT, "zz", ROOT, "yy", 0, &rm, NULL, why), -ENOENT);
    /* NOREPLACE */
    uint64_t c = new_file(d, "c");
    ck_assert_int_eq(mds_ns_rename(ns, NULL, d, "moved", d, "c", MDS_RENAME_NOREPLACE, &rm, NULL, why), -EEXIST);
    ck_assert_int_eq(mds_ns_rename(ns, NULL, d, "moved", d, "free", MDS_RENAME_NOREPLACE, &rm, NULL, why), 0);
    /* EXCHANGE */
    ck_assert_int_eq(mds_ns_rename(ns, NULL, d, "free", d, "c", MDS_RENAME_EXCHANGE, &rm, NULL, why), 0);
    ck_assert_uint_eq(ino_of(d, "free"), c);
    ck_assert_uint_eq(ino_of(d, "c"), a);
    ck_assert_int_eq(mds_ns_rename(ns, NULL, d, "free", d, "nothere", MDS_RENAME_EXCHANGE, &rm, NULL, why), -ENOENT);
    ck_assert_int_eq(mds_ns_rename(ns, NULL, d, "free", d, "c", 3, &rm, NULL, why), -EINVAL);
    ck_assert_int_eq(mds_ns_rename(ns, NULL, d, "free", d, "c", 4, &rm, NULL, why), -EINVAL);
    /* hard links of the same inode: no-op */
    mds_inode li;
    ck_assert_int_eq(mds_ns_link(ns, NULL, c, d, "c2", &li, why), 0);
    ck_assert_int_eq(mds_ns_rename(ns, NULL, d, "free", d, "c2", 0, &rm, NULL, why), 0);
    ck_assert_uint_eq(ino_of(d, "free"), c);
    ck_assert_uint_eq(ino_of(d, "c2"), c);
    ck_assert_uint_eq(attr_of(c).nlink, 2);
    /* replacing one link of a two-link file: no removal */
    uint64_t e = new_file(d, "e");
    ck_assert_int_eq(mds_ns_rename(ns, NULL, d, "e", d, "c2", 0, &rm, NULL, why), 0);
    ck_assert_uint_eq(rm.ino, 0);
    ck_assert_uint_eq(attr_of(c).nlink, 1);
    ck_assert_uint_eq(ino_of(d, "c2"), e);
}
END_TEST

START_TEST(test_rename_dirs)
{
    mds_removed rm;
    uint64_t a = new_dir(ROOT, "a");
    uint64_t b = new_dir(ROOT, "b");
    uint64_t a1 = new_dir(a, "a1");
    uint64_t a2 = new_dir(a1, "a2");
    uint64_t f = new_file(ROOT, "f");
    ck_assert_uint_eq(attr_of(ROOT).nlink, 4);

    /* into its own subtree */
    ck_assert_int_eq(mds_ns_rename(ns, NULL, ROOT, "a", a1, "x", 0, &rm, NULL, why), -EINVAL);
    ck_assert_int_eq(mds_ns_rename(ns, NULL, ROOT, "a", a2, "x", 0, &rm, NULL, why), -EINVAL);
    ck_assert_int_eq(mds_ns_rename(ns, NULL, ROOT, "a", a, "x", 0, &rm, NULL, why), -EINVAL);
    /* type mismatches */
    ck_assert_int_eq(mds_ns_rename(ns, NULL, ROOT, "a", ROOT, "f", 0, &rm, NULL, why), -ENOTDIR);
    ck_assert_int_eq(mds_ns_rename(ns, NULL, ROOT, "f", ROOT, "a", 0, &rm, NULL, why), -EISDIR);
    /* non-empty target dir */
    ck_assert_int_eq(mds_ns_rename(ns, NULL, ROOT, "b", ROOT, "a", 0, &rm, NULL, why), -ENOTEMPTY);
    /* move a1 under b: nlinks and ".." follow */
    ck_assert_int_eq(mds_ns_rename(ns, NULL, a, "a1", b, "a1", 0, &rm, NULL, why), 0);
    ck_assert_uint_eq(attr_of(a).nlink, 2);
    ck_assert_uint_eq(attr_of(b).nlink, 3);
    ck_assert_uint_eq(ino_of(a1, ".."), b);
    ck_assert_uint_eq(ino_of(b, "a1"), a1);
    /* replace an empty dir */
    ck_assert_int_eq(mds_ns_rename(ns, NULL, ROOT, "b", ROOT, "a", 0, &rm, NULL, why), 0);
    ck_assert_uint_eq(ino_of(ROOT, "a"), b);
    mds_inode gone;
    ck_assert_int_eq(mds_ns_getattr(ns, a, &gone, why), -ENOENT);
    ck_assert_uint_eq(attr_of(ROOT).nlink, 3);
    /* exchange a dir with a file across parents */
    ck_assert_int_eq(mds_ns_rename(ns, NULL, b, "a1", ROOT, "f", MDS_RENAME_EXCHANGE, &rm, NULL, why), 0);
    ck_assert_uint_eq(ino_of(ROOT, "f"), a1);
    ck_assert_uint_eq(ino_of(b, "a1"), f);
    ck_assert_uint_eq(ino_of(a1, ".."), ROOT);
    ck_assert_uint_eq(attr_of(ROOT).nlink, 4);
    ck_assert_uint_eq(attr_of(b).nlink, 2);
    /* exchange that would put a dir inside itself */
    ck_assert_int_eq(mds_ns_rename(ns, NULL, a1, "a2", ROOT, "f", MDS_RENAME_EXCHANGE, &rm, NULL, why), -EINVAL);
    (void)a2;
}
END_TEST

/* An open through a name shows the name generation its lookup gave: a
 * rename of the file (away from that name), over it or an unlink of one of
 * its links moves it, and such an open is then told to look the name up
 * again; a rename elsewhere in the directory, a new link or an open that
 * did not come through a name (a handle's reopen) is not refused. */
static int open_via_name(uint64_t ino, uint64_t name_gen)
{
    mds_inode in;
    mds_open_name on = { .linked = true, .has_name_gen = true, .name_gen = name_gen };
    return mds_ns_open_file(ns, NULL, ino, O_RDONLY, &on, &in, why);
}

START_TEST(test_name_gen_at_open)
{
    mds_removed rm;
    mds_inode in;
    uint64_t f = new_file(ROOT, "ckpt");
    new_file(ROOT, "other");
    uint64_t g = attr_of(f).name_gen;
    ck_assert_int_eq(open_via_name(f, g), 0);
    ck_assert_int_eq(mds_ns_rename(ns, NULL, ROOT, "other", ROOT, "other2", 0, &rm, NULL, why), 0);
    ck_assert_int_eq(mds_ns_link(ns, NULL, f, ROOT, "ckpt-link", &in, why), 0);
    ck_assert_uint_eq(attr_of(f).name_gen, g);
    ck_assert_int_eq(open_via_name(f, g), 0);
    /* mv ckpt ckpt.old: the name "ckpt" no longer is this file; the
     * renamer learns the generation of its new name */
    mds_inode moved;
    ck_assert_int_eq(mds_ns_rename(ns, NULL, ROOT, "ckpt", ROOT, "ckpt.old", 0, &rm, &moved, why), 0);
    ck_assert_int_eq(open_via_name(f, g), -ESTALE);
    ck_assert_uint_eq(moved.ino, f);
    ck_assert_int_eq(open_via_name(f, moved.name_gen), 0);
    ck_assert_int_eq(mds_ns_open_file(ns, NULL, f, O_RDONLY, &(mds_open_name){ .linked = false },
                                      &in, why), 0);
    g = attr_of(f).name_gen; /* looked up again */
    ck_assert_int_eq(open_via_name(f, g), 0);
    /* one of its links goes */
    ck_assert_int_eq(mds_ns_unlink(ns, NULL, ROOT, "ckpt-link", &rm, why), 0);
    ck_assert_int_eq(open_via_name(f, g), -ESTALE);
    g = attr_of(f).name_gen;
    /* another file renamed over it: the target's name went */
    ck_assert_int_eq(mds_ns_rename(ns, NULL, ROOT, "other2", ROOT, "ckpt.old", 0, &rm, NULL, why), 0);
    ck_assert_int_eq(open_via_name(f, g), -ESTALE); /* no name left either */
    ck_assert_uint_eq(rm.ino, f);
    purge(f);
    /* the generation survives a restart (the inode record carries it) */
    uint64_t o = ino_of(ROOT, "ckpt.old");
    uint64_t go = attr_of(o).name_gen;
    ck_assert_uint_gt(go, 0);
    store_close();
    store_open();
    ck_assert_uint_eq(attr_of(o).name_gen, go);
}
END_TEST

START_TEST(test_link_unlink)
{
    mds_inode in;
    mds_removed rm;
    uint64_t d = new_dir(ROOT, "d");
    uint64_t f = new_file(ROOT, "f");
    mds_inode fi = attr_of(f);
    ck_assert_int_eq(mds_ns_link(ns, NULL, f, d, "g", &in, why), 0);
    ck_assert_uint_eq(in.nlink, 2);
    ck_assert_uint_eq(ino_of(d, "g"), f);
    ck_assert_int_eq(mds_ns_link(ns, NULL, f, d, "g", &in, why), -EEXIST);
    ck_assert_int_eq(mds_ns_link(ns, NULL, d, ROOT, "dl", &in, why), -EPERM);
    ck_assert_int_eq(mds_ns_unlink(ns, NULL, ROOT, "f", &rm, why), 0);
    ck_assert_uint_eq(rm.ino, 0);
    ck_assert_uint_eq(attr_of(f).nlink, 1);
    ck_assert_int_eq(mds_ns_unlink(ns, NULL, d, "g", &rm, why), 0);
    ck_assert_uint_eq(rm.ino, f);
    ck_assert(rm.has_layout);
    ck_assert_int_eq(memcmp(&rm.lay, &fi.lay, sizeof(fi.lay)), 0);
    ck_assert(rm.queued);
    /* kept by inode number for open handles; no new name for it (Linux) */
    ck_assert_int_eq(mds_ns_link(ns, NULL, f, ROOT, "again", &in, why), -ENOENT);
    purge(f);
    ck_assert_int_eq(mds_ns_unlink(ns, NULL, d, "g", &rm, why), -ENOENT);
    /* symlinks and fifos go without a layout */
    mds_new nw = mk(ROOT, "sl", 0);
    nw.target = "/some/where";
    ck_assert_int_eq(mds_ns_symlink(ns, &nw, &in, why), 0);
    ck_assert_int_eq(mds_ns_unlink(ns, NULL, ROOT, "sl", &rm, why), 0);
    ck_assert_uint_eq(rm.ino, in.ino);
    ck_assert(!rm.has_layout && !rm.queued);
    ck_assert_int_eq(mds_ns_getattr(ns, in.ino, &in, why), -ENOENT); /* gone at once */
}
END_TEST

/* A writer's report (MDS_EXTEND) from a caller who may not set times
 * (not the owner, not root) moves mtime only to the time of its writes:
 * never back, never past the MDS's now and the clock skew allowed; the
 * owner's stands, as its setattr would. The allocation it reports is at
 * most every unit of the file's stripes. */
START_TEST(test_extend_writer)
{
    mds_inode in;
    mds_caller owner = { .uid = 1000, .gid = 100 }, writer = { .uid = 2000, .gid = 2000 };
    mds_new nw = mk(ROOT, "shared", 0666);
    ck_assert_int_eq(mds_ns_create(ns, &nw, O_EXCL, &in, why), 0);
    uint64_t f = in.ino;
    int64_t mtime0 = in.mtime_ns;
    ck_assert_int_eq(mds_ns_extend(ns, &writer, f, 100, true, 42, NULL, &in, why), 0);
    ck_assert_uint_eq(in.size, 100); /* the size commit stands */
    ck_assert_int_eq(in.mtime_ns, mtime0); /* not back to 1970 */
    int64_t ahead_ns = 3600 * (int64_t)CLOCK_NS_PER_S;
    ck_assert_int_eq(mds_ns_extend(ns, &writer, f, 100, true, clock_real_ns() + ahead_ns, NULL,
                                   &in, why), 0);
    ck_assert_int_le(in.mtime_ns, clock_real_ns() + PERM_WRITER_MTIME_AHEAD_NS);
    ck_assert_int_ge(in.mtime_ns, mtime0);
    int64_t t = attr_of(f).mtime_ns + 1; /* a time in the window is taken as it is */
    ck_assert_int_eq(mds_ns_extend(ns, &writer, f, 100, true, t, NULL, &in, why), 0);
    ck_assert_int_eq(in.mtime_ns, t);
    ck_assert_int_eq(mds_ns_extend(ns, &owner, f, 100, true, 42, NULL, &in, why), 0);
    ck_assert_int_eq(in.mtime_ns, 42);
    ck_assert_int_eq(mds_ns_extend(ns, NULL, f, 100, true, 43, NULL, &in, why), 0);
    ck_assert_int_eq(in.mtime_ns, 43);
    /* an allocation past every unit of the file's one stripe is cut to them */
    uint64_t alloc = WIRE_ALLOC_BYTES_MAX;
    ck_assert_int_eq(mds_ns_extend(ns, &writer, f, 100, false, 0, &alloc, &in, why), 0);
    ck_assert_uint_eq(in.alloc_bytes, (uint64_t)in.lay.n * in.lay.su);
    /* no write permission, no report */
    mds_setattr_in a = { .mode = 0644 };
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, f, DEPFS_SET_MODE, &a, &in, why), 0);
    ck_assert_int_eq(mds_ns_extend(ns, &writer, f, 200, true, t, NULL, &in, why), -EACCES);
}
END_TEST

/* Who may link what (perm.h, as fs.protected_hardlinks): the file is
 * checked, not only the directory the new name goes into. */
START_TEST(test_link_permissions)
{
    mds_inode in;
    mds_caller owner = { .uid = 1000, .gid = 100 }, other = { .uid = 2000, .gid = 2000 };
    mds_new nw = mk(ROOT, "tmp", 01777);
    ck_assert_int_eq(mds_ns_mkdir(ns, &nw, &in, why), 0);
    uint64_t tmp = in.ino;
    uint64_t f = new_file(ROOT, "f"); /* 0644, owner 1000 */
    ck_assert_int_eq(mds_ns_link(ns, &other, f, tmp, "stolen", &in, why), -EPERM);
    ck_assert_ptr_nonnull(strstr(why, "hard-link"));
    ck_assert_uint_eq(ino_of(tmp, "stolen"), 0);
    ck_assert_uint_eq(attr_of(f).nlink, 1);
    ck_assert_int_eq(mds_ns_link(ns, &owner, f, tmp, "mine", &in, why), 0);
    ck_assert_uint_eq(in.nlink, 2);
}
END_TEST

typedef struct rd_col {
    unsigned n;
    char names[4096][32];
    uint64_t inos[4096];
    uint64_t last_cookie;
} rd_col;

static int rd_emit(void *arg, const char *name, size_t len, uint64_t ino, uint32_t mode, uint64_t cookie)
{
    rd_col *c = arg;
    (void)mode;
    ck_assert_uint_lt(c->n, 4096);
    ck_assert_uint_lt(len, 32);
    ck_assert_uint_gt(cookie, c->last_cookie);
    memcpy(c->names[c->n], name, len);
    c->names[c->n][len] = '\0';
    c->inos[c->n] = ino;
    c->n++;
    c->last_cookie = cookie;
    return 0;
}

/* Reads the whole directory in pages of `page`; returns the entry count. */
static unsigned read_all(uint64_t dir, unsigned page, rd_col *c)
{
    bool eof = false;
    unsigned pages = 0;
    memset(c, 0, sizeof(*c));
    while (!eof) {
        unsigned before = c->n;
        ck_assert_int_eq(mds_ns_readdir(ns, NULL, dir, c->last_cookie, page, rd_emit, c, &eof, NULL, why), 0);
        ck_assert_uint_le(c->n - before, page > MDS_READDIR_MAX ? MDS_READDIR_MAX : page);
        ck_assert(eof || c->n > before);
        pages++;
        ck_assert_uint_lt(pages, 10000);
    }
    return c->n;
}

/* A directory removed (and made again under its name) is ESTALE to every
 * request naming the old one as a parent or listing it: the client holds a
 * stale handle and must walk the path again. A missing name in a live
 * directory stays ENOENT. */
START_TEST(test_gone_parent)
{
    uint64_t old = new_dir(ROOT, "d");
    uint64_t f = new_file(ROOT, "f");
    ck_assert_int_eq(mds_ns_rmdir(ns, NULL, ROOT, "d", why), 0);
    uint64_t now = new_dir(ROOT, "d");
    new_file(now, "x");
    mds_inode in;
    mds_removed rm;
    ck_assert_int_eq(mds_ns_lookup(ns, NULL, now, "nothing", &in, why), -ENOENT);
    ck_assert_int_eq(mds_ns_lookup(ns, NULL, old, "x", &in, why), -ESTALE);
    ck_assert_msg(strstr(why, "gone") != NULL, "%s", why);
    mds_new nw = mk(old, "x", 0644);
    ck_assert_int_eq(mds_ns_create(ns, &nw, O_EXCL, &in, why), -ESTALE);
    ck_assert_int_eq(mds_ns_mkdir(ns, &nw, &in, why), -ESTALE);
    ck_assert_int_eq(mds_ns_mknod(ns, &nw, &in, why), -ESTALE);
    nw.target = "t";
    ck_assert_int_eq(mds_ns_symlink(ns, &nw, &in, why), -ESTALE);
    ck_assert_int_eq(mds_ns_unlink(ns, NULL, old, "x", &rm, why), -ESTALE);
    ck_assert_int_eq(mds_ns_rmdir(ns, NULL, old, "x", why), -ESTALE);
    ck_assert_int_eq(mds_ns_rename(ns, NULL, old, "x", ROOT, "y", 0, &rm, NULL, why), -ESTALE);
    ck_assert_int_eq(mds_ns_rename(ns, NULL, ROOT, "f", old, "y", 0, &rm, NULL, why), -ESTALE);
    ck_assert_int_eq(mds_ns_link(ns, NULL, f, old, "h", &in, why), -ESTALE);
    rd_col c;
    memset(&c, 0, sizeof c);
    bool eof = false;
    ck_assert_int_eq(mds_ns_readdir(ns, NULL, old, 0, 10, rd_emit, &c, &eof, NULL, why), -ESTALE);
    /* nothing happened: the new directory holds x alone, f is where it was */
    ck_assert_uint_eq(ino_of(ROOT, "f"), f);
    ck_assert_int_eq(mds_ns_lookup(ns, NULL, now, "x", &in, why), 0);
    ck_assert_uint_eq(attr_of(f).nlink, 1);
}
END_TEST

START_TEST(test_readdir_paging)
{
    enum { N = 3000 };
    char name[32];
    static rd_col c;
    uint64_t d = new_dir(ROOT, "big");
    for (unsigned i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "e%05u", i);
        new_file(d, name);
    }
    ck_assert_uint_eq(read_all(d, 100, &c), N + 2);
    ck_assert_str_eq(c.names[0], ".");
    ck_assert_uint_eq(c.inos[0], d);
    ck_assert_str_eq(c.names[1], "..");
    ck_assert_uint_eq(c.inos[1], ROOT);
    static unsigned char seen[N];
    memset(seen, 0, sizeof(seen));
    for (unsigned i = 2; i < c.n; i++) {
        unsigned idx;
        ck_assert_int_eq(sscanf(c.names[i], "e%05u", &idx), 1);
        ck_assert_uint_lt(idx, N);
        ck_assert(!seen[idx]);
        seen[idx] = 1;
    }
    /* max_entries is bounded */
    ck_assert_uint_eq(read_all(d, 5000, &c), N + 2);

    /* stability: read a page, delete entries before and after the cursor,
     * continue: nothing repeated, every survivor seen once */
    static rd_col part;
    bool eof;
    memset(&part, 0, sizeof(part));
    ck_assert_int_eq(mds_ns_readdir(ns, NULL, d, 0, 500, rd_emit, &part, &eof, NULL, why), 0);
    ck_assert(!eof);
    ck_assert_uint_eq(part.n, 500);
    mds_removed rm;
    for (unsigned i = 0; i < N; i += 3) {
        snprintf(name, sizeof(name), "e%05u", i);
        ck_assert_int_eq(mds_ns_unlink(ns, NULL, d, name, &rm, why), 0);
    }
    eof = false;
    while (!eof)
        ck_assert_int_eq(mds_ns_readdir(ns, NULL, d, part.last_cookie, 300, rd_emit, &part, &eof, NULL, why), 0);
    memset(seen, 0, sizeof(seen));
    for (unsigned i = 2; i < part.n; i++) {
        unsigned idx;
        ck_assert_int_eq(sscanf(part.names[i], "e%05u", &idx), 1);
        ck_assert(!seen[idx]);
        seen[idx] = 1;
        if (i >= 500)
            ck_assert_uint_ne(idx % 3, 0); /* deleted ones after the cursor never show */
    }
    for (unsigned i = 0; i < N; i++)
        if (i % 3)
            ck_assert(seen[i]);
    /* a cookie past the end: empty, eof */
    static rd_col tail;
    memset(&tail, 0, sizeof(tail));
    tail.last_cookie = 0;
    ck_assert_int_eq(mds_ns_readdir(ns, NULL, d, UINT64_MAX, 10, rd_emit, &tail, &eof, NULL, why), 0);
    ck_assert(eof);
    ck_assert_uint_eq(tail.n, 0);
    /* readdir of a file */
    uint64_t f = new_file(ROOT, "plain");
    ck_assert_int_eq(mds_ns_readdir(ns, NULL, f, 0, 10, rd_emit, &tail, &eof, NULL, why), -ENOTDIR);
}
END_TEST

/* READDIR with_attrs (statahead): each entry with its inode as it is, for
 * a caller that may search the directory; read alone lists the names and
 * reaches no inode (POSIX). */
typedef struct rd_attrs {
    unsigned n, with;
    uint64_t inos[8];
    uint64_t sizes[8];
    bool xattrs[8];
} rd_attrs;

static int rd_emit_attrs(void *arg, const char *name, size_t len, uint64_t ino, uint32_t mode,
                         uint64_t cookie, const mds_inode *in, bool xattrs)
{
    rd_attrs *c = arg;
    (void)name;
    (void)len;
    (void)mode;
    (void)cookie;
    ck_assert_uint_lt(c->n, 8);
    if (in) {
        ck_assert_uint_eq(in->ino, ino);
        c->with++;
        c->sizes[c->n] = in->size;
    } else {
        ck_assert(!xattrs);
    }
    c->xattrs[c->n] = xattrs;
    c->inos[c->n++] = ino;
    return 0;
}

START_TEST(test_readdir_attrs)
{
    mds_inode in;
    mds_caller owner = { .uid = 1000, .gid = 100 }, other = { .uid = 2000, .gid = 2000 };
    uint64_t d = new_dir(ROOT, "rda");
    uint64_t f = new_file(d, "f");
    uint64_t g = new_file(d, "g");
    ck_assert_int_eq(mds_ns_extend(ns, &owner, f, 4321, false, 0, NULL, &in, why), 0);
    /* g has a stored xattr, f only its layout (the inode's own) */
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, g, "security.x", "v", 1, 0, why), 0);
    rd_attrs c;
    bool eof;
    memset(&c, 0, sizeof(c));
    ck_assert_int_eq(mds_ns_readdir_attrs(ns, &owner, d, 0, 10, rd_emit_attrs, &c, &eof, NULL, why), 0);
    ck_assert(eof);
    ck_assert_uint_eq(c.n, 4);       /* ".", "..", f, g */
    ck_assert_uint_eq(c.with, 4);
    ck_assert_uint_eq(c.inos[2], f);
    ck_assert_uint_eq(c.sizes[2], 4321);
    ck_assert(!c.xattrs[2]);
    ck_assert_uint_eq(c.inos[3], g);
    ck_assert(c.xattrs[3]);
    ck_assert_int_eq(mds_ns_removexattr(ns, NULL, g, "security.x", why), 0);
    memset(&c, 0, sizeof(c));
    ck_assert_int_eq(mds_ns_readdir_attrs(ns, &owner, d, 0, 10, rd_emit_attrs, &c, &eof, NULL, why), 0);
    ck_assert(!c.xattrs[3]);
    /* read but no search: the names alone */
    mds_setattr_in a = { .mode = 0744 };
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, d, DEPFS_SET_MODE, &a, &in, why), 0);
    memset(&c, 0, sizeof(c));
    ck_assert_int_eq(mds_ns_readdir_attrs(ns, &other, d, 0, 10, rd_emit_attrs, &c, &eof, NULL, why), 0);
    ck_assert_uint_eq(c.n, 4);
    ck_assert_uint_eq(c.with, 0);
    /* neither: refused as a plain readdir is */
    a.mode = 0700;
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, d, DEPFS_SET_MODE, &a, &in, why), 0);
    memset(&c, 0, sizeof(c));
    ck_assert_int_eq(mds_ns_readdir_attrs(ns, &other, d, 0, 10, rd_emit_attrs, &c, &eof, NULL, why),
                     -EACCES);
    ck_assert_uint_eq(c.n, 0);
}
END_TEST

START_TEST(test_symlink_mknod)
{
    mds_inode in;
    char *t = NULL;
    mds_new nw = mk(ROOT, "ln", 0);
    nw.target = "../target/path";
    ck_assert_int_eq(mds_ns_symlink(ns, &nw, &in, why), 0);
    ck_assert(S_ISLNK(in.mode));
    ck_assert_uint_eq(in.size, strlen(nw.target));
    ck_assert_int_eq(mds_ns_readlink(ns, in.ino, &t, why), 0);
    ck_assert_str_eq(t, "../target/path");
    free(t);
    nw.name = "empty";
    nw.target = "";
    ck_assert_int_eq(mds_ns_symlink(ns, &nw, &in, why), -ENOENT);
    uint64_t f = new_file(ROOT, "f");
    ck_assert_int_eq(mds_ns_readlink(ns, f, &t, why), -EINVAL);

    nw = mk(ROOT, "fifo", S_IFIFO | 0600);
    ck_assert_int_eq(mds_ns_mknod(ns, &nw, &in, why), 0);
    ck_assert(S_ISFIFO(in.mode));
    ck_assert(!in.has_layout);
    nw = mk(ROOT, "chr", S_IFCHR | 0600);
    nw.rdev = 0x0501;
    ck_assert_int_eq(mds_ns_mknod(ns, &nw, &in, why), 0);
    ck_assert(S_ISCHR(in.mode));
    ck_assert_uint_eq(attr_of(in.ino).rdev, 0x0501);
    nw = mk(ROOT, "reg", S_IFREG | 0600);
    ck_assert_int_eq(mds_ns_mknod(ns, &nw, &in, why), 0);
    ck_assert(S_ISREG(in.mode));
    ck_assert(in.has_layout);
    nw = mk(ROOT, "dir", S_IFDIR | 0600);
    ck_assert_int_eq(mds_ns_mknod(ns, &nw, &in, why), -EPERM);
}
END_TEST

START_TEST(test_setattr_extend)
{
    mds_inode in;
    uint64_t f = new_file(ROOT, "f");
    uint64_t d = new_dir(ROOT, "d");
    mds_setattr_in a = { .mode = 04711, .uid = 7, .gid = 8, .atime_ns = 1000, .mtime_ns = 2000 };
    int64_t ctime_before = attr_of(f).ctime_ns;
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, f, DEPFS_SET_MODE | DEPFS_SET_UID | DEPFS_SET_GID | DEPFS_SET_ATIME |
                                               DEPFS_SET_MTIME, &a, &in, why), 0);
    ck_assert_uint_eq(in.mode, S_IFREG | 04711);
    ck_assert_uint_eq(in.uid, 7);
    ck_assert_uint_eq(in.gid, 8);
    ck_assert_int_eq(in.atime_ns, 1000);
    ck_assert_int_eq(in.mtime_ns, 2000);
    ck_assert_int_ge(in.ctime_ns, ctime_before);
    in = attr_of(f);
    ck_assert_int_eq(in.mtime_ns, 2000);
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, f, DEPFS_SET_MTIME_NOW, &a, &in, why), 0);
    ck_assert_int_gt(in.mtime_ns, 2000);
    /* ctime is the MDS's: SET_CTIME (FUSE_SET_ATTR_CTIME) sets it to now,
     * whatever time the request carries, as every change does */
    int64_t before_ns = clock_real_ns();
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, f, DEPFS_SET_CTIME, &a, &in, why), 0);
    ck_assert_int_ge(in.ctime_ns, before_ns);
    ck_assert_int_le(in.ctime_ns, clock_real_ns());
    ck_assert_int_ge(attr_of(f).ctime_ns, before_ns);
    /* sizes and the logical-bytes counter */
    uint64_t files, bytes;
    a.size = 1000;
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, f, DEPFS_SET_SIZE, &a, &in, why), 0);
    ck_assert_uint_eq(in.size, 1000);
    mds_ns_statfs(ns, &files, &bytes);
    ck_assert_uint_eq(bytes, 1000);
    ck_assert_int_eq(mds_ns_extend(ns, NULL, f, 500, true, 77, NULL, &in, why), 0);
    ck_assert_uint_eq(in.size, 1000);
    ck_assert_int_eq(in.mtime_ns, 77);
    /* a writer's report changes ctime to the MDS's now, not to its mtime */
    before_ns = clock_real_ns();
    ck_assert_int_eq(mds_ns_extend(ns, NULL, f, 500, true, INT64_MAX, NULL, &in, why), 0);
    ck_assert_int_eq(in.mtime_ns, INT64_MAX);
    ck_assert_int_ge(in.ctime_ns, before_ns);
    ck_assert_int_le(in.ctime_ns, clock_real_ns());
    ck_assert_int_eq(mds_ns_extend(ns, NULL, f, 4096, false, 0, NULL, &in, why), 0);
    ck_assert_uint_eq(in.size, 4096);
    uint64_t g = new_file(ROOT, "g");
    ck_assert_int_eq(mds_ns_extend(ns, NULL, g, 100, false, 0, NULL, &in, why), 0);
    mds_ns_statfs(ns, &files, &bytes);
    ck_assert_uint_eq(bytes, 4196);
    ck_assert_uint_eq(files, 4);
    a.size = 10;
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, f, DEPFS_SET_SIZE, &a, &in, why), 0);
    mds_ns_statfs(ns, &files, &bytes);
    ck_assert_uint_eq(bytes, 110);
    mds_removed rm;
    ck_assert_int_eq(mds_ns_unlink(ns, NULL, ROOT, "g", &rm, why), 0);
    mds_ns_statfs(ns, &files, &bytes);
    ck_assert_uint_eq(bytes, 110); /* queued: counted until purged */
    ck_assert_uint_eq(files, 4);
    purge(g);
    mds_ns_statfs(ns, &files, &bytes);
    ck_assert_uint_eq(bytes, 10);
    ck_assert_uint_eq(files, 3);
    /* errors */
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, d, DEPFS_SET_SIZE, &a, &in, why), -EISDIR);
    ck_assert_int_eq(mds_ns_extend(ns, NULL, d, 10, false, 0, NULL, &in, why), -EISDIR);
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, 31337, DEPFS_SET_MODE, &a, &in, why), -ENOENT);
}
END_TEST

/* Sizes from any client: the issue-13 sequence (two files truncated to
 * 2^63-1, one to 2, one back to 0) wrapped the running total, the MDS
 * asserted, saved the wrapped total and asserted again at every later
 * remove. Now a size past what the layout stores is EFBIG, and the total
 * saturates and clamps: a store whose total wrapped before stays usable
 * (reopened, files removed, no abort). */
START_TEST(test_sizes_bounded)
{
    mds_inode in;
    mds_removed rm;
    uint64_t files, bytes;
    uint64_t a = new_file(ROOT, "a"), b = new_file(ROOT, "b"), c = new_file(ROOT, "c");
    mds_inode ai = attr_of(a);
    uint64_t max = layout_max_file_bytes(&ai.lay);
    mds_setattr_in s = { .size = INT64_MAX };
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, a, DEPFS_SET_SIZE, &s, &in, why), -EFBIG);
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, b, DEPFS_SET_SIZE, &s, &in, why), -EFBIG);
    ck_assert_int_eq(mds_ns_extend(ns, NULL, b, UINT64_MAX, false, 0, NULL, &in, why), -EFBIG);
    s.size = 2;
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, c, DEPFS_SET_SIZE, &s, &in, why), 0);
    s.size = 0;
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, a, DEPFS_SET_SIZE, &s, &in, why), 0);
    s.size = max;
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, a, DEPFS_SET_SIZE, &s, &in, why), 0);
    ck_assert_int_eq(mds_ns_extend(ns, NULL, b, max + 1, false, 0, NULL, &in, why), -EFBIG);
    ck_assert_int_eq(mds_ns_extend(ns, NULL, b, max, false, 0, NULL, &in, why), 0);
    mds_ns_statfs(ns, &files, &bytes);
    ck_assert_uint_eq(bytes, 2 * max + 2);
    /* a total that wrapped in an older store: near 2^64 it saturates, below
     * a file's size it clamps at 0, and nothing aborts */
    store_close();
    {
        char err[256];
        kvstore *raw;
        uint8_t key[MDS_KEY_MAX], val[8];
        ck_assert_int_eq(kv_open(store.dir, true, &raw, err, sizeof err), 0);
        mds_put_u64le(val, UINT64_MAX - 1);
        ck_assert_int_eq(kv_put(raw, key, mds_key_counter(key, MDS_COUNTER_LOGICAL_BYTES), val,
                                sizeof val), 0);
        kv_close(raw);
    }
    store_open();
    s.size = 3;
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, c, DEPFS_SET_SIZE, &s, &in, why), 0);
    mds_ns_statfs(ns, &files, &bytes);
    ck_assert_uint_eq(bytes, UINT64_MAX);
    ck_assert_int_eq(mds_ns_unlink(ns, NULL, ROOT, "a", &rm, why), 0);
    ck_assert_int_eq(mds_ns_unlink(ns, NULL, ROOT, "b", &rm, why), 0);
    ck_assert_int_eq(mds_ns_unlink(ns, NULL, ROOT, "c", &rm, why), 0);
    mds_ns_statfs(ns, &files, &bytes);
    ck_assert_uint_le(bytes, UINT64_MAX);
    store_close();
    store_open(); /* and it opens again */
    ck_assert_uint_eq(ino_of(ROOT, "b"), 0);
}
END_TEST

START_TEST(test_setgid_dir)
{
    mds_setattr_in a = { .mode = 02775, .gid = 555 };
    mds_inode in;
    uint64_t d = new_dir(ROOT, "sg");
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, d, DEPFS_SET_MODE | DEPFS_SET_GID, &a, &in, why), 0);
    uint64_t f = new_file(d, "f");
    ck_assert_uint_eq(attr_of(f).gid, 555);
    ck_assert_uint_eq(attr_of(f).mode & S_ISGID, 0);
    uint64_t sub = new_dir(d, "sub");
    ck_assert_uint_eq(attr_of(sub).gid, 555);
    ck_assert_uint_ne(attr_of(sub).mode & S_ISGID, 0);
}
END_TEST

START_TEST(test_xattrs)
{
    uint64_t f = new_file(ROOT, "f");
    int rc;
    mds_inode fi_x;
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, f, "user.a", "one", 3, 0, why), 0);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, f, "user.b", "", 0, 0, why), 0);
    char *s = xattr_str(f, "user.a", &rc);
    ck_assert_str_eq(s, "one");
    free(s);
    s = xattr_str(f, "user.b", &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(s, "");
    free(s);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, f, "user.a", "two", 3, MDS_XATTR_CREATE, why), -EEXIST);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, f, "user.c", "x", 1, MDS_XATTR_REPLACE, why), -ENODATA);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, f, "user.a", "two", 3, MDS_XATTR_REPLACE, why), 0);
    s = xattr_str(f, "user.a", &rc);
    ck_assert_str_eq(s, "two");
    free(s);
    ck_assert_ptr_null(xattr_str(f, "user.none", &rc));
    ck_assert_int_eq(rc, -ENODATA);

    char **names;
    size_t count;
    ck_assert_int_eq(mds_ns_listxattr(ns, NULL, f, &names, &count, why), 0);
    ck_assert_uint_eq(count, 2); /* a + b: a file's layout is not listed (copy tools) */
    ck_assert_str_eq(names[0], "user.a");
    ck_assert_str_eq(names[1], "user.b");
    mds_ns_free_names(names, count);
    ck_assert_int_eq(mds_ns_extend(ns, NULL, f, 100, false, 0, NULL, &fi_x, why), 0);
    char spec[64];
    s = xattr_str(f, MDS_LAYOUT_XATTR, &rc); /* by name it answers */
    ck_assert_int_eq(rc, 0);
    snprintf(spec, sizeof spec, "%s", s);
    free(s);
    /* a non-empty file takes the layout it has (cp --preserve=xattr), no other */
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, f, MDS_LAYOUT_XATTR, spec, strlen(spec), 0, why), 0);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, f, MDS_LAYOUT_XATTR, "2@1", 3, 0, why), -EBUSY);

    ck_assert_int_eq(mds_ns_removexattr(ns, NULL, f, "user.a", why), 0);
    ck_assert_int_eq(mds_ns_removexattr(ns, NULL, f, "user.a", why), -ENODATA);
    /* limits and namespaces */
    static char big[WIRE_XATTR_VALUE_MAX + 1];
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, f, "user.big", big, sizeof(big), 0, why), -E2BIG);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, f, "user.max", big, WIRE_XATTR_VALUE_MAX, 0, why), 0);
    char longname[300] = "user.";
    memset(longname + 5, 'n', 251);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, f, longname, "v", 1, 0, why), -ERANGE);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, f, "", "v", 1, 0, why), -ERANGE);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, f, "foo.bar", "v", 1, 0, why), -EOPNOTSUPP);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, f, "system.posix_acl_access", "v", 1, 0, why), -EOPNOTSUPP);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, f, "trusted.t", "v", 1, 0, why), 0);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, f, "user.a", "v", 1, 3, why), -EINVAL);
    mds_new nw = mk(ROOT, "ln", 0);
    mds_inode ln;
    nw.target = "f";
    ck_assert_int_eq(mds_ns_symlink(ns, &nw, &ln, why), 0);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, ln.ino, "user.a", "v", 1, 0, why), -EPERM);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, ln.ino, "trusted.a", "v", 1, 0, why), 0);
    /* the purge of an unlinked file removes the xattrs with the inode */
    mds_removed rm;
    ck_assert_int_eq(mds_ns_unlink(ns, NULL, ROOT, "f", &rm, why), 0);
    purge(f);
    ck_assert_int_eq(mds_ns_getxattr(ns, NULL, f, "user.b", (void **)&s, &count, why), -ENOENT);
}
END_TEST

START_TEST(test_layout_inheritance)
{
    int rc;
    mds_inode in;
    uint64_t d = new_dir(ROOT, "d");
    ck_assert_ptr_null(xattr_str(d, MDS_LAYOUT_XATTR, &rc));
    ck_assert_int_eq(rc, -ENODATA);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, d, MDS_LAYOUT_XATTR, "3@2@4k", 6, 0, why), 0);
    assert_layout_str(d, "3@2@4096");
    uint64_t f = new_file(d, "f");
    in = attr_of(f);
    ck_assert_uint_eq(in.lay.n, 3);
    ck_assert_uint_eq(in.lay.k, 2);
    ck_assert_uint_eq(in.lay.su, 4096);
    assert_layout_str(f, "3@2@4096");
    uint64_t sub = new_dir(d, "sub");
    assert_layout_str(sub, "3@2@4096");
    in = attr_of(new_file(sub, "g"));
    ck_assert_uint_eq(in.lay.n, 3);
    ck_assert_uint_eq(in.lay.k, 2);
    /* n@k only: su from the default */
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, sub, MDS_LAYOUT_XATTR, "5@3\n", 4, 0, why), 0);
    assert_layout_str(sub, "5@3");
    in = attr_of(new_file(sub, "h"));
    ck_assert_uint_eq(in.lay.n, 5);
    ck_assert_uint_eq(in.lay.k, 3);
    ck_assert_uint_eq(in.lay.su, DEF_SU);
    /* the request's want_* wins */
    mds_new nw = mk(d, "w", 0644);
    nw.want_n = 6;
    nw.want_k = 4;
    ck_assert_int_eq(mds_ns_create(ns, &nw, O_EXCL, &in, why), 0);
    ck_assert_uint_eq(in.lay.n, 6);
    ck_assert_uint_eq(in.lay.k, 4);
    ck_assert_uint_eq(in.lay.su, 4096);
    nw.name = "w2";
    nw.want_n = 7;
    ck_assert_int_eq(mds_ns_create(ns, &nw, O_EXCL, &in, why), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "servers"));
    /* bad values */
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, d, MDS_LAYOUT_XATTR, "9@2", 3, 0, why), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "servers"));
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, d, MDS_LAYOUT_XATTR, "2@3", 3, 0, why), -EINVAL);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, d, MDS_LAYOUT_XATTR, "junk", 4, 0, why), -EINVAL);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, d, MDS_LAYOUT_XATTR, "3@2", 3, MDS_XATTR_CREATE, why), -EEXIST);
    assert_layout_str(d, "3@2@4096");
    /* listxattr shows the policy; removing it falls back to the default */
    char **names;
    size_t count;
    ck_assert_int_eq(mds_ns_listxattr(ns, NULL, d, &names, &count, why), 0);
    ck_assert_uint_eq(count, 1);
    mds_ns_free_names(names, count);
    ck_assert_int_eq(mds_ns_removexattr(ns, NULL, d, MDS_LAYOUT_XATTR, why), 0);
    ck_assert_int_eq(mds_ns_listxattr(ns, NULL, d, &names, &count, why), 0);
    ck_assert_uint_eq(count, 0);
    mds_ns_free_names(names, count);
    in = attr_of(new_file(d, "plain"));
    ck_assert_uint_eq(in.lay.n, DEF_N);
    ck_assert_uint_eq(in.lay.k, DEF_K);
}
END_TEST

START_TEST(test_layout_on_file)
{
    mds_inode in;
    uint64_t f = new_file(ROOT, "f");
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, f, MDS_LAYOUT_XATTR, "2@1", 3, 0, why), 0);
    in = attr_of(f);
    ck_assert_uint_eq(in.lay.n, 2);
    ck_assert_uint_eq(in.lay.k, 1);
    ck_assert_uint_eq(in.lay.su, DEF_SU);
    ck_assert_uint_eq(in.lay.version, 2);
    ck_assert_uint_ne(in.lay.servers[0], in.lay.servers[1]);
    assert_layout_str(f, "2@1@65536");
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, f, MDS_LAYOUT_XATTR, "2@1", 3, MDS_XATTR_CREATE, why), -EEXIST);
    ck_assert_int_eq(mds_ns_removexattr(ns, NULL, f, MDS_LAYOUT_XATTR, why), -EPERM);
    ck_assert_int_eq(mds_ns_extend(ns, NULL, f, 1, false, 0, NULL, &in, why), 0);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, f, MDS_LAYOUT_XATTR, "4@2", 3, 0, why), -EBUSY);
    assert_layout_str(f, "2@1@65536");
    mds_new nw = mk(ROOT, "fifo", S_IFIFO | 0600);
    ck_assert_int_eq(mds_ns_mknod(ns, &nw, &in, why), 0);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, in.ino, MDS_LAYOUT_XATTR, "4@2", 3, 0, why), -EPERM);
}
END_TEST

/* The names epoch (namespace.h): above every earlier start's, moved on by
 * a directory's rename alone, recorded in the moved directory with its
 * mover; names given below a directory another client moved since are
 * stale (mds_ns_names_current), the mover's own are not, nor are names
 * below a directory that did not move. */
START_TEST(test_names_epoch)
{
    uint64_t e0 = mds_ns_names_epoch(ns);
    ck_assert_uint_ge(e0 >> MDS_NAMES_EPOCH_BOOT_SHIFT, 1);
    uint64_t top = new_dir(ROOT, "top");
    uint64_t ckpt = new_dir(top, "ckpt");
    uint64_t sub = new_dir(ckpt, "sub");
    uint64_t other = new_dir(ROOT, "other");
    new_file(ckpt, "f");
    mds_removed rm;
    mds_caller mover = {.uid = 0, .client_id = 7};
    ck_assert_int_eq(mds_ns_rename(ns, &mover, ckpt, "f", ckpt, "g", 0, &rm, NULL, why), 0);
    ck_assert_uint_eq(mds_ns_names_epoch(ns), e0); /* a file moved: no directory did */
    ck_assert_int_eq(mds_ns_names_current(ns, sub, e0, 9, why), 0);

    ck_assert_int_eq(mds_ns_rename(ns, &mover, top, "ckpt", top, "ckpt.old", 0, &rm, NULL, why), 0);
    uint64_t e1 = mds_ns_names_epoch(ns);
    ck_assert_uint_eq(e1, e0 + 1);
    mds_inode in = attr_of(ckpt);
    ck_assert_uint_eq(in.moved_epoch, e1);
    ck_assert_uint_eq(in.moved_by, 7);
    /* another client's names from before: below the moved one, stale */
    ck_assert_int_eq(mds_ns_names_current(ns, ckpt, e0, 9, why), -ESTALE);
    ck_assert_msg(strstr(why, "moved") != NULL, "%s", why);
    ck_assert_int_eq(mds_ns_names_current(ns, sub, e0, 9, why), -ESTALE);
    /* given since, the mover's, above it, beside it, gone: current */
    ck_assert_int_eq(mds_ns_names_current(ns, sub, e1, 9, why), 0);
    ck_assert_int_eq(mds_ns_names_current(ns, sub, e0, 7, why), 0);
    ck_assert_int_eq(mds_ns_names_current(ns, top, e0, 9, why), 0);
    ck_assert_int_eq(mds_ns_names_current(ns, other, e0, 9, why), 0);
    ck_assert_int_eq(mds_ns_names_current(ns, 424242, e0, 9, why), 0);
    /* an ancestor moved by another client: stale for the mover of ckpt too */
    mds_caller third = {.uid = 0, .client_id = 8};
    ck_assert_int_eq(mds_ns_rename(ns, &third, ROOT, "top", ROOT, "top.old", 0, &rm, NULL, why), 0);
    ck_assert_uint_eq(mds_ns_names_epoch(ns), e1 + 1);
    ck_assert_int_eq(mds_ns_names_current(ns, sub, e1, 7, why), -ESTALE);
    ck_assert_int_eq(mds_ns_names_current(ns, sub, e1 + 1, 7, why), 0);
    /* an exchange moves both directories */
    ck_assert_int_eq(mds_ns_rename(ns, &third, ROOT, "other", ROOT, "top.old", MDS_RENAME_EXCHANGE,
                                   &rm, NULL, why), 0);
    ck_assert_uint_eq(attr_of(other).moved_epoch, e1 + 2);
    ck_assert_uint_eq(attr_of(top).moved_epoch, e1 + 2);
    /* the moves survive a restart, and the epoch starts above them */
    store_close();
    store_open();
    ck_assert_uint_eq(attr_of(ckpt).moved_epoch, e1);
    ck_assert_uint_gt(mds_ns_names_epoch(ns), e1 + 2);
    ck_assert_int_eq(mds_ns_names_current(ns, sub, e0, 9, why), -ESTALE);
    ck_assert_int_eq(mds_ns_names_current(ns, sub, mds_ns_names_epoch(ns), 9, why), 0);
}
END_TEST

START_TEST(test_persistence)
{
    uint64_t d = new_dir(ROOT, "d");
    uint64_t f = new_file(d, "f");
    mds_inode fi;
    ck_assert_int_eq(mds_ns_extend(ns, NULL, f, 12345, false, 0, NULL, &fi, why), 0);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, f, "user.k", "v", 1, 0, why), 0);
    ck_assert_int_eq(mds_ns_setxattr(ns, NULL, d, MDS_LAYOUT_XATTR, "3@1", 3, 0, why), 0);
    uint64_t gone = new_file(ROOT, "gone");
    mds_removed rm;
    ck_assert_int_eq(mds_ns_unlink(ns, NULL, ROOT, "gone", &rm, why), 0);
    uint64_t c1, c2;
    ck_assert_int_eq(mds_ns_register(ns, &c1, why), 0);
    ck_assert_int_eq(mds_ns_register(ns, &c2, why), 0);
    ck_assert_uint_gt(c2, c1);
    uint64_t files, bytes;
    mds_ns_statfs(ns, &files, &bytes);
    fi = attr_of(f);

    store_close();
    store_open();

    ck_assert_uint_eq(ino_of(ROOT, "d"), d);
    ck_assert_uint_eq(ino_of(d, "f"), f);
    mds_inode again = attr_of(f);
    ck_assert_int_eq(memcmp(&again, &fi, sizeof(fi)), 0);
    int rc;
    char *s = xattr_str(f, "user.k", &rc);
    ck_assert_str_eq(s, "v");
    free(s);
    assert_layout_str(d, "3@1");
    uint64_t files2, bytes2;
    mds_ns_statfs(ns, &files2, &bytes2);
    ck_assert_uint_eq(files2, files);
    ck_assert_uint_eq(bytes2, bytes);
    ck_assert_uint_eq(bytes2, 12345);
    /* counters never reused */
    uint64_t g = new_file(ROOT, "g");
    ck_assert_uint_gt(g, gone);
    uint64_t c3;
    ck_assert_int_eq(mds_ns_register(ns, &c3, why), 0);
    ck_assert_uint_gt(c3, c2);
    ck_assert_uint_eq(attr_of(ROOT).nlink, 3);
}
END_TEST

START_TEST(test_cluster_states)
{
    depfs_config cfg;
    mds_cluster *cl;
    mds_server srv[4];
    config_defaults(&cfg);
    cfg.n_ioservers = 3;
    for (unsigned i = 0; i < 3; i++) {
        cfg.ioservers[i].id = i + 1;
        snprintf(cfg.ioservers[i].address, sizeof(cfg.ioservers[i].address), "127.0.0.1:%u", 7000 + i);
    }
    uint64_t epoch = 99;
    ck_assert_int_eq(mds_cluster_open(kv, &cfg, &cl), 0);
    ck_assert_uint_eq(mds_cluster_servers(cl, srv, 4, &epoch), 3);
    ck_assert_uint_eq(epoch, 0);
    ck_assert_uint_eq(srv[1].state, DEPFS_SERVER_UP);
    ck_assert_int_eq(mds_cluster_set_state(cl, 2, DEPFS_SERVER_DOWN, &epoch), 0);
    ck_assert_uint_eq(epoch, 1);
    /* the same state again: no new epoch */
    ck_assert_int_eq(mds_cluster_set_state(cl, 2, DEPFS_SERVER_DOWN, &epoch), 0);
    ck_assert_uint_eq(epoch, 1);
    ck_assert_int_eq(mds_cluster_set_state(cl, 9, DEPFS_SERVER_DOWN, NULL), -ENOENT);
    ck_assert_int_eq(mds_cluster_set_state(cl, 2, 7, NULL), -EINVAL);
    ck_assert_uint_eq(mds_cluster_epoch(cl), 1);
    ck_assert_int_eq(mds_cluster_set_state(cl, 3, DEPFS_SERVER_RECONSTRUCTING, &epoch), 0);
    ck_assert_uint_eq(epoch, 2);
    /* progress: in memory, partial updates, zeroed by a state change */
    uint64_t done = 100, total = 1000, degraded = 7;
    ck_assert_int_eq(mds_cluster_set_progress(cl, 3, &done, &total, NULL), 0);
    ck_assert_int_eq(mds_cluster_set_progress(cl, 3, NULL, NULL, &degraded), 0);
    ck_assert_int_eq(mds_cluster_set_progress(cl, 9, &done, NULL, NULL), -ENOENT);
    mds_cluster_servers(cl, srv, 4, NULL);
    ck_assert_uint_eq(srv[2].progress.rebuild_done_bytes, 100);
    ck_assert_uint_eq(srv[2].progress.rebuild_total_bytes, 1000);
    ck_assert_uint_eq(srv[2].progress.degraded_files, 7);
    ck_assert_int_eq(mds_cluster_set_state(cl, 3, DEPFS_SERVER_REBUILDING, &epoch), 0);
    ck_assert_uint_eq(epoch, 3);
    mds_cluster_servers(cl, srv, 4, NULL);
    ck_assert_uint_eq(srv[2].progress.rebuild_done_bytes, 0);
    ck_assert_uint_eq(srv[2].progress.degraded_files, 0);
    mds_cluster_close(cl);
    store_close();
    store_open();
    /* states and the epoch survive a restart; epochs are never reused */
    ck_assert_int_eq(mds_cluster_open(kv, &cfg, &cl), 0);
    ck_assert_uint_eq(mds_cluster_servers(cl, srv, 4, &epoch), 3);
    ck_assert_uint_eq(epoch, 3);
    ck_assert_uint_eq(srv[1].state, DEPFS_SERVER_DOWN);
    ck_assert_uint_eq(srv[2].state, DEPFS_SERVER_REBUILDING);
    ck_assert_str_eq(srv[1].address, "127.0.0.1:7001");
    ck_assert_uint_eq(srv[0].state, DEPFS_SERVER_UP);
    ck_assert_int_eq(mds_cluster_set_state(cl, 2, DEPFS_SERVER_UP, &epoch), 0);
    ck_assert_uint_eq(epoch, 4);
    mds_cluster_close(cl);
}
END_TEST

/* Many threads creating, renaming and unlinking in one directory. */
#define CONC_THREADS 4
#define CONC_FILES 150

typedef struct conc_arg {
    unsigned id;
    uint64_t dir;
    int errors;
} conc_arg;

static void *conc_main(void *p)
{
    conc_arg *a = p;
    char name[32], name2[32], w[MDS_WHY_MAX];
    mds_inode in;
    mds_removed rm;
    for (unsigned i = 0; i < CONC_FILES; i++) {
        snprintf(name, sizeof(name), "t%u_%u", a->id, i);
        snprintf(name2, sizeof(name2), "r%u_%u", a->id, i);
        mds_new nw = mk(a->dir, name, 0644);
        if (mds_ns_create(ns, &nw, O_EXCL, &in, w) < 0)
            a->errors++;
        if (mds_ns_rename(ns, NULL, a->dir, name, a->dir, name2, 0, &rm, NULL, w) < 0)
            a->errors++;
        if (i % 2 && mds_ns_unlink(ns, NULL, a->dir, name2, &rm, w) < 0)
            a->errors++;
    }
    return NULL;
}

START_TEST(test_concurrent)
{
    pthread_t th[CONC_THREADS];
    conc_arg args[CONC_THREADS];
    static rd_col c;
    uint64_t d = new_dir(ROOT, "conc");
    for (unsigned i = 0; i < CONC_THREADS; i++) {
        args[i] = (conc_arg){ .id = i, .dir = d };
        ck_assert_int_eq(pthread_create(&th[i], NULL, conc_main, &args[i]), 0);
    }
    for (unsigned i = 0; i < CONC_THREADS; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(args[i].errors, 0);
    }
    ck_assert_uint_eq(read_all(d, 64, &c), 2 + CONC_THREADS * CONC_FILES / 2);
    for (unsigned i = 2; i < c.n; i++)
        for (unsigned j = i + 1; j < c.n; j++)
            ck_assert_uint_ne(c.inos[i], c.inos[j]);
    uint64_t files, bytes, queued, qbytes;
    mds_ns_statfs(ns, &files, &bytes);
    mds_ns_purge_stats(ns, &queued, &qbytes);
    ck_assert_uint_eq(queued, CONC_THREADS * CONC_FILES / 2); /* the unlinked half */
    ck_assert_uint_eq(files, 2 + CONC_THREADS * CONC_FILES);
}
END_TEST

/* ----------------------------------------------------------- over RPC */

static Depfs__MdsReply *call(rpc_conn *c, Depfs__MdsOp op, const Depfs__MdsRequest *q)
{
    ProtobufCMessage *rep = NULL;
    ck_assert_int_eq(rpc_call_msg(c, (uint16_t)op, &q->base, NULL, 0, NULL, 0, RPC_TIMEOUT_MS,
                                  &depfs__mds_reply__descriptor, &rep, NULL), 0);
    return (Depfs__MdsReply *)rep;
}

START_TEST(test_rpc_handlers)
{
    depfs_config cfg;
    mds_cluster *cl;
    rpc_server *srv;
    rpc_conn *conn;
    char addr[64];
    config_defaults(&cfg);
    cfg.n_ioservers = 2;
    cfg.ioservers[0].id = 10;
    cfg.ioservers[1].id = 11;
    ck_assert_int_eq(mds_cluster_open(kv, &cfg, &cl), 0);
    mds_ctx ctx = { .ns = ns, .cluster = cl };
    rpc_server_opts o = { .transport = "tcp", .address = "127.0.0.1:0", .handler = mds_handle, .ctx = &ctx };
    ck_assert_int_eq(rpc_server_start(&o, &srv), 0);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", rpc_server_port(srv));
    ck_assert_int_eq(rpc_conn_open("tcp", addr, NULL, 1000, NULL, &conn), 0);

    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *r = call(conn, DEPFS__MDS_OP__MDS_REGISTER, &q);
    ck_assert_int_eq(r->err, 0);
    ck_assert(r->has_client_id && r->client_id > 0);
    depfs__mds_reply__free_unpacked(r, NULL);

    q.has_parent = true;
    q.parent = ROOT;
    q.name = "viarpc";
    q.has_mode = true;
    q.mode = 0644;
    q.has_want_n = q.has_want_k = true;
    q.want_n = 2;
    q.want_k = 1;
    r = call(conn, DEPFS__MDS_OP__MDS_CREATE, &q);
    ck_assert_int_eq(r->err, 0);
    ck_assert_ptr_nonnull(r->attr);
    ck_assert_ptr_nonnull(r->layout);
    ck_assert_uint_eq(r->layout->n, 2);
    ck_assert_uint_eq(r->layout->n_servers, 2);
    uint64_t ino = r->attr->ino;
    depfs__mds_reply__free_unpacked(r, NULL);

    r = call(conn, DEPFS__MDS_OP__MDS_LOOKUP, &q);
    ck_assert_int_eq(r->err, 0);
    ck_assert_uint_eq(r->attr->ino, ino);
    depfs__mds_reply__free_unpacked(r, NULL);

    Depfs__MdsRequest rd = DEPFS__MDS_REQUEST__INIT;
    rd.has_ino = true;
    rd.ino = ROOT;
    r = call(conn, DEPFS__MDS_OP__MDS_READDIR, &rd);
    ck_assert_int_eq(r->err, 0);
    ck_assert_uint_eq(r->n_entries, 3);
    ck_assert_str_eq(r->entries[2]->name, "viarpc");
    ck_assert(r->eof);
    depfs__mds_reply__free_unpacked(r, NULL);

    /* missing field, unknown op, garbage header: error replies, server lives */
    Depfs__MdsRequest empty = DEPFS__MDS_REQUEST__INIT;
    r = call(conn, DEPFS__MDS_OP__MDS_LOOKUP, &empty);
    ck_assert_int_eq(r->err, EINVAL);
    ck_assert_ptr_nonnull(r->message);
    depfs__mds_reply__free_unpacked(r, NULL);
    r = call(conn, (Depfs__MdsOp)999, &empty);
    ck_assert_int_eq(r->err, EOPNOTSUPP);
    depfs__mds_reply__free_unpacked(r, NULL);
    rpc_call *callp;
    static const uint8_t junk[] = { 0xff, 0xff, 0xff, 0xff, 0x0f, 0x12 };
    ck_assert_int_eq(rpc_call_start(conn, DEPFS__MDS_OP__MDS_GETATTR, junk, sizeof(junk), NULL, 0,
                                    NULL, 0, &callp), 0);
    ck_assert_int_eq(rpc_call_wait(callp, RPC_TIMEOUT_MS), 0);
    ProtobufCMessage *m = NULL;
    ck_assert_int_eq(rpc_call_unpack(callp, &depfs__mds_reply__descriptor, &m), 0);
    ck_assert_int_eq(((Depfs__MdsReply *)m)->err, EINVAL);
    protobuf_c_message_free_unpacked(m, NULL);
    rpc_call_free(callp);

    r = call(conn, DEPFS__MDS_OP__MDS_CLUSTER, &empty);
    ck_assert_int_eq(r->err, 0);
    ck_assert_uint_eq(r->n_servers, 2);
    ck_assert_ptr_nonnull(r->default_layout);
    ck_assert(r->has_cluster_epoch);
    uint64_t epoch0 = r->cluster_epoch;
    depfs__mds_reply__free_unpacked(r, NULL);

    Depfs__MdsRequest ss = DEPFS__MDS_REQUEST__INIT;
    ss.has_server_id = ss.has_server_state = true;
    ss.server_id = 11;
    ss.server_state = DEPFS_SERVER_REBUILDING;
    r = call(conn, DEPFS__MDS_OP__MDS_SET_SERVER_STATE, &ss);
    ck_assert_int_eq(r->err, 0);
    ck_assert(r->has_cluster_epoch);
    ck_assert_uint_eq(r->cluster_epoch, epoch0 + 1);
    depfs__mds_reply__free_unpacked(r, NULL);
    /* progress only (no server_state): the state and epoch stay */
    Depfs__MdsRequest pr = DEPFS__MDS_REQUEST__INIT;
    pr.has_server_id = true;
    pr.server_id = 11;
    pr.has_rebuild_done_bytes = pr.has_rebuild_total_bytes = pr.has_degraded_files = true;
    pr.rebuild_done_bytes = 5;
    pr.rebuild_total_bytes = 50;
    pr.degraded_files = 3;
    r = call(conn, DEPFS__MDS_OP__MDS_SET_SERVER_STATE, &pr);
    ck_assert_int_eq(r->err, 0);
    ck_assert_uint_eq(r->cluster_epoch, epoch0 + 1);
    depfs__mds_reply__free_unpacked(r, NULL);
    r = call(conn, DEPFS__MDS_OP__MDS_CLUSTER, &empty);
    ck_assert_uint_eq(r->servers[1]->state, DEPFS_SERVER_REBUILDING);
    ck_assert_uint_eq(r->servers[1]->rebuild_done_bytes, 5);
    ck_assert_uint_eq(r->servers[1]->rebuild_total_bytes, 50);
    ck_assert_uint_eq(r->servers[1]->degraded_files, 3);
    ck_assert_uint_eq(r->servers[0]->degraded_files, 0);
    ck_assert_uint_eq(r->cluster_epoch, epoch0 + 1);
    depfs__mds_reply__free_unpacked(r, NULL);
    /* neither state nor progress: refused */
    Depfs__MdsRequest bad = DEPFS__MDS_REQUEST__INIT;
    bad.has_server_id = true;
    bad.server_id = 11;
    r = call(conn, DEPFS__MDS_OP__MDS_SET_SERVER_STATE, &bad);
    ck_assert_int_eq(r->err, EINVAL);
    depfs__mds_reply__free_unpacked(r, NULL);

    rpc_conn_close(conn);
    rpc_server_stop(srv);
    mds_cluster_close(cl);
}
END_TEST

/* ------------------------------------------- may-have-data, group commit */

static mds_removed unlink_of(uint64_t parent, const char *name)
{
    mds_removed rm;
    ck_assert_int_eq(mds_ns_unlink(ns, NULL, parent, name, &rm, why), 0);
    return rm;
}

START_TEST(test_may_have_data)
{
    mds_inode in;
    mds_removed rm;
    mds_setattr_in sa = { .size = 10 };
    /* never written: the layout comes back but no strip file can exist */
    uint64_t f = new_file(ROOT, "empty");
    ck_assert(!attr_of(f).may_have_data);
    rm = unlink_of(ROOT, "empty");
    ck_assert_uint_eq(rm.ino, f);
    ck_assert(rm.has_layout && !rm.may_have_data);
    /* an extend (even to 0) says a client wrote */
    f = new_file(ROOT, "ext");
    ck_assert_int_eq(mds_ns_extend(ns, NULL, f, 0, false, 0, NULL, &in, why), 0);
    ck_assert(in.may_have_data);
    rm = unlink_of(ROOT, "ext");
    ck_assert(rm.has_layout && rm.may_have_data);
    /* truncate up and back down: sticky */
    f = new_file(ROOT, "trunc");
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, f, DEPFS_SET_SIZE, &sa, &in, why), 0);
    sa.size = 0;
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, f, DEPFS_SET_SIZE, &sa, &in, why), 0);
    ck_assert(in.may_have_data);
    ck_assert(unlink_of(ROOT, "trunc").may_have_data);
    /* rename over a target: the target's flag comes back */
    uint64_t a = new_file(ROOT, "a");
    uint64_t b = new_file(ROOT, "b");
    ck_assert_int_eq(mds_ns_extend(ns, NULL, b, 4096, false, 0, NULL, &in, why), 0);
    ck_assert_int_eq(mds_ns_rename(ns, NULL, ROOT, "a", ROOT, "b", 0, &rm, NULL, why), 0);
    ck_assert_uint_eq(rm.ino, b);
    ck_assert(rm.may_have_data);
    new_file(ROOT, "c");
    ck_assert_int_eq(mds_ns_rename(ns, NULL, ROOT, "c", ROOT, "b", 0, &rm, NULL, why), 0);
    ck_assert_uint_eq(rm.ino, a);
    ck_assert(!rm.may_have_data);
    /* survives a restart */
    uint64_t w = new_file(ROOT, "w");
    ck_assert_int_eq(mds_ns_extend(ns, NULL, w, 1, false, 0, NULL, &in, why), 0);
    uint64_t e = new_file(ROOT, "e");
    store_close();
    store_open();
    ck_assert(attr_of(w).may_have_data);
    ck_assert(!attr_of(e).may_have_data);
}
END_TEST

START_TEST(test_alloc_bytes)
{
    /* a new file occupies nothing; a writer's measurement replaces the
     * last one (none: kept); a shrinking truncate cuts it to every unit
     * of the stripes left; it survives a restart */
    mds_inode in;
    mds_setattr_in sa = { 0 };
    uint64_t f = new_file(ROOT, "alloc");
    in = attr_of(f);
    ck_assert(in.alloc_known && in.alloc_bytes == 0);
    uint64_t alloc = 3ull << 20;
    ck_assert_int_eq(mds_ns_extend(ns, NULL, f, 64ull << 20, false, 0, &alloc, &in, why), 0);
    ck_assert_uint_eq(in.alloc_bytes, 3ull << 20);
    ck_assert_int_eq(mds_ns_extend(ns, NULL, f, 64ull << 20, false, 0, NULL, &in, why), 0);
    ck_assert_uint_eq(in.alloc_bytes, 3ull << 20);
    alloc = 2ull << 20;
    ck_assert_int_eq(mds_ns_extend(ns, NULL, f, 1, false, 0, &alloc, &in, why), 0);
    ck_assert_uint_eq(in.alloc_bytes, 2ull << 20); /* lower too: the latest stands */
    sa.size = 100ull << 20; /* growing leaves it */
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, f, DEPFS_SET_SIZE, &sa, &in, why), 0);
    ck_assert_uint_eq(in.alloc_bytes, 2ull << 20);
    uint64_t stripe = layout_stripe_bytes(&in.lay);
    sa.size = stripe + 1; /* two stripes left: at most 2 x n units */
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, f, DEPFS_SET_SIZE, &sa, &in, why), 0);
    uint64_t max = 2ull * in.lay.n * in.lay.su;
    ck_assert_uint_eq(in.alloc_bytes, max < (2ull << 20) ? max : 2ull << 20);
    alloc = 65536; /* a measurement with the cut stands */
    sa.alloc_bytes = &alloc;
    sa.size = 7;
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, f, DEPFS_SET_SIZE, &sa, &in, why), 0);
    ck_assert_uint_eq(in.alloc_bytes, 65536);
    sa.alloc_bytes = NULL;
    sa.size = 0;
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, f, DEPFS_SET_SIZE, &sa, &in, why), 0);
    ck_assert_uint_eq(in.alloc_bytes, 0);
    alloc = 12345;
    ck_assert_int_eq(mds_ns_extend(ns, NULL, f, 10, false, 0, &alloc, &in, why), 0);
    store_close();
    store_open();
    in = attr_of(f);
    ck_assert(in.alloc_known && in.alloc_bytes == 12345);
}
END_TEST

START_TEST(test_inode_record_flags)
{
    uint8_t buf[MDS_INODE_REC_MAX];
    mds_inode in = attr_of(new_file(ROOT, "r")), out;
    ck_assert(in.alloc_known && in.alloc_bytes == 0); /* a new file occupies nothing */
    in.alloc_bytes = 123456789;
    size_t len = mds_inode_encode(&in, buf);
    ck_assert_int_eq(mds_inode_decode(in.ino, buf, len, &out), 0);
    ck_assert(out.alloc_known && out.alloc_bytes == 123456789);
    ck_assert_int_eq(mds_inode_decode(in.ino, buf, len - 8, &out), -EIO); /* cut short */
    /* the records from before issue 14: no allocation after the flags */
    in.alloc_known = false;
    in.alloc_bytes = 0;
    in.may_have_data = true;
    len = mds_inode_encode(&in, buf);
    ck_assert_int_eq(mds_inode_decode(in.ino, buf, len, &out), 0);
    ck_assert(out.may_have_data);
    in.may_have_data = false;
    len = mds_inode_encode(&in, buf);
    ck_assert_int_eq(mds_inode_decode(in.ino, buf, len, &out), 0);
    ck_assert(!out.may_have_data);
    ck_assert_int_eq(memcmp(&out, &in, sizeof(in)), 0);
    /* a record written before the flags word: a file may have data */
    ck_assert_int_eq(mds_inode_decode(in.ino, buf, len - 4, &out), 0);
    ck_assert(out.has_layout && out.may_have_data);
    /* anything else of the wrong length is corrupt */
    ck_assert_int_eq(mds_inode_decode(in.ino, buf, len - 2, &out), -EIO);
    ck_assert_int_eq(mds_inode_decode(in.ino, buf, len - 5, &out), -EIO);
    /* a moved directory's record: its move comes back */
    mds_inode dir = attr_of(new_dir(ROOT, "rd")), dout;
    dir.moved_epoch = 5;
    dir.moved_by = 6;
    size_t dlen = mds_inode_encode(&dir, buf);
    ck_assert_int_eq(mds_inode_decode(dir.ino, buf, dlen, &dout), 0);
    ck_assert_int_eq(memcmp(&dout, &dir, sizeof(dir)), 0);
    ck_assert_int_eq(mds_inode_decode(dir.ino, buf, dlen - 8, &dout), -EIO);
}
END_TEST

#define SYNC_THREADS 4
#define SYNC_COMMITS 100
#define ROTATE_VALUE_BYTES (256u * 1024u)
#define OLD_DIR_AGE_S 60
#define ROTATE_WRITES 48 /* 12 MiB: LevelDB (4 MiB write buffer) rotates its log */

static void *sync_main(void *arg)
{
    long id = (long)arg, bad = 0;
    char key[32];
    for (int i = 0; i < SYNC_COMMITS; i++) {
        kv_batch *b = kv_batch_new();
        int klen = snprintf(key, sizeof(key), "zsync-%ld-%d", id, i);
        kv_batch_put(b, key, (size_t)klen, "v", 1);
        bad += kv_batch_commit_nosync(kv, b) != 0;
        kv_batch_free(b);
        bad += kv_sync(kv) != 0;
    }
    return (void *)bad;
}

/* How many of our descriptors name the newest NNNNNN.log in store.dir. */
static int fds_on_newest_log(void)
{
    char newest[PATH_MAX] = "", link[PATH_MAX], path[PATH_MAX + 32];
    DIR *d = opendir(store.dir);
    struct dirent *e;
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len > 4 && !strcmp(e->d_name + len - 4, ".log") && strcmp(e->d_name, newest) > 0)
            snprintf(newest, sizeof(newest), "%s", e->d_name);
    }
    closedir(d);
    ck_assert(newest[0]);
    int count = 0;
    d = opendir("/proc/self/fd");
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL) {
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(path, link, sizeof(link) - 1);
        if (n <= 0)
            continue;
        link[n] = '\0';
        char want[PATH_MAX * 2];
        snprintf(want, sizeof(want), "%s/%s", store.dir, newest);
        count += !strcmp(link, want);
    }
    closedir(d);
    return count;
}

START_TEST(test_kv_group_commit)
{
    pthread_t th[SYNC_THREADS];
    void *bad;
    ck_assert_int_eq(kv_sync(kv), 0); /* nothing pending */
    for (long i = 0; i < SYNC_THREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, sync_main, (void *)i), 0);
    for (int i = 0; i < SYNC_THREADS; i++) {
        pthread_join(th[i], &bad);
        ck_assert_ptr_null(bad);
    }
    void *v;
    size_t vlen;
    ck_assert_int_eq(kv_get(kv, "zsync-3-99", 10, &v, &vlen), 0);
    free(v);
    /* across log rotations: the barrier follows LevelDB to its new log,
     * also when it trusts an old directory mtime between scans */
    struct timespec old_times[2];
    clock_gettime(CLOCK_REALTIME, &old_times[0]);
    old_times[0].tv_sec -= OLD_DIR_AGE_S;
    old_times[1] = old_times[0];
    ck_assert_int_eq(utimensat(AT_FDCWD, store.dir, old_times, 0), 0);
    kv_batch *first = kv_batch_new();
    kv_batch_put(first, "zfirst", 6, "v", 1);
    ck_assert_int_eq(kv_batch_commit_nosync(kv, first), 0);
    kv_batch_free(first);
    ck_assert_int_eq(kv_sync(kv), 0); /* scans, then trusts the old mtime */
    char *big = malloc(ROTATE_VALUE_BYTES);
    ck_assert_ptr_nonnull(big);
    memset(big, 'x', ROTATE_VALUE_BYTES);
    for (int i = 0; i < ROTATE_WRITES; i++) {
        char key[32];
        int klen = snprintf(key, sizeof(key), "zbig-%d", i);
        kv_batch *b = kv_batch_new();
        kv_batch_put(b, key, (size_t)klen, big, ROTATE_VALUE_BYTES);
        ck_assert_int_eq(kv_batch_commit_nosync(kv, b), 0);
        kv_batch_free(b);
        if (i % 5 == 4)
            ck_assert_int_eq(kv_sync(kv), 0);
    }
    ck_assert_int_eq(kv_sync(kv), 0);
    free(big);
    /* LevelDB's writer and the barrier both hold the newest log open */
    ck_assert_int_eq(fds_on_newest_log(), 2);
    store_close();
    store_open();
    ck_assert_int_eq(kv_get(kv, "zbig-47", 7, &v, &vlen), 0);
    ck_assert_uint_eq(vlen, ROTATE_VALUE_BYTES);
    free(v);
}
END_TEST

#define PIPELINED_CREATES 64

/* The daemon's setup: deferred syncs, replies through the syncer. Many
 * creates in flight on one connection all succeed; unlink replies carry a
 * layout only when strip files may exist. */
START_TEST(test_rpc_deferred_sync)
{
    depfs_config cfg;
    mds_cluster *cl;
    mds_syncer *sy;
    rpc_server *srv;
    rpc_conn *conn;
    rpc_call *calls[PIPELINED_CREATES];
    char addr[64], names[PIPELINED_CREATES][16];
    config_defaults(&cfg);
    cfg.n_ioservers = 2;
    cfg.ioservers[0].id = 10;
    cfg.ioservers[1].id = 11;
    ck_assert_int_eq(mds_cluster_open(kv, &cfg, &cl), 0);
    ck_assert_int_eq(mds_syncer_start(kv, &sy), 0);
    mds_ns_defer_sync(ns);
    mds_ctx ctx = { .ns = ns, .cluster = cl, .syncer = sy, .kv = kv };
    rpc_server_opts o = { .transport = "tcp", .address = "127.0.0.1:0", .handler = mds_handle, .ctx = &ctx };
    ck_assert_int_eq(rpc_server_start(&o, &srv), 0);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", rpc_server_port(srv));
    ck_assert_int_eq(rpc_conn_open("tcp", addr, NULL, 1000, NULL, &conn), 0);

    for (int i = 0; i < PIPELINED_CREATES; i++) {
        Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
        snprintf(names[i], sizeof(names[i]), "p%d", i);
        q.has_parent = q.has_mode = true;
        q.parent = ROOT;
        q.name = names[i];
        q.mode = 0644;
        ck_assert_int_eq(rpc_call_start_msg(conn, DEPFS__MDS_OP__MDS_CREATE, &q.base, NULL, 0,
                                            NULL, 0, &calls[i]), 0);
    }
    for (int i = 0; i < PIPELINED_CREATES; i++) {
        ProtobufCMessage *m = NULL;
        ck_assert_int_eq(rpc_call_wait(calls[i], RPC_TIMEOUT_MS), 0);
        ck_assert_int_eq(rpc_call_unpack(calls[i], &depfs__mds_reply__descriptor, &m), 0);
        ck_assert_int_eq(((Depfs__MdsReply *)m)->err, 0);
        protobuf_c_message_free_unpacked(m, NULL);
        rpc_call_free(calls[i]);
        ck_assert_uint_ne(ino_of(ROOT, names[i]), 0);
    }

    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    q.has_parent = true;
    q.parent = ROOT;
    q.name = names[0];
    Depfs__MdsReply *r = call(conn, DEPFS__MDS_OP__MDS_UNLINK, &q);
    ck_assert_int_eq(r->err, 0);
    ck_assert(r->has_removed_ino);
    /* the strip files go through the purge queue, not the client */
    ck_assert_ptr_null(r->layout);
    ck_assert(!r->has_capability);
    depfs__mds_reply__free_unpacked(r, NULL);
    mds_inode in;
    ck_assert_int_eq(mds_ns_extend(ns, NULL, ino_of(ROOT, names[1]), 10, false, 0, NULL, &in, why), 0);
    q.name = names[1];
    r = call(conn, DEPFS__MDS_OP__MDS_UNLINK, &q);
    ck_assert_int_eq(r->err, 0);
    ck_assert(r->has_removed_ino);
    ck_assert_ptr_null(r->layout);
    depfs__mds_reply__free_unpacked(r, NULL);
    /* both queued, durably (answered through the syncer) */
    uint64_t queued, qbytes;
    mds_ns_purge_stats(ns, &queued, &qbytes);
    ck_assert_uint_eq(queued, 2);
    ck_assert_uint_eq(qbytes, 10);

    rpc_conn_close(conn);
    rpc_server_stop(srv);
    mds_syncer_stop(sy);
    ck_assert_int_eq(kv_sync(kv), 0);
    mds_cluster_close(cl);
}
END_TEST

static Suite *mds_suite(void)
{
    Suite *s = suite_create("mds");
    TCase *tc = tcase_create("namespace");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_root);
    tcase_add_test(tc, test_create_lookup);
    tcase_add_test(tc, test_alloc_bytes);
    tcase_add_test(tc, test_spread);
    tcase_add_test(tc, test_mkdir_rmdir);
    tcase_add_test(tc, test_gone_parent);
    tcase_add_test(tc, test_rename_files);
    tcase_add_test(tc, test_rename_dirs);
    tcase_add_test(tc, test_link_unlink);
    tcase_add_test(tc, test_name_gen_at_open);
    tcase_add_test(tc, test_link_permissions);
    tcase_add_test(tc, test_extend_writer);
    tcase_add_test(tc, test_readdir_paging);
    tcase_add_test(tc, test_readdir_attrs);
    tcase_add_test(tc, test_symlink_mknod);
    tcase_add_test(tc, test_setattr_extend);
    tcase_add_test(tc, test_sizes_bounded);
    tcase_add_test(tc, test_setgid_dir);
    tcase_add_test(tc, test_xattrs);
    tcase_add_test(tc, test_layout_inheritance);
    tcase_add_test(tc, test_layout_on_file);
    tcase_add_test(tc, test_persistence);
    tcase_add_test(tc, test_names_epoch);
    tcase_add_test(tc, test_cluster_states);
    tcase_add_test(tc, test_concurrent);
    tcase_add_test(tc, test_rpc_handlers);
    tcase_add_test(tc, test_may_have_data);
    tcase_add_test(tc, test_inode_record_flags);
    tcase_add_test(tc, test_kv_group_commit);
    tcase_add_test(tc, test_rpc_deferred_sync);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    dlog_init("test_mds", DLOG_WARN);
    SRunner *sr = srunner_create(mds_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
