/* test_client_core.c - libdepfs core against real daemons: a depfs-mds and
 * four depfs-ioservers (from $DEPFS_BIN_DIR, default build/bin) on
 * 127.0.0.1 with a temp config and data dirs. Exercises mount, the
 * namespace API (mkdir, create, lookup, readdir with resumption, rename,
 * link, unlink, symlink/readlink, xattrs), the directory attributes a
 * change brings back (depfs_dir_attr_take), statahead (lookups answered
 * from pages of the directory, and what keeps them true), layout xattr
 * inheritance, labels
 * in depfs_open (good ones and refused ones with their messages), setattr,
 * sizes of files open in this client, cluster status, MDS restart under a
 * mounted client, and many threads on one mount.
 *
 * The daemons (tests/lib/cluster.h) run in the test's parent process for
 * the whole run; each test (forked by Check) mounts its own client. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include "depfs.h"
#include "depfs_admin.h"
#include "core.h"
#include "wire_check.h"
#include "tests/lib/cluster.h"

#define N_IOS 4u
#define TEST_TIMEOUT_S 25
#define THREADS 8u
#define THREAD_FILES 25u
#define DIR_ATTR_AGE_MS 60000u  /* a bound no test step reaches */
#define DIR_ATTR_STALE_US 2000u /* past a bound of 0 ms */
/* the harness's defaults but for these (cluster.h) */
#define CORE_CONF "default_layout = 3@2@4k\nserver_down_expiry_ms = 1000\n"

static td_cluster *cl; /* shared, so a test's MDS restart is seen by the parent */

/* ------------------------------------------------------------ helpers */

static depfs_t *mount_fs(void) { return td_mount(cl); }

static uint64_t mkdir_ok(depfs_t *fs, uint64_t parent, const char *name)
{
    struct stat st;
    int rc = depfs_mkdir(fs, parent, name, 0755, NULL, &st);
    ck_assert_msg(rc == 0, "mkdir %s: %d %s", name, rc, depfs_last_error());
    ck_assert(S_ISDIR(st.st_mode));
    return st.st_ino;
}

static uint64_t create_ok(depfs_t *fs, uint64_t parent, const char *name, const depfs_layout_info *want)
{
    struct stat st;
    depfs_fh_t *fh = NULL;
    int rc = depfs_create(fs, parent, name, 0644, O_RDWR | O_EXCL, NULL, want, &st, &fh);
    ck_assert_msg(rc == 0, "create %s: %d %s", name, rc, depfs_last_error());
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_uint_eq(st.st_size, 0);
    ck_assert_uint_eq(depfs_fh_ino(fh), st.st_ino);
    ck_assert_int_eq(depfs_close(fh), 0);
    return st.st_ino;
}

typedef struct listing {
    unsigned count;
    char names[64][NAME_MAX + 1];
    uint64_t inos[64];
    uint64_t cookies[64];
    unsigned stop_after; /* 0: never */
} listing;

static int collect(void *arg, const char *name, uint64_t ino, mode_t type, uint64_t cookie)
{
    (void)type;
    listing *l = arg;
    if (l->count >= 64)
        return 1;
    snprintf(l->names[l->count], sizeof l->names[0], "%s", name);
    l->inos[l->count] = ino;
    l->cookies[l->count] = cookie;
    l->count++;
    return l->stop_after && l->count >= l->stop_after;
}

static bool listed(const listing *l, const char *name)
{
    for (unsigned i = 0; i < l->count; i++)
        if (strcmp(l->names[i], name) == 0)
            return true;
    return false;
}

/* -------------------------------------------------------------- tests */

START_TEST(test_mount_and_status)
{
    depfs_t *fs = mount_fs();
    ck_assert_uint_ne(depfs_client_id(fs), 0);
    depfs_t *fs2 = mount_fs();
    ck_assert_uint_ne(depfs_client_id(fs), depfs_client_id(fs2));
    depfs_unmount(fs2);

    struct stat st;
    ck_assert_int_eq(depfs_getattr(fs, DEPFS_ROOT_INO, &st), 0);
    ck_assert(S_ISDIR(st.st_mode));
    ck_assert_uint_eq(st.st_ino, DEPFS_ROOT_INO);

    depfs_server_status ss[8];
    int n = depfs_cluster_status(fs, ss, 8);
    ck_assert_int_eq(n, (int)N_IOS);
    for (unsigned i = 0; i < N_IOS; i++) {
        ck_assert_msg(ss[i].reachable, "server %u unreachable", ss[i].id);
        ck_assert_int_eq(ss[i].state, 0);
        ck_assert_uint_gt(ss[i].bytes_free, 0);
    }
    struct statvfs sv;
    ck_assert_int_eq(depfs_statfs(fs, &sv), 0);
    ck_assert_uint_eq(sv.f_namemax, NAME_MAX);
    ck_assert_uint_gt(sv.f_bfree, 0);
    ck_assert_uint_ge(sv.f_blocks, sv.f_bfree);
    depfs_unmount(fs);

    /* A config that names no reachable MDS fails with a message. */
    depfs_options o;
    memset(&o, 0, sizeof o);
    o.config_path = "/nonexistent/depfs.conf";
    depfs_t *bad = NULL;
    ck_assert_int_lt(depfs_mount(&o, &bad), 0);
    ck_assert_ptr_null(bad);
    ck_assert_str_ne(depfs_last_error(), "");
}
END_TEST

START_TEST(test_mkdir_create_lookup_readdir)
{
    depfs_t *fs = mount_fs();
    uint64_t d = mkdir_ok(fs, DEPFS_ROOT_INO, "dir1");
    struct stat st;
    ck_assert_int_eq(depfs_mkdir(fs, DEPFS_ROOT_INO, "dir1", 0755, NULL, &st), -EEXIST);
    ck_assert_int_eq(depfs_lookup(fs, DEPFS_ROOT_INO, "dir1", &st), 0);
    ck_assert_uint_eq(st.st_ino, d);
    ck_assert_int_eq(depfs_lookup(fs, DEPFS_ROOT_INO, "nope", &st), -ENOENT);
    ck_assert_int_eq(depfs_lookup(fs, DEPFS_ROOT_INO, "a/b", &st), -EINVAL);

    char name[32];
    for (unsigned i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "f%u", i);
        create_ok(fs, d, name, NULL);
    }
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_create(fs, d, "f0", 0644, O_RDWR | O_EXCL, NULL, NULL, &st, &fh), -EEXIST);
    ck_assert_ptr_null(fh);
    /* without O_EXCL an existing file is opened */
    ck_assert_int_eq(depfs_create(fs, d, "f0", 0644, O_RDWR, NULL, NULL, &st, &fh), 0);
    ck_assert_int_eq(depfs_close(fh), 0);

    listing all = { 0 };
    ck_assert_int_eq(depfs_readdir(fs, d, 0, collect, &all), 0);
    ck_assert_uint_eq(all.count, 12);
    ck_assert(listed(&all, ".") && listed(&all, ".."));
    for (unsigned i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "f%u", i);
        ck_assert_msg(listed(&all, name), "%s not listed", name);
    }
    /* resume after the 5th entry: the rest, no repeats */
    listing head = { .stop_after = 5 }, tail = { 0 };
    ck_assert_int_eq(depfs_readdir(fs, d, 0, collect, &head), 0);
    ck_assert_uint_eq(head.count, 5);
    ck_assert_int_eq(depfs_readdir(fs, d, head.cookies[4], collect, &tail), 0);
    ck_assert_uint_eq(tail.count, 7);
    for (unsigned i = 0; i < tail.count; i++)
        for (unsigned j = 0; j < head.count; j++)
            ck_assert_str_ne(tail.names[i], head.names[j]);

    ck_assert_int_eq(depfs_rmdir(fs, DEPFS_ROOT_INO, "dir1"), -ENOTEMPTY);
    /* no such directory: a stale handle (depfs.h), not a missing name */
    ck_assert_int_eq(depfs_readdir(fs, 999999, 0, collect, &all), -ESTALE);
    depfs_unmount(fs);
}
END_TEST

/* Drains the purge queue as depfs-recovery would (no recovery daemon
 * here): passes until one lists nothing, bounded. */
#define PURGE_PASSES_MAX 16u
static void purge_all(depfs_t *fs)
{
    uint64_t cursor = 0;
    depfs_purge_report rep;
    for (unsigned i = 0; i < PURGE_PASSES_MAX; i++) {
        ck_assert_int_eq(depfs_purge_pass(fs, WIRE_PURGE_LIST_MAX, &cursor, &rep), 0);
        ck_assert_uint_eq(rep.failed, 0);
        if (rep.listed == 0 && rep.eof)
            return;
    }
    ck_abort_msg("the purge queue did not drain in %u passes", PURGE_PASSES_MAX);
}

/* A create or unlink in a directory brings the directory's new attributes
 * (MdsReply.dir_attr): depfs_dir_attr_take gives them out once, equal to
 * what the MDS says, so depfs-fuse answers the kernel's revalidation that
 * follows each change without a round trip; any other change of the
 * directory by this client, or an age over the bound, leaves nothing. */
static void expect_dir_attr(depfs_t *fs, uint64_t d, const char *what)
{
    struct stat kept, fresh;
    int rc = depfs_dir_attr_take(fs, d, DIR_ATTR_AGE_MS, &kept);
    ck_assert_msg(rc == 0, "after %s: no attributes kept for the directory (%d)", what, rc);
    ck_assert_int_eq(depfs_getattr(fs, d, &fresh), 0);
    ck_assert_uint_eq(kept.st_ino, d);
    ck_assert(S_ISDIR(kept.st_mode));
    ck_assert_uint_eq(kept.st_mode, fresh.st_mode);
    ck_assert_uint_eq(kept.st_nlink, fresh.st_nlink);
    ck_assert_int_eq(kept.st_mtim.tv_sec, fresh.st_mtim.tv_sec);
    ck_assert_int_eq(kept.st_mtim.tv_nsec, fresh.st_mtim.tv_nsec);
    ck_assert_int_eq(kept.st_ctim.tv_nsec, fresh.st_ctim.tv_nsec);
    ck_assert_int_eq(depfs_dir_attr_take(fs, d, DIR_ATTR_AGE_MS, &kept), -ENOENT); /* once */
}

START_TEST(test_dir_attr_after_change)
{
    depfs_t *fs = mount_fs();
    uint64_t d = mkdir_ok(fs, DEPFS_ROOT_INO, "da");
    struct stat st;

    create_ok(fs, d, "f", NULL);
    expect_dir_attr(fs, d, "create");
    ck_assert_int_eq(depfs_symlink(fs, d, "s", "f", NULL, &st), 0);
    expect_dir_attr(fs, d, "symlink");
    mkdir_ok(fs, d, "sub");
    expect_dir_attr(fs, d, "mkdir"); /* nlink 3 */
    ck_assert_int_eq(depfs_unlink(fs, d, "f"), 0);
    expect_dir_attr(fs, d, "unlink");

    /* a chmod of the directory after a create: nothing older is given out */
    create_ok(fs, d, "g", NULL);
    struct stat in = {.st_mode = 0700};
    ck_assert_int_eq(depfs_setattr(fs, d, &in, DEPFS_SET_MODE, &st), 0);
    ck_assert_int_eq(depfs_dir_attr_take(fs, d, DIR_ATTR_AGE_MS, &st), -ENOENT);
    /* so does a rename or rmdir in it */
    create_ok(fs, d, "h", NULL);
    ck_assert_int_eq(depfs_rename(fs, d, "h", d, "h2", 0), 0);
    ck_assert_int_eq(depfs_dir_attr_take(fs, d, DIR_ATTR_AGE_MS, &st), -ENOENT);
    create_ok(fs, d, "i", NULL);
    ck_assert_int_eq(depfs_rmdir(fs, d, "sub"), 0);
    ck_assert_int_eq(depfs_dir_attr_take(fs, d, DIR_ATTR_AGE_MS, &st), -ENOENT);
    /* a failed change forgets too (the MDS may or may not have made it) */
    create_ok(fs, d, "j", NULL);
    ck_assert_int_eq(depfs_unlink(fs, d, "missing"), -ENOENT);
    ck_assert_int_eq(depfs_dir_attr_take(fs, d, DIR_ATTR_AGE_MS, &st), -ENOENT);
    /* older than the caller's bound: not given out */
    create_ok(fs, d, "k", NULL);
    usleep(DIR_ATTR_STALE_US);
    ck_assert_int_eq(depfs_dir_attr_take(fs, d, 0, &st), -ENOENT);
    /* reads change nothing: a lookup between the create and the question */
    create_ok(fs, d, "l", NULL);
    ck_assert_int_eq(depfs_lookup(fs, d, "l", &st), 0);
    expect_dir_attr(fs, d, "create, then a lookup");
    ck_assert_int_eq(depfs_dir_attr_take(fs, 0, DIR_ATTR_AGE_MS, &st), -EINVAL);
    depfs_unmount(fs);
}
END_TEST

/* ------------------------------------------------------------ statahead */

#define SA_FILES 40u
#define SA_KEEP_MS 60000u /* a bound no test step reaches */
#define SA_SHORT_MS 300u  /* one a test waits out */
#define SA_TEST_TIMEOUT_S 120

static depfs_t *mount_statahead(unsigned keep_ms)
{
    depfs_options o = {.config_path = cl->conf, .statahead_ms = keep_ms};
    depfs_t *fs = NULL;
    int rc = depfs_mount(&o, &fs);
    ck_assert_msg(rc == 0, "mount: %s (%s)", strerror(-rc), depfs_last_error());
    return fs;
}

/* A lookup through fs, against a fresh getattr through `truth`. */
static void expect_lookup_true(depfs_t *fs, depfs_t *truth, uint64_t d, const char *name)
{
    struct stat got, want;
    unsigned age = UINT_MAX;
    int rc = depfs_lookup_aged(fs, d, name, &got, &age);
    ck_assert_msg(rc == 0, "lookup %s: %d %s", name, rc, depfs_last_error());
    ck_assert_uint_lt(age, SA_KEEP_MS);
    ck_assert_int_eq(depfs_getattr(truth, got.st_ino, &want), 0);
    ck_assert_uint_eq(got.st_mode, want.st_mode);
    ck_assert_uint_eq(got.st_nlink, want.st_nlink);
    ck_assert_uint_eq(got.st_uid, want.st_uid);
    ck_assert_uint_eq(got.st_size, want.st_size);
    ck_assert_uint_eq(got.st_blocks, want.st_blocks);
    ck_assert_uint_eq(got.st_blksize, want.st_blksize);
    ck_assert_int_eq(got.st_ctim.tv_sec, want.st_ctim.tv_sec);
    ck_assert_int_eq(got.st_ctim.tv_nsec, want.st_ctim.tv_nsec);
}

/* A directory dname with SA_FILES files f0, f1, ... made by fs. */
static uint64_t sa_files(depfs_t *fs, const char *dname, uint64_t ino[SA_FILES])
{
    char name[32];
    uint64_t d = mkdir_ok(fs, DEPFS_ROOT_INO, dname);
    for (unsigned i = 0; i < SA_FILES; i++) {
        snprintf(name, sizeof name, "f%u", i);
        ino[i] = create_ok(fs, d, name, NULL);
    }
    return d;
}

static void write_ok(depfs_t *fs, uint64_t ino, size_t len)
{
    static char buf[8192];
    depfs_fh_t *fh = NULL;
    ck_assert_uint_le(len, sizeof buf);
    memset(buf, 'x', len);
    ck_assert_int_eq(depfs_open_ino(fs, ino, O_RDWR, &fh), 0);
    ck_assert_int_eq(depfs_write(fh, buf, len, 0), (ssize_t)len);
    ck_assert_int_eq(depfs_close(fh), 0);
}

/* Names looked up one after another come from pages of the directory
 * (READDIR with_attrs), each answer what the MDS says, and what this
 * client changes is never answered from an older page. */
START_TEST(test_statahead_lookups)
{
    depfs_t *fs = mount_statahead(SA_KEEP_MS), *other = mount_fs();
    char name[32];
    uint64_t ino[SA_FILES];
    uint64_t d = sa_files(other, "statahead", ino);
    write_ok(other, ino[1], 5000);
    for (unsigned i = 0; i < SA_FILES; i++) {
        snprintf(name, sizeof name, "f%u", i);
        expect_lookup_true(fs, other, d, name);
    }
    ck_assert_uint_eq(fs->statahead.pages, 1);
    ck_assert_uint_eq(fs->statahead.answered, SA_FILES - DC_SA_TRIGGER);

    /* this client's changes: never an older page's answer */
    struct stat st, in = {.st_mode = 0600};
    ck_assert_int_eq(depfs_unlink(fs, d, "f5"), 0);
    ck_assert_int_eq(depfs_lookup(fs, d, "f5", &st), -ENOENT);
    ck_assert_int_eq(depfs_setattr(fs, ino[6], &in, DEPFS_SET_MODE, &st), 0);
    expect_lookup_true(fs, other, d, "f6");
    ck_assert_int_eq(depfs_rename(fs, d, "f7", d, "g7", 0), 0);
    ck_assert_int_eq(depfs_lookup(fs, d, "f7", &st), -ENOENT);
    expect_lookup_true(fs, other, d, "g7");
    ck_assert_int_eq(depfs_link(fs, ino[8], d, "l8", &st), 0);
    expect_lookup_true(fs, other, d, "f8"); /* nlink 2 */
    write_ok(fs, ino[9], 3000);             /* its size report (MDS_EXTEND) */
    expect_lookup_true(fs, other, d, "f9");
    ck_assert_int_eq(depfs_rename(fs, d, "f10", d, "f11", 0), 0); /* f11 replaced */
    expect_lookup_true(fs, other, d, "f11");

    /* another client's change: seen once the page is older than the bound */
    depfs_t *brief = mount_statahead(SA_SHORT_MS);
    for (unsigned i = 20; i < SA_FILES; i++) {
        snprintf(name, sizeof name, "f%u", i);
        ck_assert_int_eq(depfs_lookup(brief, d, name, &st), 0);
    }
    ck_assert_int_eq(depfs_setattr(other, ino[30], &in, DEPFS_SET_MODE, &st), 0);
    usleep(SA_SHORT_MS * 1000u);
    unsigned age = 0;
    ck_assert_int_eq(depfs_lookup_aged(brief, d, "f30", &st, &age), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0600);
    ck_assert_uint_eq(age, 0);
    depfs_unmount(brief);
    depfs_unmount(other);
    depfs_unmount(fs);
}
END_TEST

/* getxattr of a security.* or trusted.* name (ls -l asks every name it
 * lists for security.selinux) of an inode a page says has no stored
 * xattrs: ENODATA with no round trip. An inode with one, a user.* name
 * (the MDS checks read permission), this client's own setxattr, and
 * another client's once the page is older than the bound: the MDS. */
START_TEST(test_statahead_no_xattrs)
{
    depfs_t *fs = mount_statahead(SA_KEEP_MS), *other = mount_fs();
    char name[32], v[8];
    struct stat st;
    uint64_t ino[SA_FILES];
    uint64_t d = sa_files(other, "statahead_x", ino);
    ck_assert_int_eq(depfs_setxattr(other, ino[3], "security.t", "v", 1, 0), 0);
    for (unsigned i = 0; i < SA_FILES; i++) {
        snprintf(name, sizeof name, "f%u", i);
        ck_assert_int_eq(depfs_lookup(fs, d, name, &st), 0);
    }
    ck_assert_uint_eq(fs->statahead.pages, 1);
    for (unsigned i = 0; i < SA_FILES; i++)
        if (i != 3)
            ck_assert_int_eq(depfs_getxattr(fs, ino[i], "security.selinux", v, sizeof v), -ENODATA);
    ck_assert_uint_eq(fs->statahead.xattrs_answered, SA_FILES - 1);
    ck_assert_int_eq(depfs_getxattr(fs, ino[3], "security.t", v, sizeof v), 1);
    ck_assert_int_eq(depfs_getxattr(fs, ino[0], "trusted.none", v, sizeof v), -ENODATA);
    ck_assert_uint_eq(fs->statahead.xattrs_answered, SA_FILES);
    ck_assert_int_eq(depfs_getxattr(fs, ino[0], "user.none", v, sizeof v), -ENODATA);
    ck_assert_uint_eq(fs->statahead.xattrs_answered, SA_FILES); /* asked of the MDS */
    ck_assert_int_eq(depfs_setxattr(fs, ino[4], "security.mine", "ab", 2, 0), 0);
    ck_assert_int_eq(depfs_getxattr(fs, ino[4], "security.mine", v, sizeof v), 2);

    depfs_t *brief = mount_statahead(SA_SHORT_MS);
    for (unsigned i = 0; i < SA_FILES; i++) {
        snprintf(name, sizeof name, "f%u", i);
        ck_assert_int_eq(depfs_lookup(brief, d, name, &st), 0);
    }
    ck_assert_int_eq(depfs_setxattr(other, ino[21], "security.o", "xyz", 3, 0), 0);
    usleep(SA_SHORT_MS * 1000u);
    ck_assert_int_eq(depfs_getxattr(brief, ino[21], "security.o", v, sizeof v), 3);
    depfs_unmount(brief);
    depfs_unmount(other);
    depfs_unmount(fs);
}
END_TEST

/* A page on its way while this client changes the directory: what the
 * changes dropped is dropped from it too; past what the change log holds,
 * the page is not kept. */
START_TEST(test_statahead_page_across_changes)
{
    depfs_t *fs = mount_statahead(SA_KEEP_MS), *other = mount_fs();
    uint64_t ino[SA_FILES];
    uint64_t d = sa_files(other, "statahead2", ino);
    uint64_t cookie = 0, gen = 0;
    bool fetch = false;
    for (unsigned i = 0; i < DC_SA_TRIGGER && !fetch; i++)
        fetch = dc_sa_missed(fs, d, &cookie, &gen);
    ck_assert(fetch);
    ck_assert_uint_eq(cookie, 0);
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_ino = req.has_max_entries = req.has_with_attrs = 1;
    req.ino = d;
    req.max_entries = DC_SA_PAGE_ENTRIES;
    req.with_attrs = 1;
    Depfs__MdsReply *page = NULL;
    ck_assert_int_eq(dc_mds_call(fs, DEPFS__MDS_OP__MDS_READDIR, &req, &page), 0);
    /* the changes, after the page was read and before it is kept */
    struct stat st, in = {.st_mode = 0600};
    ck_assert_int_eq(depfs_unlink(fs, d, "f1"), 0);
    ck_assert_int_eq(depfs_setattr(fs, ino[2], &in, DEPFS_SET_MODE, &st), 0);
    dc_sa_keep(fs, d, gen, dc_now_ms(), page);
    ck_assert_uint_eq(fs->statahead.pages, 1);
    ck_assert_int_eq(depfs_lookup(fs, d, "f1", &st), -ENOENT);
    expect_lookup_true(fs, other, d, "f2");
    uint64_t answered = fs->statahead.answered;
    expect_lookup_true(fs, other, d, "f3");
    ck_assert_uint_eq(fs->statahead.answered, answered + 1);

    /* more changes than the log holds: the page is not kept */
    fetch = false;
    for (unsigned i = 0; i < 64 && !fetch; i++)
        fetch = dc_sa_missed(fs, d, &cookie, &gen);
    ck_assert(fetch);
    for (unsigned i = 0; i < DC_SA_LOG; i++)
        ck_assert_int_eq(depfs_setattr(fs, ino[4], &in, DEPFS_SET_MODE, &st), 0);
    dc_sa_keep(fs, d, gen, dc_now_ms(), page);
    ck_assert_uint_eq(fs->statahead.pages, 1);
    depfs__mds_reply__free_unpacked(page, NULL);
    depfs_unmount(other);
    depfs_unmount(fs);
}
END_TEST

/* A directory larger than what is kept (DC_SA_MAX_ENTRIES) looked up at
 * random: what is kept answers most names and is kept, pages answering few
 * are fetched ever less often (DC_SA_TRIGGER doubling), not one per
 * DC_SA_TRIGGER names; a scan in order then goes on past what is kept. */
#define SA_BIG_FILES 9000u
#define SA_RANDOM_LOOKUPS 2000u
#define SA_RANDOM_PAGES_MAX 12u
#define SA_SCAN_MISSES_MAX 64u
_Static_assert(SA_BIG_FILES > DC_SA_MAX_ENTRIES, "the directory must not fit what is kept");

START_TEST(test_statahead_random_lookups)
{
    depfs_t *fs = mount_statahead(SA_KEEP_MS), *other = mount_fs();
    uint64_t d = mkdir_ok(other, DEPFS_ROOT_INO, "statahead_big");
    static uint64_t ino[SA_BIG_FILES];
    char name[32];
    struct stat st;
    for (unsigned i = 0; i < SA_BIG_FILES; i++) {
        snprintf(name, sizeof name, "f%u", i);
        ck_assert_int_eq(depfs_mknod(other, d, name, S_IFREG | 0644, 0, NULL, &st), 0);
        ino[i] = st.st_ino;
    }
    uint32_t x = 12345u;
    for (unsigned i = 0; i < SA_RANDOM_LOOKUPS; i++) {
        x = x * 1103515245u + 12345u; /* a fixed pseudo-random order */
        unsigned f = (x >> 8) % SA_BIG_FILES;
        snprintf(name, sizeof name, "f%u", f);
        ck_assert_int_eq(depfs_lookup(fs, d, name, &st), 0);
        ck_assert_uint_eq(st.st_ino, ino[f]);
    }
    ck_assert_uint_ge(fs->statahead.pages, 1);
    ck_assert_msg(fs->statahead.pages <= SA_RANDOM_PAGES_MAX, "%llu pages for %u random lookups",
                  (unsigned long long)fs->statahead.pages, SA_RANDOM_LOOKUPS);
    /* then in order, past what is kept: the pages go on with the scan */
    uint64_t answered = fs->statahead.answered;
    for (unsigned i = 0; i < SA_BIG_FILES; i++) {
        snprintf(name, sizeof name, "f%u", i);
        ck_assert_int_eq(depfs_lookup(fs, d, name, &st), 0);
        ck_assert_uint_eq(st.st_ino, ino[i]);
    }
    ck_assert_uint_ge(fs->statahead.answered - answered, SA_BIG_FILES - SA_SCAN_MISSES_MAX);
    depfs_unmount(other);
    depfs_unmount(fs);
}
END_TEST

/* Another client's migrate gives a name to a copy: an open of the old
 * inode is ESTALE, and the lookup of the name that follows (the kernel's
 * re-lookup) finds the copy, not what a page kept of the old inode. Before
 * the ESTALE dropped it, the page answered the old inode again, and every
 * retry of the open was ESTALE until the page aged out. */
START_TEST(test_statahead_after_migrate)
{
    depfs_t *fs = mount_statahead(SA_KEEP_MS), *other = mount_fs();
    char name[32];
    struct stat st;
    uint64_t ino[SA_FILES], version = 0;
    uint64_t d = sa_files(other, "statahead_m", ino);
    for (unsigned i = 0; i < SA_FILES; i++) {
        snprintf(name, sizeof name, "f%u", i);
        ck_assert_int_eq(depfs_lookup(fs, d, name, &st), 0);
    }
    ck_assert_uint_eq(fs->statahead.pages, 1);
    ck_assert_int_eq(depfs_lookup(fs, d, "f9", &st), 0);
    ck_assert_uint_eq(st.st_ino, ino[9]);
    depfs_fh_t *copy = NULL, *fh = NULL;
    ck_assert_int_eq(depfs_data_version(other, ino[9], &version), 0);
    ck_assert_int_eq(depfs_create(other, d, NULL, 0644, O_RDWR | O_TMPFILE, NULL, NULL, NULL, &copy),
                     0);
    ck_assert_int_eq(depfs_migrate_swap(other, d, "f9", ino[9], depfs_fh_ino(copy), version, NULL),
                     0);
    ck_assert_int_eq(depfs_close(copy), 0);
    ck_assert_int_eq(depfs_open_ino(fs, ino[9], O_RDONLY, &fh), -ESTALE);
    ck_assert_int_eq(depfs_lookup(fs, d, "f9", &st), 0);
    ck_assert_uint_ne(st.st_ino, ino[9]);
    ck_assert_int_eq(depfs_open_ino(fs, st.st_ino, O_RDONLY, &fh), 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    depfs_unmount(other);
    depfs_unmount(fs);
}
END_TEST

/* A directory another client removed and made again while this client's
 * page of its parent still names the old one: a lookup in the old one is
 * ESTALE (a stale parent, not a missing name), and the lookup of the
 * directory's name that follows (the kernel's walk again) must reach the
 * MDS, not the page; the path API walks to the new one. */
START_TEST(test_statahead_gone_parent)
{
    depfs_t *fs = mount_statahead(SA_KEEP_MS), *other = mount_fs();
    char name[32];
    struct stat st;
    uint64_t top = mkdir_ok(other, DEPFS_ROOT_INO, "statahead_gone");
    uint64_t sub[SA_FILES];
    for (unsigned i = 0; i < SA_FILES; i++) {
        snprintf(name, sizeof name, "g%u", i);
        sub[i] = mkdir_ok(other, top, name);
    }
    create_ok(other, sub[9], "x", NULL);
    for (unsigned i = 0; i < SA_FILES; i++) {
        snprintf(name, sizeof name, "g%u", i);
        ck_assert_int_eq(depfs_lookup(fs, top, name, &st), 0);
    }
    ck_assert_uint_eq(fs->statahead.pages, 1);
    ck_assert_int_eq(depfs_unlink(other, sub[9], "x"), 0);
    ck_assert_int_eq(depfs_rmdir(other, top, "g9"), 0);
    uint64_t again = mkdir_ok(other, top, "g9");
    create_ok(other, again, "y", NULL);

    ck_assert_int_eq(depfs_lookup(fs, sub[9], "y", &st), -ESTALE);
    ck_assert_int_eq(depfs_lookup(fs, top, "g9", &st), 0);
    ck_assert_uint_eq(st.st_ino, again);
    ck_assert_int_eq(depfs_lookup(fs, again, "y", &st), 0);
    ck_assert_int_eq(depfs_mkdir(fs, sub[9], "z", 0755, NULL, &st), -ESTALE);
    /* a path names what is there now; a path under a gone one is ENOENT */
    ck_assert_int_eq(depfs_resolve(fs, "/statahead_gone/g9/y", NULL, &st), 0);
    ck_assert_int_eq(depfs_rmdir(other, top, "g8"), 0);
    ck_assert_int_eq(depfs_mkdir_path(fs, "/statahead_gone/g8/z", 0755), -ENOENT);
    depfs_unmount(other);
    depfs_unmount(fs);
}
END_TEST

/* Another client's rotation (`mv ckpt ckpt.old; mkdir ckpt`) under a page
 * this mount keeps, as its kernel sees it: the lookup of the new name
 * ckpt.old moves the kernel's entry of the directory there and shows this
 * client the move's names epoch. From then on the page answers nothing:
 * it would give the moved directory back under its old name, and a write
 * through that name would pass (its epoch now the newer one) and land in
 * ckpt.old. */
START_TEST(test_statahead_after_a_move_seen)
{
    depfs_options o = {.config_path = cl->conf, .count_lookups = true, .statahead_ms = SA_KEEP_MS};
    depfs_t *fs = NULL, *other = mount_fs();
    ck_assert_int_eq(depfs_mount(&o, &fs), 0);
    char name[32];
    struct stat st;
    uint64_t ino[SA_FILES];
    uint64_t top = sa_files(other, "sa_moved", ino);
    uint64_t ckpt = mkdir_ok(other, top, "ckpt");
    create_ok(other, ckpt, "f", NULL);
    for (unsigned i = 0; i < SA_FILES; i++) {
        snprintf(name, sizeof name, "f%u", i);
        ck_assert_int_eq(depfs_lookup(fs, top, name, &st), 0);
    }
    ck_assert_uint_eq(fs->statahead.pages, 1);
    ck_assert_int_eq(depfs_lookup(fs, top, "ckpt", &st), 0);
    ck_assert_uint_eq(st.st_ino, ckpt);
    ck_assert_int_eq(depfs_lookup(fs, ckpt, "f", &st), 0);

    ck_assert_int_eq(depfs_rename(other, top, "ckpt", top, "ckpt.old", 0), 0);
    uint64_t again = mkdir_ok(other, top, "ckpt");
    ck_assert_int_eq(depfs_lookup(fs, top, "ckpt.old", &st), 0);
    ck_assert_uint_eq(st.st_ino, ckpt);
    ck_assert_int_eq(depfs_lookup(fs, top, "ckpt", &st), 0);
    ck_assert_msg(st.st_ino == again, "a page from before the move gave the moved directory "
                  "(inode %llu) back under its old name", (unsigned long long)st.st_ino);
    ck_assert_int_eq(depfs_lookup(fs, again, "f", &st), -ENOENT);
    /* pages fetched since are of the new epoch: kept and answering */
    uint64_t answered = fs->statahead.answered;
    for (unsigned i = 0; i < SA_FILES; i++) {
        snprintf(name, sizeof name, "f%u", i);
        expect_lookup_true(fs, other, top, name);
    }
    ck_assert_uint_gt(fs->statahead.answered, answered);
    depfs_unmount(other);
    depfs_unmount(fs);
}
END_TEST

/* The names a rotation is tried on: top_name/ckpt/f made by other, and
 * looked up by a mount that counts lookups (*fs, as depfs-fuse's). */
typedef struct held_ckpt {
    uint64_t top, ckpt, f;
} held_ckpt;

static held_ckpt held_ckpt_make(depfs_t *other, const char *top_name, depfs_t **fs)
{
    depfs_options o = {.config_path = cl->conf, .count_lookups = true};
    ck_assert_int_eq(depfs_mount(&o, fs), 0);
    struct stat st;
    held_ckpt h;
    h.top = mkdir_ok(other, DEPFS_ROOT_INO, top_name);
    h.ckpt = mkdir_ok(other, h.top, "ckpt");
    h.f = create_ok(other, h.ckpt, "f", NULL);
    ck_assert_int_eq(depfs_lookup(*fs, DEPFS_ROOT_INO, top_name, &st), 0);
    ck_assert_int_eq(depfs_lookup(*fs, h.top, "ckpt", &st), 0);
    ck_assert_int_eq(depfs_lookup(*fs, h.ckpt, "f", &st), 0);
    return h;
}

/* A mount that counts lookups (as depfs-fuse's) keeps the names epoch of
 * the names its kernel holds: once another client moved a directory above
 * them (`mv ckpt ckpt.old; mkdir ckpt`), an open or create through them is
 * ESTALE, so that the kernel walks the path again, and once more it passes
 * for the caller refused (one that cannot walk again, a process in the
 * moved directory, goes on there); its own moves, and moves elsewhere,
 * refuse nothing. */
START_TEST(test_names_epoch_through_held_names)
{
    depfs_t *fs = NULL, *other = mount_fs();
    struct stat st;
    depfs_fh_t *fh = NULL;
    held_ckpt h = held_ckpt_make(other, "epoch_top", &fs);
    uint64_t top = h.top, ckpt = h.ckpt, f = h.f;
    mkdir_ok(other, DEPFS_ROOT_INO, "epoch_elsewhere");

    /* moved elsewhere: nothing refused */
    ck_assert_int_eq(depfs_rename(other, DEPFS_ROOT_INO, "epoch_elsewhere", DEPFS_ROOT_INO,
                                  "epoch_elsewhere2", 0), 0);
    ck_assert_int_eq(depfs_open_ino(fs, f, O_RDONLY, &fh), 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    create_ok(fs, ckpt, "mine", NULL);

    /* the rotation */
    ck_assert_int_eq(depfs_rename(other, top, "ckpt", top, "ckpt.old", 0), 0);
    uint64_t again = mkdir_ok(other, top, "ckpt");
    ck_assert_int_eq(depfs_open_ino(fs, f, O_RDWR | O_TRUNC, &fh), -ESTALE);
    depfs_act_caller(1); /* another kernel caller (the first goes on: test_names_pass_per_caller) */
    ck_assert_int_eq(depfs_create(fs, ckpt, "g", 0644, O_RDWR | O_EXCL, NULL, NULL, &st, &fh),
                     -ESTALE);
    ck_assert_int_eq(depfs_lookup(fs, top, "ckpt", &st), 0); /* the walk again */
    ck_assert_uint_eq(st.st_ino, again);
    create_ok(fs, again, "g", NULL);
    /* once more through the old ones: processes still in ckpt.old */
    create_ok(fs, ckpt, "h", NULL);
    depfs_act_caller(0);
    ck_assert_int_eq(depfs_open_ino(fs, f, O_RDONLY, &fh), 0);
    ck_assert_int_eq(depfs_close(fh), 0);

    /* its own move refuses nothing below it */
    ck_assert_int_eq(depfs_rename(fs, top, "ckpt", top, "ckpt.mine", 0), 0);
    create_ok(fs, again, "k", NULL);
    ck_assert_int_eq(depfs_open_ino(fs, f, O_RDONLY, &fh), 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    depfs_unmount(other);
    depfs_unmount(fs);
}
END_TEST

/* Two kernel callers through the same old names after a rotation (ranks
 * on one node that mkdir in ckpt at once): the refusal of the first lets
 * only that caller go on through the moved directory (its working
 * directory); the second is refused too, so its kernel walks to the new
 * ckpt instead of creating in ckpt.old. A caller refused through an
 * opened file goes on through the file's directory as well; one whose
 * pass was taken back (depfs_names_unpass) is refused again, as is any
 * after a later rotation. A probe (depfs_lookup_probe) holds nothing. */
START_TEST(test_names_pass_per_caller)
{
    depfs_t *fs = NULL, *other = mount_fs();
    struct stat st;
    depfs_fh_t *fh = NULL;
    held_ckpt h = held_ckpt_make(other, "pass_top", &fs);
    uint64_t top = h.top, ckpt = h.ckpt, f = h.f;

    ck_assert_int_eq(depfs_rename(other, top, "ckpt", top, "ckpt.old", 0), 0);
    uint64_t again = mkdir_ok(other, top, "ckpt");
    depfs_act_caller(101);
    ck_assert_int_eq(depfs_mkdir(fs, ckpt, "r1", 0755, NULL, &st), -ESTALE);
    depfs_act_caller(102);
    ck_assert_int_eq(depfs_mkdir(fs, ckpt, "r2", 0755, NULL, &st), -ESTALE);
    depfs_act_caller(103); /* refused through f: goes on through its directory too */
    ck_assert_int_eq(depfs_open_ino(fs, f, O_RDONLY, &fh), -ESTALE);
    ck_assert_int_eq(depfs_lookup(fs, ckpt, "f", &st), 0);
    ck_assert_int_eq(depfs_open_ino(fs, f, O_RDONLY, &fh), 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    depfs_act_caller(101); /* the first: a process in ckpt.old goes on there */
    ck_assert_int_eq(depfs_mkdir(fs, ckpt, "here", 0755, NULL, &st), 0);
    depfs_act_caller(102); /* the second walks again: the new ckpt */
    ck_assert_int_eq(depfs_lookup(fs, top, "ckpt", &st), 0);
    ck_assert_uint_eq(st.st_ino, again);
    ck_assert_int_eq(depfs_mkdir(fs, again, "r2", 0755, NULL, &st), 0);
    ck_assert_int_eq(depfs_lookup(other, ckpt, "r1", &st), -ENOENT);
    ck_assert_int_eq(depfs_lookup(other, ckpt, "r2", &st), -ENOENT);
    ck_assert_int_eq(depfs_lookup(other, again, "r2", &st), 0);

    /* a probe is not the kernel's: nothing held, nothing from statahead */
    dc_names_seen seen;
    uint64_t r3 = mkdir_ok(other, again, "r3");
    ck_assert_int_eq(depfs_lookup_probe(fs, again, "r3", &st), 0);
    ck_assert_uint_eq(st.st_ino, r3);
    ck_assert(!dc_handles_names(&fs->handles, r3, &seen));
    ck_assert_int_eq(depfs_lookup_probe(fs, again, "none", &st), -ENOENT);
    /* a caller whose refusal was answered otherwise (depfs-fuse's ENOENT)
     * is refused again */
    depfs_act_caller(104);
    ck_assert_int_eq(depfs_lookup_probe(fs, ckpt, "none", &st), -ESTALE);
    ck_assert_int_eq(depfs_lookup_probe(fs, ckpt, "none", &st), -ENOENT);
    depfs_names_unpass(fs, ckpt);
    ck_assert_int_eq(depfs_mkdir(fs, ckpt, "none", 0755, NULL, &st), -ESTALE);
    ck_assert_int_eq(depfs_mkdir(fs, ckpt, "none", 0755, NULL, &st), 0);

    /* a later rotation of the moved directory refuses the first caller again */
    ck_assert_int_eq(depfs_rename(other, top, "ckpt.old", top, "ckpt.older", 0), 0);
    depfs_act_caller(101);
    ck_assert_int_eq(depfs_mkdir(fs, ckpt, "there", 0755, NULL, &st), -ESTALE);
    ck_assert_int_eq(depfs_mkdir(fs, ckpt, "there", 0755, NULL, &st), 0);
    depfs_act_caller(0);
    depfs_unmount(other);
    depfs_unmount(fs);
}
END_TEST

/* What depfs_readdir_plus gave: entries with and without attributes. */
#define RP_PAGE 7u /* entries asked per page: several pages of SA_FILES */
typedef struct rp_col {
    unsigned n, with, stop_at;
    uint64_t last_cookie;
    char names[SA_FILES + 2][16];
    struct stat st[SA_FILES + 2];
    bool has_st[SA_FILES + 2];
} rp_col;

static int rp_take(void *arg, const char *name, uint64_t ino, mode_t type, uint64_t cookie,
                   const struct stat *st)
{
    rp_col *c = arg;
    if (c->stop_at && c->n == c->stop_at)
        return 1; /* not taken: the next page starts with it */
    ck_assert_uint_lt(c->n, SA_FILES + 2);
    ck_assert_uint_ne(ino, 0);
    ck_assert(cookie > c->last_cookie);
    snprintf(c->names[c->n], sizeof c->names[0], "%s", name);
    c->has_st[c->n] = st != NULL;
    if (st) {
        ck_assert_uint_eq(st->st_ino, ino);
        ck_assert_uint_eq(st->st_mode & S_IFMT, type);
        c->st[c->n] = *st;
        c->with++;
    }
    c->last_cookie = cookie;
    c->n++;
    return 0;
}

/* A whole listing page by page (max entries each): what a FUSE
 * READDIRPLUS sequence gets. */
static void rp_list(depfs_t *fs, uint64_t d, uint32_t max, rp_col *c)
{
    for (unsigned pages = 0; pages <= SA_FILES + 2; pages++) {
        unsigned before = c->n;
        ck_assert_int_eq(depfs_readdir_plus(fs, d, c->last_cookie, max, rp_take, c), 0);
        ck_assert_uint_le(c->n - before, max);
        if (c->n == before)
            return;
    }
    ck_abort_msg("readdir_plus did not end");
}

/* READDIRPLUS (depfs-fuse's op_readdirplus): every name with the
 * attributes a lookup would give (none for "." and ".."), in pages of at
 * most the entries asked for; an entry not taken starts the next page;
 * and the pages answer statahead's getxattr as lookups' pages do. */
START_TEST(test_readdir_plus)
{
    depfs_t *fs = mount_statahead(SA_KEEP_MS), *other = mount_fs();
    uint64_t ino[SA_FILES];
    char v[8];
    struct stat want;
    uint64_t d = sa_files(other, "plus", ino);
    write_ok(other, ino[2], 4000);
    ck_assert_int_eq(depfs_setxattr(other, ino[3], "security.t", "v", 1, 0), 0);
    rp_col c = { 0 };
    rp_list(fs, d, RP_PAGE, &c);
    ck_assert_uint_eq(c.n, SA_FILES + 2);
    ck_assert_uint_eq(c.with, SA_FILES);
    for (unsigned i = 0; i < c.n; i++) {
        bool dot = !strcmp(c.names[i], ".") || !strcmp(c.names[i], "..");
        ck_assert_msg(c.has_st[i] == !dot, "%s: attributes %d", c.names[i], c.has_st[i]);
        if (dot)
            continue;
        ck_assert_int_eq(depfs_getattr(other, c.st[i].st_ino, &want), 0);
        ck_assert_uint_eq(c.st[i].st_mode, want.st_mode);
        ck_assert_uint_eq(c.st[i].st_size, want.st_size);
        ck_assert_uint_eq(c.st[i].st_nlink, want.st_nlink);
        ck_assert_uint_eq(c.st[i].st_blocks, want.st_blocks);
        ck_assert_uint_eq(c.st[i].st_blksize, want.st_blksize);
    }
    /* its pages answer getxattr (ls -l's security.selinux) as statahead's */
    uint64_t answered = fs->statahead.xattrs_answered;
    for (unsigned i = 0; i < SA_FILES; i++)
        if (i != 3)
            ck_assert_int_eq(depfs_getxattr(fs, ino[i], "security.selinux", v, sizeof v), -ENODATA);
    ck_assert_uint_eq(fs->statahead.xattrs_answered - answered, SA_FILES - 1);
    ck_assert_int_eq(depfs_getxattr(fs, ino[3], "security.t", v, sizeof v), 1);

    /* an entry the caller did not take comes first in the next page */
    rp_col s = {.stop_at = 3};
    ck_assert_int_eq(depfs_readdir_plus(fs, d, 0, RP_PAGE, rp_take, &s), 0);
    ck_assert_uint_eq(s.n, 3);
    s.stop_at = 0;
    rp_list(fs, d, RP_PAGE, &s);
    ck_assert_uint_eq(s.n, SA_FILES + 2);
    for (unsigned i = 0; i < s.n; i++)
        ck_assert_str_eq(s.names[i], c.names[i]);
    depfs_unmount(other);
    depfs_unmount(fs);
}
END_TEST

START_TEST(test_rename_link_unlink)
{
    depfs_t *fs = mount_fs();
    uint64_t d = mkdir_ok(fs, DEPFS_ROOT_INO, "rl");
    uint64_t a = create_ok(fs, d, "a", NULL);
    uint64_t b = create_ok(fs, d, "b", NULL);
    struct stat st;

    ck_assert_int_eq(depfs_rename(fs, d, "a", d, "b", RENAME_NOREPLACE), -EEXIST);
    ck_assert_int_eq(depfs_rename(fs, d, "a", d, "c", 0), 0);
    ck_assert_int_eq(depfs_lookup(fs, d, "a", &st), -ENOENT);
    ck_assert_int_eq(depfs_lookup(fs, d, "c", &st), 0);
    ck_assert_uint_eq(st.st_ino, a);
    /* rename over an existing file replaces it: its inode is gone to a
     * client that does not hold it open (the MDS keeps it until the purge
     * queue drops it) */
    ck_assert_int_eq(depfs_rename(fs, d, "c", d, "b", 0), 0);
    ck_assert_int_eq(depfs_lookup(fs, d, "b", &st), 0);
    ck_assert_uint_eq(st.st_ino, a);
    ck_assert_int_eq(depfs_getattr(fs, b, &st), -ENOENT);
    purge_all(fs);
    ck_assert_int_eq(depfs_getattr(fs, b, &st), -ENOENT);

    uint64_t d2 = mkdir_ok(fs, DEPFS_ROOT_INO, "rl2");
    ck_assert_int_eq(depfs_link(fs, a, d2, "hard", &st), 0);
    ck_assert_uint_eq(st.st_ino, a);
    ck_assert_uint_eq(st.st_nlink, 2);
    ck_assert_int_eq(depfs_link(fs, d, d2, "dirlink", &st), -EPERM);
    ck_assert_int_eq(depfs_unlink(fs, d, "b"), 0);
    ck_assert_int_eq(depfs_getattr(fs, a, &st), 0);
    ck_assert_uint_eq(st.st_nlink, 1);
    ck_assert_int_eq(depfs_unlink(fs, d2, "hard"), 0);
    purge_all(fs);
    ck_assert_int_eq(depfs_getattr(fs, a, &st), -ENOENT);
    ck_assert_int_eq(depfs_unlink(fs, d2, "hard"), -ENOENT);
    ck_assert_int_eq(depfs_unlink(fs, DEPFS_ROOT_INO, "rl"), -EISDIR);
    ck_assert_int_eq(depfs_rmdir(fs, DEPFS_ROOT_INO, "rl"), 0);
    ck_assert_int_eq(depfs_rename(fs, DEPFS_ROOT_INO, "rl2", DEPFS_ROOT_INO, "rl3", 0), 0);
    ck_assert_int_eq(depfs_lookup(fs, DEPFS_ROOT_INO, "rl3", &st), 0);
    ck_assert_uint_eq(st.st_ino, d2);

    /* path API */
    ck_assert_int_eq(depfs_mkdir_path(fs, "/rl3/sub", 0700), 0);
    ck_assert_int_eq(depfs_mkdir_path(fs, "/rl3/sub", 0700), -EEXIST);
    ck_assert_int_eq(depfs_mkdir_path(fs, "/rl3/missing/sub", 0700), -ENOENT);
    depfs_fh_t *fh;
    ck_assert_int_eq(depfs_open(fs, "/rl3/sub/x", O_CREAT | O_RDWR, 0600, &fh), 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    uint64_t ino;
    ck_assert_int_eq(depfs_resolve(fs, "/rl3/./sub/../sub//x", &ino, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_int_eq(depfs_resolve(fs, "/rl3/sub/x/", &ino, &st), -ENOTDIR);
    ck_assert_int_eq(depfs_unlink_path(fs, "/rl3/sub/x"), 0);
    ck_assert_int_eq(depfs_resolve(fs, "/rl3/sub/x", &ino, &st), -ENOENT);
    ck_assert_int_eq(depfs_resolve(fs, "relative/path", &ino, &st), -EINVAL);
    depfs_unmount(fs);
}
END_TEST

START_TEST(test_symlinks)
{
    depfs_t *fs = mount_fs();
    uint64_t d = mkdir_ok(fs, DEPFS_ROOT_INO, "sl");
    uint64_t real = mkdir_ok(fs, d, "real");
    uint64_t f = create_ok(fs, real, "file", NULL);
    struct stat st;
    ck_assert_int_eq(depfs_symlink(fs, d, "rel", "real", NULL, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    uint64_t rel = st.st_ino;
    ck_assert_int_eq(depfs_symlink(fs, d, "abs", "/sl/real/file", NULL, &st), 0);
    ck_assert_int_eq(depfs_symlink(fs, d, "loop1", "loop2", NULL, &st), 0);
    ck_assert_int_eq(depfs_symlink(fs, d, "loop2", "loop1", NULL, &st), 0);

    char buf[64];
    ck_assert_int_eq(depfs_readlink(fs, rel, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "real");
    ck_assert_int_eq(depfs_readlink(fs, rel, buf, 4), -ENAMETOOLONG);
    ck_assert_int_lt(depfs_readlink(fs, f, buf, sizeof buf), 0);

    uint64_t ino;
    /* intermediate symlinks are followed, a final one is not (lstat) */
    ck_assert_int_eq(depfs_resolve(fs, "/sl/rel/file", &ino, &st), 0);
    ck_assert_uint_eq(ino, f);
    ck_assert_int_eq(depfs_resolve(fs, "/sl/abs", &ino, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    ck_assert_int_eq(depfs_resolve(fs, "/sl/rel/", &ino, &st), 0);
    ck_assert_uint_eq(ino, real);
    ck_assert_int_eq(depfs_resolve(fs, "/sl/loop1/x", &ino, &st), -ELOOP);
    /* open follows a final symlink, unless O_NOFOLLOW */
    depfs_fh_t *fh;
    ck_assert_int_eq(depfs_open(fs, "/sl/abs", O_RDONLY, 0, &fh), 0);
    ck_assert_uint_eq(depfs_fh_ino(fh), f);
    ck_assert_int_eq(depfs_close(fh), 0);
    ck_assert_int_eq(depfs_open(fs, "/sl/abs", O_RDONLY | O_NOFOLLOW, 0, &fh), -ELOOP);
    ck_assert_int_eq(depfs_open(fs, "/sl/loop1", O_RDONLY, 0, &fh), -ELOOP);
    ck_assert_int_eq(depfs_open(fs, "/sl/real", O_RDONLY, 0, &fh), -EISDIR);
    ck_assert_int_eq(depfs_unlink(fs, d, "rel"), 0);
    ck_assert_int_eq(depfs_resolve(fs, "/sl/real/file", &ino, &st), 0);
    depfs_unmount(fs);
}
END_TEST

START_TEST(test_xattrs)
{
    depfs_t *fs = mount_fs();
    uint64_t f = create_ok(fs, DEPFS_ROOT_INO, "xa", NULL);
    ck_assert_int_eq(depfs_setxattr(fs, f, "user.color", "blue", 4, 0), 0);
    ck_assert_int_eq(depfs_setxattr(fs, f, "user.shape", "round", 5, 0), 0);
    ck_assert_int_eq(depfs_setxattr(fs, f, "user.color", "red", 3, XATTR_CREATE), -EEXIST);
    ck_assert_int_eq(depfs_setxattr(fs, f, "user.none", "x", 1, XATTR_REPLACE), -ENODATA);
    char v[64];
    ck_assert_int_eq(depfs_getxattr(fs, f, "user.color", NULL, 0), 4);
    ck_assert_int_eq(depfs_getxattr(fs, f, "user.color", v, 2), -ERANGE);
    ck_assert_int_eq(depfs_getxattr(fs, f, "user.color", v, sizeof v), 4);
    ck_assert(memcmp(v, "blue", 4) == 0);
    ck_assert_int_eq(depfs_getxattr(fs, f, "user.missing", v, sizeof v), -ENODATA);

    char list[256];
    ssize_t need = depfs_listxattr(fs, f, NULL, 0);
    ck_assert_int_gt(need, 0);
    ck_assert_int_eq(depfs_listxattr(fs, f, list, 1), -ERANGE);
    ck_assert_int_eq(depfs_listxattr(fs, f, list, sizeof list), need);
    bool color = false, shape = false;
    for (ssize_t off = 0; off < need; off += (ssize_t)strlen(list + off) + 1) {
        color |= strcmp(list + off, "user.color") == 0;
        shape |= strcmp(list + off, "user.shape") == 0;
    }
    ck_assert(color && shape);
    ck_assert_int_eq(depfs_removexattr(fs, f, "user.color"), 0);
    ck_assert_int_eq(depfs_getxattr(fs, f, "user.color", v, sizeof v), -ENODATA);
    ck_assert_int_eq(depfs_removexattr(fs, f, "user.color"), -ENODATA);
    depfs_unmount(fs);
}
END_TEST

START_TEST(test_layout_xattr_inheritance)
{
    depfs_t *fs = mount_fs();
    depfs_layout_info li;
    uint64_t plain = create_ok(fs, DEPFS_ROOT_INO, "plain", NULL);
    ck_assert_int_eq(depfs_get_layout(fs, plain, &li), 0);
    ck_assert_uint_eq(li.n, 3); /* cluster default 3@2@4k */
    ck_assert_uint_eq(li.k, 2);
    ck_assert_uint_eq(li.stripe_unit, 4096);

    uint64_t d = mkdir_ok(fs, DEPFS_ROOT_INO, "lay");
    ck_assert_int_eq(depfs_setxattr(fs, d, DEPFS_LAYOUT_XATTR, "4@2", 3, 0), 0);
    ck_assert_int_eq(depfs_get_layout(fs, d, &li), 0);
    ck_assert_uint_eq(li.n, 4);
    ck_assert_uint_eq(li.k, 2);
    ck_assert_int_eq(depfs_setxattr(fs, d, DEPFS_LAYOUT_XATTR, "9@2", 3, 0), -EINVAL);
    ck_assert_str_ne(depfs_last_error(), "");
    ck_assert_int_eq(depfs_setxattr(fs, d, DEPFS_LAYOUT_XATTR, "2@3", 3, 0), -EINVAL);

    uint64_t f = create_ok(fs, d, "child", NULL);
    ck_assert_int_eq(depfs_get_layout(fs, f, &li), 0);
    ck_assert_uint_eq(li.n, 4);
    ck_assert_uint_eq(li.k, 2);
    for (unsigned i = 0; i < li.n; i++)
        for (unsigned j = i + 1; j < li.n; j++)
            ck_assert_uint_ne(li.servers[i], li.servers[j]);
    char v[64];
    ssize_t len = depfs_getxattr(fs, f, DEPFS_LAYOUT_XATTR, v, sizeof v - 1);
    ck_assert_int_gt(len, 0);
    v[len] = '\0';
    ck_assert_msg(strncmp(v, "4@2", 3) == 0, "file layout xattr '%s'", v);

    uint64_t sub = mkdir_ok(fs, d, "sub");
    uint64_t g = create_ok(fs, sub, "grandchild", NULL);
    ck_assert_int_eq(depfs_get_layout(fs, g, &li), 0);
    ck_assert_uint_eq(li.n, 4);
    /* explicit want beats the directory */
    depfs_layout_info want = { .n = 3, .k = 1, .stripe_unit = 8192 };
    uint64_t w = create_ok(fs, d, "wanted", &want);
    ck_assert_int_eq(depfs_get_layout(fs, w, &li), 0);
    ck_assert_uint_eq(li.n, 3);
    ck_assert_uint_eq(li.k, 1);
    ck_assert_uint_eq(li.stripe_unit, 8192);
    /* an empty file's layout may be set; an open handle sees it */
    depfs_fh_t *fh;
    ck_assert_int_eq(depfs_open_ino(fs, plain, O_RDWR, &fh), 0);
    ck_assert_int_eq(depfs_setxattr(fs, plain, DEPFS_LAYOUT_XATTR, "2@1", 3, 0), 0);
    ck_assert_int_eq(depfs_fh_layout(fh, &li), 0);
    ck_assert_uint_eq(li.n, 2);
    ck_assert_uint_eq(li.k, 1);
    ck_assert_int_eq(depfs_close(fh), 0);
    want = (depfs_layout_info){ .n = 5, .k = 2 };
    depfs_fh_t *no = NULL;
    struct stat st;
    ck_assert_int_eq(depfs_create(fs, d, "toowide", 0644, O_RDWR, NULL, &want, &st, &no), -EINVAL);
    ck_assert_ptr_nonnull(strstr(depfs_last_error(), "n (5)"));
    depfs_unmount(fs);
}
END_TEST

/* Expect a refused label with `part` in the message (after the label itself). */
static void label_refused(depfs_t *fs, const char *path, const char *part)
{
    depfs_fh_t *fh = NULL;
    int rc = depfs_open(fs, path, O_CREAT | O_RDWR, 0644, &fh);
    ck_assert_msg(rc == -EINVAL, "%s: %d", path, rc);
    ck_assert_ptr_null(fh);
    const char *err = depfs_last_error();
    const char *detail = strstr(err, "': ");
    ck_assert_msg(detail && strstr(detail, part), "%s: message '%s' lacks '%s'", path, err, part);
}

START_TEST(test_labels)
{
    depfs_t *fs = mount_fs();
    ck_assert_int_eq(depfs_mkdir_path(fs, "/lab", 0755), 0);
    depfs_fh_t *fh;
    depfs_layout_info li;
    int rc = depfs_open(fs, "depfs@4@2:/lab/f", O_CREAT | O_RDWR, 0644, &fh);
    ck_assert_msg(rc == 0, "%d %s", rc, depfs_last_error());
    ck_assert_int_eq(depfs_fh_layout(fh, &li), 0);
    ck_assert_uint_eq(li.n, 4);
    ck_assert_uint_eq(li.k, 2);
    ck_assert_int_eq(depfs_close(fh), 0);

    ck_assert_int_eq(depfs_open(fs, "DEPFS@4@3@8k:/lab/g", O_CREAT | O_RDWR, 0644, &fh), 0);
    ck_assert_int_eq(depfs_fh_layout(fh, &li), 0);
    ck_assert_uint_eq(li.n, 4);
    ck_assert_uint_eq(li.k, 3);
    ck_assert_uint_eq(li.stripe_unit, 8192);
    ck_assert_int_eq(depfs_close(fh), 0);

    ck_assert_int_eq(depfs_open(fs, "depfs:/lab/h", O_CREAT | O_RDWR, 0644, &fh), 0);
    ck_assert_int_eq(depfs_fh_layout(fh, &li), 0);
    ck_assert_uint_eq(li.n, 3);
    ck_assert_uint_eq(li.k, 2);
    ck_assert_int_eq(depfs_close(fh), 0);
    ck_assert_int_eq(depfs_open(fs, "depfs@4@2:/lab/h", O_CREAT | O_EXCL | O_RDWR, 0644, &fh), -EEXIST);
    ck_assert_int_eq(depfs_open(fs, "/lab/h", O_RDONLY, 0, &fh), 0);
    ck_assert_int_eq(depfs_close(fh), 0);

    label_refused(fs, "depfs@4@5:/lab/x", "k (5) > n (4)");
    label_refused(fs, "depfs@8@2:/lab/x", "n (8) > servers in the cluster (4)");
    label_refused(fs, "depfs@0@0:/lab/x", "n (0)");
    label_refused(fs, "depfs@4@2zz:/lab/x", "zz");
    label_refused(fs, "depfs@four@2:/lab/x", "four");
    label_refused(fs, "nfs@4@2:/lab/x", "nfs");
    label_refused(fs, "depfs@4@2:lab/x", "lab/x");
    label_refused(fs, "depfs@4@2@1000:/lab/x", "1000");
    /* nothing was created by the refused opens */
    struct stat st;
    ck_assert_int_eq(depfs_resolve(fs, "/lab/x", NULL, &st), -ENOENT);
    /* mkdir with a label sets the directory's layout */
    ck_assert_int_eq(depfs_mkdir_path(fs, "depfs@4@1:/lab/d41", 0755), 0);
    ck_assert_int_eq(depfs_open(fs, "/lab/d41/f", O_CREAT | O_WRONLY, 0644, &fh), 0);
    ck_assert_int_eq(depfs_fh_layout(fh, &li), 0);
    ck_assert_uint_eq(li.n, 4);
    ck_assert_uint_eq(li.k, 1);
    ck_assert_int_eq(depfs_close(fh), 0);
    depfs_unmount(fs);
}
END_TEST

START_TEST(test_setattr_and_open_sizes)
{
    depfs_t *fs = mount_fs();
    uint64_t f = create_ok(fs, DEPFS_ROOT_INO, "sa", NULL);
    struct stat in, out;
    memset(&in, 0, sizeof in);
    in.st_mode = 0600;
    ck_assert_int_eq(depfs_setattr(fs, f, &in, DEPFS_SET_MODE, &out), 0);
    ck_assert_uint_eq(out.st_mode & 07777, 0600);
    ck_assert(S_ISREG(out.st_mode));
    in.st_mtim.tv_sec = 1000000;
    in.st_mtim.tv_nsec = 5;
    ck_assert_int_eq(depfs_setattr(fs, f, &in, DEPFS_SET_MTIME, &out), 0);
    ck_assert_int_eq(out.st_mtim.tv_sec, 1000000);
    ck_assert_int_eq(out.st_mtim.tv_nsec, 5);

    /* growing truncate of a closed file: size at the MDS, holes */
    in.st_size = 10000;
    int rc = depfs_setattr(fs, f, &in, DEPFS_SET_SIZE, &out);
    ck_assert_msg(rc == 0, "truncate: %d %s", rc, depfs_last_error());
    ck_assert_int_eq(out.st_size, 10000);
    ck_assert_int_eq(depfs_getattr(fs, f, &out), 0);
    ck_assert_int_eq(out.st_size, 10000);
    in.st_size = 100;
    ck_assert_int_eq(depfs_setattr(fs, f, &in, DEPFS_SET_SIZE, &out), 0);
    ck_assert_int_eq(out.st_size, 100);
    uint64_t d = mkdir_ok(fs, DEPFS_ROOT_INO, "sadir");
    ck_assert_int_eq(depfs_setattr(fs, d, &in, DEPFS_SET_SIZE, &out), -EISDIR);

    /* O_TRUNC empties a non-empty file */
    depfs_fh_t *fh;
    ck_assert_int_eq(depfs_open_ino(fs, f, O_RDWR | O_TRUNC, &fh), 0);
    ck_assert_int_eq(depfs_fstat(fh, &out), 0);
    ck_assert_int_eq(out.st_size, 0);

    /* A size grown in this client (as a write would) shows in getattr at
     * once and reaches the MDS at close. */
    dc_inode *ino = fh->inode;
    pthread_mutex_lock(&ino->lock);
    ino->size = 5000;
    ino->written_end = 5000;
    ino->size_dirty = true;
    ino->mtime_ns = 0;
    pthread_mutex_unlock(&ino->lock);
    ck_assert_int_eq(depfs_getattr(fs, f, &out), 0);
    ck_assert_int_eq(out.st_size, 5000);
    depfs_t *other = mount_fs();
    depfs_fh_t *early;
    ck_assert_int_eq(depfs_open_ino(other, f, O_RDONLY, &early), 0);
    ck_assert_int_eq(depfs_getattr(other, f, &out), 0);
    ck_assert_int_eq(out.st_size, 0); /* not committed yet */
    ck_assert_int_eq(depfs_close(fh), 0);
    /* A handle opened before the close still has the old view, learns the
     * size through fstat, and then reads up to it (holes: zeros). */
    char probe[16];
    ck_assert_int_eq(depfs_read(early, probe, sizeof probe, 4000), 0);
    ck_assert_int_eq(depfs_fstat(early, &out), 0);
    ck_assert_int_eq(out.st_size, 5000);
    ck_assert_int_eq(depfs_read(early, probe, sizeof probe, 4000), (ssize_t)sizeof probe);
    ck_assert_int_eq(depfs_getattr(other, f, &out), 0);
    ck_assert_int_eq(out.st_size, 5000); /* close-to-open */
    /* ...and a truncate by another client shrinks its view too (it has no
     * dirty size of its own): it must not report or read the old size. */
    in.st_size = 1000;
    ck_assert_int_eq(depfs_setattr(fs, f, &in, DEPFS_SET_SIZE, &out), 0);
    ck_assert_int_eq(depfs_fstat(early, &out), 0);
    ck_assert_int_eq(out.st_size, 1000);
    ck_assert_int_eq(depfs_read(early, probe, sizeof probe, 4000), 0);
    ck_assert_int_eq(depfs_close(early), 0);
    ck_assert_int_eq(depfs_open_ino(other, f, O_RDONLY, &fh), 0);
    ck_assert_int_eq(depfs_ftruncate(fh, 0), -EINVAL);
    ck_assert_int_eq(depfs_close(fh), 0);
    depfs_unmount(other);
    depfs_unmount(fs);
}
END_TEST

START_TEST(test_mds_restart)
{
    depfs_t *fs = mount_fs();
    uint64_t client = depfs_client_id(fs);
    uint64_t d = mkdir_ok(fs, DEPFS_ROOT_INO, "restart");
    td_mds_stop(cl);
    ck_assert(td_mds_start(cl));
    struct stat st;
    int rc = depfs_lookup(fs, DEPFS_ROOT_INO, "restart", &st);
    ck_assert_msg(rc == 0, "lookup after MDS restart: %d %s", rc, depfs_last_error());
    ck_assert_uint_eq(st.st_ino, d);
    create_ok(fs, d, "after", NULL);
    ck_assert_uint_eq(depfs_client_id(fs), client);
    depfs_unmount(fs);
}
END_TEST


/* POSIX: a file unlinked while open keeps its data until the last close. */
START_TEST(test_unlink_while_open)
{
    depfs_t *fs = mount_fs();
    enum { LEN = 50000 };
    static uint8_t buf[LEN], back[LEN];
    for (unsigned i = 0; i < LEN; i++)
        buf[i] = (uint8_t)(i * 7 + 3);
    depfs_fh_t *fh;
    ck_assert_int_eq(depfs_open(fs, "depfs@3@2:/uwo", O_CREAT | O_RDWR, 0644, &fh), 0);
    ck_assert_int_eq(depfs_write(fh, buf, LEN, 0), LEN);
    struct stat st;
    ck_assert_int_eq(depfs_fstat(fh, &st), 0);
    ck_assert_int_eq(st.st_size, LEN);
    ck_assert_int_eq(depfs_flush(fh), 0);
    ck_assert_int_eq(depfs_unlink_path(fs, "/uwo"), 0);
    ck_assert_int_eq(depfs_resolve(fs, "/uwo", NULL, &st), -ENOENT);
    ck_assert_int_eq(depfs_read(fh, back, LEN, 0), LEN);
    ck_assert(memcmp(buf, back, LEN) == 0);
    ck_assert_int_eq(depfs_fstat(fh, &st), 0);
    ck_assert_int_eq(st.st_size, LEN);
    ck_assert_int_eq(depfs_close(fh), 0);

    /* O_APPEND and O_TRUNC via the path API. */
    ck_assert_int_eq(depfs_open(fs, "/uwo2", O_CREAT | O_WRONLY | O_APPEND, 0644, &fh), 0);
    ck_assert_int_eq(depfs_write(fh, buf, 1000, 0), 1000);
    ck_assert_int_eq(depfs_write(fh, buf, 1000, 0), 1000);
    ck_assert_int_eq(depfs_close(fh), 0);
    ck_assert_int_eq(depfs_resolve(fs, "/uwo2", NULL, &st), 0);
    ck_assert_int_eq(st.st_size, 2000);
    ck_assert_int_eq(depfs_open(fs, "/uwo2", O_RDWR | O_TRUNC, 0, &fh), 0);
    ck_assert_int_eq(depfs_read(fh, back, 10, 0), 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    ck_assert_int_eq(depfs_resolve(fs, "/uwo2", NULL, &st), 0);
    ck_assert_int_eq(st.st_size, 0);
    ck_assert_int_eq(depfs_unlink_path(fs, "/uwo2"), 0);
    depfs_unmount(fs);
}
END_TEST


/* What a client's size view holds when another client truncates a file it
 * has open: the end of its own uncommitted writes, never the size it saw
 * before. Its size commit extends the file to where it wrote, not to its
 * old view (which would bring the cut bytes back as zeros); its reopen,
 * stat and lookup of the file show the truncated size. */
static void fill_range(uint8_t *buf, size_t len, uint8_t c) { memset(buf, c, len); }

START_TEST(test_size_view_after_truncate_elsewhere)
{
    enum { OLD = 100000, CUT = 10000, AT = 50000, LEN = 1000, CUT2 = 5000 };
    static uint8_t buf[OLD], back[OLD];
    depfs_t *a = mount_fs(), *b = mount_fs();
    depfs_fh_t *keep, *fh;
    struct stat st, in;
    ck_assert_int_eq(depfs_open(a, "depfs@3@2@4k:/szview", O_CREAT | O_RDWR, 0644, &keep), 0);
    uint64_t ino = depfs_fh_ino(keep);
    fill_range(buf, OLD, 'a');
    ck_assert_int_eq(depfs_write(keep, buf, OLD, 0), OLD);
    ck_assert_int_eq(depfs_flush(keep), 0); /* size OLD at the MDS; keep stays open */

    /* a writes inside its old view (buffered) while b cuts the file */
    ck_assert_int_eq(depfs_open_ino(a, ino, O_RDWR, &fh), 0);
    fill_range(buf, LEN, 'b');
    ck_assert_int_eq(depfs_write(fh, buf, LEN, AT), LEN);
    memset(&in, 0, sizeof in);
    in.st_size = CUT;
    ck_assert_int_eq(depfs_setattr(b, ino, &in, DEPFS_SET_SIZE, &st), 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    ck_assert_int_eq(depfs_getattr(b, ino, &st), 0);
    ck_assert_int_eq(st.st_size, AT + LEN); /* not OLD */
    ck_assert_int_eq(depfs_open_ino(b, ino, O_RDONLY, &fh), 0);
    ck_assert_int_eq(depfs_read(fh, back, OLD, 0), AT + LEN);
    for (unsigned i = 0; i < AT + LEN; i++) {
        uint8_t want = i < CUT ? 'a' : i < AT ? 0 : 'b';
        ck_assert_msg(back[i] == want, "byte %u: %u, want %u", i, back[i], want);
    }
    ck_assert_int_eq(depfs_close(fh), 0);

    /* b cuts again; a (its inode still open here, clean) reopens, stats and
     * looks the file up: the cut size everywhere, nothing read beyond it */
    in.st_size = CUT2;
    ck_assert_int_eq(depfs_setattr(b, ino, &in, DEPFS_SET_SIZE, &st), 0);
    ck_assert_int_eq(depfs_lookup(a, DEPFS_ROOT_INO, "szview", &st), 0);
    ck_assert_int_eq(st.st_size, CUT2);
    ck_assert_int_eq(depfs_open_ino(a, ino, O_RDONLY, &fh), 0);
    ck_assert_int_eq(depfs_fstat(fh, &st), 0);
    ck_assert_int_eq(st.st_size, CUT2);
    ck_assert_int_eq(depfs_read(fh, back, OLD, 0), CUT2);
    ck_assert_int_eq(depfs_close(fh), 0);
    ck_assert_int_eq(depfs_close(keep), 0);
    ck_assert_int_eq(depfs_getattr(b, ino, &st), 0);
    ck_assert_int_eq(st.st_size, CUT2); /* keep's close commits nothing */
    depfs_unmount(b);
    depfs_unmount(a);
}
END_TEST

/* The attributes an open's reply gave answer the one question that
 * follows it (the FUSE kernel's, after depfs-fuse made it forget what it
 * had cached), and only while this client changed nothing since. */
START_TEST(test_open_attr_answers_once)
{
    enum { LEN = 3000, AGE_MS = 60000, STALE_US = 2000 };
    static uint8_t buf[LEN];
    depfs_t *fs = mount_fs(), *other = mount_fs();
    depfs_fh_t *fh;
    struct stat st, in;
    ck_assert_int_eq(depfs_open(other, "/oattr", O_CREAT | O_RDWR, 0644, &fh), 0);
    uint64_t ino = depfs_fh_ino(fh);
    ck_assert_int_eq(depfs_write(fh, buf, LEN, 0), LEN);
    ck_assert_int_eq(depfs_close(fh), 0);
    ck_assert_int_eq(depfs_open_attr_take(fs, ino, AGE_MS, &st), -ENOENT); /* not open */

    ck_assert_int_eq(depfs_open_ino(fs, ino, O_RDWR, &fh), 0);
    ck_assert_int_eq(depfs_open_attr_take(fs, ino, AGE_MS, &st), 0);
    ck_assert_int_eq(st.st_size, LEN);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_int_eq(depfs_open_attr_take(fs, ino, AGE_MS, &st), -ENOENT); /* once */
    ck_assert_int_eq(depfs_close(fh), 0);

    /* a write here since the open: the reply's size is not the file's */
    ck_assert_int_eq(depfs_open_ino(fs, ino, O_RDWR, &fh), 0);
    ck_assert_int_eq(depfs_write(fh, buf, LEN, LEN), LEN);
    ck_assert_int_eq(depfs_open_attr_take(fs, ino, AGE_MS, &st), -ENOENT);
    ck_assert_int_eq(depfs_close(fh), 0);

    /* a change of its attributes here since the open */
    ck_assert_int_eq(depfs_open_ino(fs, ino, O_RDONLY, &fh), 0);
    memset(&in, 0, sizeof in);
    in.st_mode = 0600;
    ck_assert_int_eq(depfs_setattr(fs, ino, &in, DEPFS_SET_MODE, &st), 0);
    ck_assert_int_eq(depfs_open_attr_take(fs, ino, AGE_MS, &st), -ENOENT);
    ck_assert_int_eq(depfs_close(fh), 0);

    /* too old for the taker's bound; an O_TRUNC open's size is 0 */
    ck_assert_int_eq(depfs_open_ino(fs, ino, O_RDONLY, &fh), 0);
    usleep(STALE_US);
    ck_assert_int_eq(depfs_open_attr_take(fs, ino, 0, &st), -ENOENT);
    ck_assert_int_eq(depfs_close(fh), 0);
    ck_assert_int_eq(depfs_open_ino(fs, ino, O_RDWR | O_TRUNC, &fh), 0);
    ck_assert_int_eq(depfs_open_attr_take(fs, ino, AGE_MS, &st), -ENOENT);
    ck_assert_int_eq(depfs_fstat(fh, &st), 0);
    ck_assert_int_eq(st.st_size, 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    ck_assert_int_eq(depfs_open_attr_take(fs, 0, AGE_MS, &st), -EINVAL);
    depfs_unmount(other);
    depfs_unmount(fs);
}
END_TEST

/* The keeper renews the MDS's hold of a file open here that no request
 * touches (an idle handle of a file unlinked meanwhile keeps its data),
 * once it is in its second half, and only while the file is open. */
static uint64_t hold_expiry(depfs_t *fs, uint64_t ino)
{
    uint64_t e = 0;
    pthread_mutex_lock(&fs->caps_lock);
    for (unsigned i = 0; i < fs->caps_slots; i++)
        if (fs->caps[i].ino == ino)
            e = fs->caps[i].expires_s;
    pthread_mutex_unlock(&fs->caps_lock);
    return e;
}

static void hold_age(depfs_t *fs, uint64_t ino, uint64_t expires_s)
{
    pthread_mutex_lock(&fs->caps_lock);
    for (unsigned i = 0; i < fs->caps_slots; i++)
        if (fs->caps[i].ino == ino)
            fs->caps[i].expires_s = expires_s;
    pthread_mutex_unlock(&fs->caps_lock);
}

/* One purge pass by fs: how many files it purged (none failing). */
static unsigned purge_once(depfs_t *fs)
{
    uint64_t cursor = 0;
    depfs_purge_report rep;
    ck_assert_int_eq(depfs_purge_pass(fs, WIRE_PURGE_LIST_MAX, &cursor, &rep), 0);
    ck_assert_uint_eq(rep.failed, 0);
    return rep.purged;
}

/* Last closes give the holds back together, without a round trip each;
 * an unlink here sends what is queued first, so the files this client
 * closed and then unlinked are purgeable at once (a client killed right
 * after leaves none held); depfs_release_holds sends the queue at once. */
START_TEST(test_releases_batched)
{
    enum { NF = 200 };
    depfs_t *fs = mount_fs(), *other = mount_fs();
    uint64_t root = 0;
    char name[32];
    ck_assert_int_eq(depfs_resolve(fs, "/", &root, NULL), 0);
    mkdir_ok(fs, root, "rel");
    purge_all(other); /* what earlier tests left queued */
    uint64_t before = atomic_load(&fs->releases_batches);
    for (unsigned i = 0; i < NF; i++) {
        depfs_fh_t *fh;
        snprintf(name, sizeof name, "/rel/f%u", i);
        ck_assert_int_eq(depfs_open(fs, name, O_CREAT | O_RDWR, 0644, &fh), 0);
        ck_assert_int_eq(depfs_write(fh, name, sizeof name, 0), (ssize_t)sizeof name);
        ck_assert_int_eq(depfs_close(fh), 0);
    }
    for (unsigned i = 0; i < NF; i++) {
        snprintf(name, sizeof name, "/rel/f%u", i);
        ck_assert_int_eq(depfs_unlink_path(fs, name), 0);
    }
    uint64_t batches = atomic_load(&fs->releases_batches) - before;
    ck_assert_msg(batches > 0 && batches <= NF / 2, "%llu MDS_RELEASE for %u closes",
                  (unsigned long long)batches, NF);
    ck_assert_uint_eq(purge_once(other), NF);
    /* closed and unlinked here at once: purgeable at once (the unlink sent
     * the queue, well within the releaser's delay) */
    depfs_fh_t *fh;
    ck_assert_int_eq(depfs_open(fs, "/rel/last", O_CREAT | O_RDWR, 0644, &fh), 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    ck_assert_int_eq(depfs_unlink_path(fs, "/rel/last"), 0);
    ck_assert_uint_eq(purge_once(other), 1);
    /* unlinked by another client: purgeable once this one sends its queue */
    ck_assert_int_eq(depfs_open(fs, "/rel/now", O_CREAT | O_RDWR, 0644, &fh), 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    ck_assert_int_eq(depfs_unlink_path(other, "/rel/now"), 0);
    depfs_release_holds(fs);
    ck_assert_uint_eq(purge_once(other), 1);
    depfs_unmount(other);
    depfs_unmount(fs);
}
END_TEST

/* An fsync commits the size with the allocation its IO_FSYNC replies
 * carry (st_blocks), with no IO_EXTENTS round of its own: there was one
 * per fsync after writes. Another client sees st_blocks cover the data
 * after each fsync; a flush still measures with a round. */
START_TEST(test_fsync_reports_allocation)
{
    enum { CHUNK = 4 * 2 * 4096 }; /* 4 stripes of 4@2@4k */
    static uint8_t buf[CHUNK];
    memset(buf, 0x5a, sizeof buf);
    depfs_t *fs = mount_fs(), *other = mount_fs();
    depfs_fh_t *fh;
    struct stat st;
    ck_assert_int_eq(depfs_open(fs, "depfs@4@2@4k:/fsync_alloc", O_CREAT | O_RDWR, 0644, &fh), 0);
    uint64_t ino = depfs_fh_ino(fh), rounds = atomic_load(&fs->alloc_rounds);
    for (unsigned i = 1; i <= 3; i++) {
        ck_assert_int_eq(depfs_write(fh, buf, CHUNK, (uint64_t)(i - 1) * CHUNK), CHUNK);
        ck_assert_int_eq(depfs_fsync(fh), 0);
        ck_assert_int_eq(depfs_getattr(other, ino, &st), 0);
        ck_assert_uint_eq((uint64_t)st.st_size, (uint64_t)i * CHUNK);
        ck_assert_uint_eq((uint64_t)st.st_blocks, (uint64_t)i * CHUNK / 512); /* data's share */
    }
    uint64_t sent = atomic_load(&fs->alloc_rounds) - rounds;
    ck_assert_uint_eq(sent, 0);
    ck_assert_int_eq(depfs_write(fh, buf, CHUNK, 3 * CHUNK), CHUNK);
    ck_assert_int_eq(depfs_flush(fh), 0);
    sent = atomic_load(&fs->alloc_rounds) - rounds;
    ck_assert_uint_eq(sent, 1);
    ck_assert_int_eq(depfs_getattr(other, ino, &st), 0);
    ck_assert_uint_eq((uint64_t)st.st_blocks, 4u * CHUNK / 512);
    ck_assert_int_eq(depfs_close(fh), 0);
    depfs_unmount(other);
    depfs_unmount(fs);
}
END_TEST

START_TEST(test_keeper_renews_idle_holds)
{
    depfs_t *fs = mount_fs(), *other = mount_fs();
    static const uint8_t buf[4096] = { 7 };
    depfs_fh_t *fh;
    struct stat st;
    ck_assert_int_eq(depfs_open(fs, "/kept", O_CREAT | O_RDWR, 0644, &fh), 0);
    ck_assert_int_eq(depfs_write(fh, buf, sizeof buf, 0), (ssize_t)sizeof buf);
    ck_assert_int_eq(depfs_flush(fh), 0);
    ck_assert_int_eq(depfs_fstat(fh, &st), 0);
    uint64_t ino = st.st_ino, now = (uint64_t)time(NULL);
    ck_assert_int_eq(depfs_unlink_path(other, "/kept"), 0);
    /* fresh: the keeper leaves it alone */
    uint64_t fresh = hold_expiry(fs, ino);
    ck_assert_uint_gt(fresh, now + AUTH_CAP_TTL_S / 2u);
    ck_assert_uint_eq(dc_keeper_pass(fs), 1);
    ck_assert_uint_eq(hold_expiry(fs, ino), fresh);
    /* in its second half with no request since: renewed at the MDS */
    hold_age(fs, ino, now + 5);
    ck_assert_uint_eq(dc_keeper_pass(fs), 1);
    ck_assert_uint_ge(hold_expiry(fs, ino), now + AUTH_CAP_TTL_S);
    /* the file is still there for the handle after a purge pass */
    purge_all(other);
    uint8_t back[sizeof buf];
    ck_assert_int_eq(depfs_read(fh, back, sizeof back, 0), (ssize_t)sizeof back);
    ck_assert(memcmp(buf, back, sizeof buf) == 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    /* closed: nothing left to keep */
    ck_assert_uint_eq(dc_keeper_pass(fs), 0);
    ck_assert_uint_eq(hold_expiry(fs, ino), 0);
    depfs_unmount(other);
    depfs_unmount(fs);
}
END_TEST

/* More files open at once than the capability table's first size, all
 * unlinked by another client: every one keeps its hold (its entry is never
 * evicted for another's: the table grows), the keeper renews them all, and
 * after a purge pass each handle still reads its bytes. */
#define MANY_OPEN (DC_CAPS_SLOTS_MIN + 100u)
#define MANY_WRITE_EVERY 97u /* files that get bytes (the rest stay empty) */
START_TEST(test_many_open_files_keep_their_holds)
{
    depfs_t *fs = mount_fs(), *other = mount_fs();
    depfs_fh_t **fh = calloc(MANY_OPEN, sizeof(*fh));
    uint64_t *ino = calloc(MANY_OPEN, sizeof(*ino));
    ck_assert(fh && ino);
    ck_assert_int_eq(depfs_mkdir_path(fs, "/many", 0755), 0);
    char path[64];
    struct stat st;
    for (unsigned i = 0; i < MANY_OPEN; i++) {
        snprintf(path, sizeof path, "/many/f%u", i);
        ck_assert_int_eq(depfs_open(fs, path, O_CREAT | O_RDWR, 0644, &fh[i]), 0);
        if (i % MANY_WRITE_EVERY == 0) {
            ck_assert_int_eq(depfs_write(fh[i], &i, sizeof i, 0), (ssize_t)sizeof i);
            ck_assert_int_eq(depfs_flush(fh[i]), 0);
        }
        ck_assert_int_eq(depfs_fstat(fh[i], &st), 0);
        ino[i] = st.st_ino;
    }
    uint64_t now = (uint64_t)time(NULL);
    for (unsigned i = 0; i < MANY_OPEN; i++)
        ck_assert_msg(hold_expiry(fs, ino[i]) > now, "file %u lost its hold's entry", i);
    ck_assert_uint_ge(fs->caps_slots, MANY_OPEN);
    /* every hold in its second half: one keeper pass renews them all */
    for (unsigned i = 0; i < MANY_OPEN; i++) {
        hold_age(fs, ino[i], now + 5);
        snprintf(path, sizeof path, "/many/f%u", i);
        ck_assert_int_eq(depfs_unlink_path(other, path), 0);
    }
    ck_assert_uint_eq(dc_keeper_pass(fs), MANY_OPEN);
    for (unsigned i = 0; i < MANY_OPEN; i++)
        ck_assert_msg(hold_expiry(fs, ino[i]) >= now + AUTH_CAP_TTL_S, "file %u not renewed", i);
    purge_all(other);
    for (unsigned i = 0; i < MANY_OPEN; i += MANY_WRITE_EVERY) {
        unsigned back = ~i;
        ck_assert_int_eq(depfs_read(fh[i], &back, sizeof back, 0), (ssize_t)sizeof back);
        ck_assert_uint_eq(back, i);
    }
    for (unsigned i = 0; i < MANY_OPEN; i++)
        ck_assert_int_eq(depfs_close(fh[i]), 0);
    ck_assert_uint_eq(dc_keeper_pass(fs), 0);
    for (unsigned i = 0; i < MANY_OPEN; i++)
        ck_assert_uint_eq(hold_expiry(fs, ino[i]), 0);
    purge_all(other);
    ck_assert_int_eq(depfs_rmdir(other, DEPFS_ROOT_INO, "many"), 0);
    free(fh);
    free(ino);
    depfs_unmount(other);
    depfs_unmount(fs);
}
END_TEST

/* A mount default beats the cluster default, not a directory's layout. */
START_TEST(test_mount_default_layout)
{
    depfs_options o;
    memset(&o, 0, sizeof o);
    o.config_path = cl->conf;
    o.default_n = 4;
    o.default_k = 3;
    depfs_t *fs = NULL;
    ck_assert_int_eq(depfs_mount(&o, &fs), 0);
    depfs_fh_t *fh;
    depfs_layout_info li;
    ck_assert_int_eq(depfs_mkdir_path(fs, "depfs@2@1:/md", 0755), 0);
    ck_assert_int_eq(depfs_open(fs, "/mdfile", O_CREAT | O_RDWR, 0644, &fh), 0);
    ck_assert_int_eq(depfs_fh_layout(fh, &li), 0);
    ck_assert_uint_eq(li.n, 4);
    ck_assert_uint_eq(li.k, 3);
    ck_assert_int_eq(depfs_close(fh), 0);
    ck_assert_int_eq(depfs_open(fs, "/md/f", O_CREAT | O_RDWR, 0644, &fh), 0);
    ck_assert_int_eq(depfs_fh_layout(fh, &li), 0);
    ck_assert_uint_eq(li.n, 2);
    ck_assert_uint_eq(li.k, 1);
    ck_assert_int_eq(depfs_close(fh), 0);
    depfs_unmount(fs);

    o.default_n = 9;
    fs = NULL;
    ck_assert_int_eq(depfs_mount(&o, &fs), -EINVAL);
    ck_assert_ptr_null(fs);
    ck_assert_ptr_nonnull(strstr(depfs_last_error(), "n (9)"));
}
END_TEST

typedef struct worker {
    depfs_t *fs;
    unsigned id;
    int failures;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    char name[32];
    snprintf(name, sizeof name, "t%u", w->id);
    struct stat st;
    if (depfs_mkdir(w->fs, DEPFS_ROOT_INO, name, 0755, NULL, &st) < 0)
        w->failures++;
    uint64_t d = st.st_ino;
    for (unsigned i = 0; i < THREAD_FILES; i++) {
        snprintf(name, sizeof name, "f%u", i);
        depfs_fh_t *fh;
        if (depfs_create(w->fs, d, name, 0644, O_RDWR | O_EXCL, NULL, NULL, &st, &fh) < 0) {
            w->failures++;
            continue;
        }
        if (depfs_close(fh) < 0 || depfs_lookup(w->fs, d, name, &st) < 0)
            w->failures++;
        if (i % 2 == 0 && depfs_unlink(w->fs, d, name) < 0)
            w->failures++;
    }
    listing l = { 0 };
    if (depfs_readdir(w->fs, d, 0, collect, &l) < 0 || l.count != 2 + THREAD_FILES / 2)
        w->failures++;
    return NULL;
}

START_TEST(test_threads)
{
    depfs_t *fs = mount_fs();
    pthread_t th[THREADS];
    worker w[THREADS];
    for (unsigned i = 0; i < THREADS; i++) {
        w[i] = (worker){ .fs = fs, .id = i };
        ck_assert_int_eq(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
    }
    for (unsigned i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(w[i].failures, 0);
    }
    depfs_unmount(fs);
}
END_TEST

static Suite *core_suite(void)
{
    Suite *s = suite_create("client_core");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, TEST_TIMEOUT_S);
    tcase_add_test(tc, test_mount_and_status);
    tcase_add_test(tc, test_mkdir_create_lookup_readdir);
    tcase_add_test(tc, test_dir_attr_after_change);
    tcase_add_test(tc, test_rename_link_unlink);
    tcase_add_test(tc, test_symlinks);
    tcase_add_test(tc, test_xattrs);
    tcase_add_test(tc, test_layout_xattr_inheritance);
    tcase_add_test(tc, test_labels);
    tcase_add_test(tc, test_setattr_and_open_sizes);
    tcase_add_test(tc, test_unlink_while_open);
    tcase_add_test(tc, test_size_view_after_truncate_elsewhere);
    tcase_add_test(tc, test_open_attr_answers_once);
    tcase_add_test(tc, test_releases_batched);
    tcase_add_test(tc, test_fsync_reports_allocation);
    tcase_add_test(tc, test_keeper_renews_idle_holds);
    tcase_add_test(tc, test_many_open_files_keep_their_holds);
    tcase_add_test(tc, test_mount_default_layout);
    tcase_add_test(tc, test_mds_restart);
    tcase_add_test(tc, test_threads);
    suite_add_tcase(s, tc);
    /* thousands of synced creates for one directory larger than a page */
    TCase *sa = tcase_create("statahead");
    tcase_set_timeout(sa, SA_TEST_TIMEOUT_S);
    tcase_add_test(sa, test_statahead_lookups);
    tcase_add_test(sa, test_statahead_page_across_changes);
    tcase_add_test(sa, test_statahead_random_lookups);
    tcase_add_test(sa, test_statahead_no_xattrs);
    tcase_add_test(sa, test_readdir_plus);
    tcase_add_test(sa, test_statahead_after_migrate);
    tcase_add_test(sa, test_statahead_gone_parent);
    tcase_add_test(sa, test_statahead_after_a_move_seen);
    tcase_add_test(tc, test_names_epoch_through_held_names);
    tcase_add_test(tc, test_names_pass_per_caller);
    suite_add_tcase(s, sa);
    return s;
}

int main(void)
{
    cl = td_cluster_shared();
    td_cluster_up(cl, N_IOS, CORE_CONF);
    setenv("DEPFS_CONF", cl->conf, 1);
    SRunner *sr = srunner_create(core_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    cl->keep_dir = failed != 0;
    td_cluster_down(cl);
    return failed ? 1 : 0;
}
