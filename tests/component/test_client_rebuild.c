/* test_client_rebuild.c - libdepfs recovery operations against real daemons
 * (tests/lib/cluster.h: depfs-mds + 8 depfs-ioserver on 127.0.0.1):
 *   - depfs_rebuild_file restores, byte for byte, a strip file deleted by
 *     hand while its server was down (restarted with --rebuild), then
 *     depfs_server_rejoin brings it up and scrub is clean;
 *   - writes while a server is down leave dirty records; after a --rebuild
 *     restart depfs_server_rejoin rebuilds exactly those files and
 *     everything reads back; a file removed meanwhile stays in the purge
 *     queue while that server is down (depfs_purge_pass leaves it) and
 *     loses its strip there too once the server is back;
 *   - depfs_files_on_server finds every file whose layout has the server,
 *     hard links once;
 *   - an orphan lock taken by hand over the RPC layer (never released) with
 *     a half-done write under it: depfs_repair_orphan_lock makes parity
 *     match again, frees the stripes, and is idempotent;
 *   - on n-k=1, an orphan's unit in doubt plus an untrusted unit: freed
 *     when all units are one codeword, refused (left locked) when not;
 *   - a write locked everywhere that landed nowhere beside a stale data
 *     unit: freed when the trusted units are one codeword, refused when
 *     one of them took the write;
 *   - a write, and a degraded read, into stripes another owner holds wait
 *     at the servers once NACKed, and go through in one more try when
 *     they are released;
 *   - a client behind the cluster epoch refreshes and redoes its writes;
 *   - SEEK_DATA/SEEK_HOLE (depfs_lseek) never claim a hole over a unit a
 *     server missed while down (REBUILDING, or UP with dirty records naming
 *     it), and are exact again after its rejoin;
 *   - `depfs reconstruct` (the real CLI) refills an empty replacement,
 *     resumes from its state file, --restart ignores it, then the server
 *     is up and every file scrubs clean; an up server is refused.
 * Each case gets its own cluster (they kill and restart servers). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "depfs_admin.h"
#include "depfs.pb-c.h"
#include "layout.h"
#include "recover.h"
#include "rpc.h"
#include "tests/lib/bg_write.h"
#include "tests/lib/cluster.h"
#include "tests/lib/rng.h"

#define T_SERVERS 8u
#define T_TEST_TIMEOUT_S 60
#define T_LEASE_WAIT_US 500000u /* > lock_lease_ms of the orphan case */
#define T_ORPHAN_CLIENT 777777u
#define T_ORPHAN_OP 42u

static td_cluster g_cl;

static void cluster_up(void) { td_cluster_up(&g_cl, T_SERVERS, "lock_lease_ms = 300\n"); }
static void cluster_down(void) { td_cluster_down(&g_cl); }

static depfs_t *mount_fs(void) { return td_mount(&g_cl); }

/* ------------------------------------------------------------- helpers */

/* Create (or open) path, write len random bytes at off into it and into
 * model; returns the inode. */
static uint64_t write_file(depfs_t *fs, const char *path, uint8_t *model, size_t off, size_t len)
{
    depfs_fh_t *fh = NULL;
    int rc = depfs_open(fs, path, O_CREAT | O_RDWR, 0644, &fh);
    ck_assert_msg(rc == 0, "open %s: %s (%s)", path, strerror(-rc), depfs_last_error());
    rnd_fill(model + off, len);
    ck_assert_int_eq(depfs_write(fh, model + off, len, off), (ssize_t)len);
    rc = depfs_fsync(fh);
    ck_assert_msg(rc == 0, "fsync %s: %s (%s)", path, strerror(-rc), depfs_last_error());
    uint64_t ino = depfs_fh_ino(fh);
    ck_assert_int_eq(depfs_close(fh), 0);
    return ino;
}

static void check_content(depfs_t *fs, const char *path, const uint8_t *model, size_t size)
{
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, path, O_RDONLY, 0, &fh), 0);
    uint8_t *got = malloc(size + 64);
    ck_assert_ptr_nonnull(got);
    ssize_t n = depfs_read(fh, got, size + 64, 0);
    ck_assert_msg(n == (ssize_t)size, "%s: read %zd, want %zu (%s)", path, n, size,
                  depfs_last_error());
    ck_assert_msg(memcmp(got, model, size) == 0, "%s: content differs", path);
    free(got);
    ck_assert_int_eq(depfs_close(fh), 0);
}

static void scrub_clean(depfs_t *fs, uint64_t ino)
{
    depfs_scrub_report rep;
    int rc = depfs_scrub_ino(fs, ino, false, &rep);
    ck_assert_msg(rc == 0, "scrub: %s (%s)", strerror(-rc), depfs_last_error());
    ck_assert_msg(rep.stripes_bad == 0, "scrub of %" PRIu64 ": %" PRIu64 " bad stripes, first %" PRIu64,
                  ino, rep.stripes_bad, rep.first_bad_stripe);
    ck_assert_uint_eq(rep.stripes_unreadable, 0);
    ck_assert_uint_gt(rep.stripes_checked, 0);
}

static layout layout_from(const depfs_layout_info *li);

static void layout_of(depfs_t *fs, uint64_t ino, depfs_layout_info *li)
{
    ck_assert_int_eq(depfs_get_layout(fs, ino, li), 0);
}

/* Whole local file into a malloc'd buffer; *len = its size (-1: absent). */
static uint8_t *slurp(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    *len = -1;
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)*len + 1);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(fread(b, 1, (size_t)*len, f), (size_t)*len);
    fclose(f);
    return b;
}

typedef struct progress {
    uint64_t last, calls;
} progress;

static int on_progress(void *arg, uint64_t bytes_done)
{
    progress *p = arg;
    ck_assert_uint_ge(bytes_done, p->last);
    p->last = bytes_done;
    p->calls++;
    return 0;
}

static uint64_t stripes_of(const depfs_layout_info *li, uint64_t size)
{
    uint64_t sb = (uint64_t)li->k * li->stripe_unit;
    return (size + sb - 1) / sb;
}

static int raw_call(unsigned id, uint16_t op, Depfs__IoRequest *q, const void *bulk, size_t len);

/* MDS_SET_SERVER_STATE by hand (as depfs-recovery does). */
static void mds_set_state(unsigned id, unsigned state)
{
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", g_cl.ports[0]);
    frame_limits lim = {FRAME_DEFAULT_MAX_HEADER_BYTES, FRAME_DEFAULT_MAX_BULK_BYTES};
    rpc_conn *c = NULL;
    ck_assert_int_eq(rpc_conn_open("tcp", addr, &lim, 1000, td_creds(&g_cl), &c), 0);
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    q.has_server_id = q.has_server_state = true;
    q.server_id = id;
    q.server_state = state;
    ProtobufCMessage *m = NULL;
    ck_assert_int_eq(rpc_call_msg(c, DEPFS__MDS_OP__MDS_SET_SERVER_STATE, &q.base, NULL, 0, NULL,
                                  0, 2000, &depfs__mds_reply__descriptor, &m, NULL),
                     0);
    ck_assert_int_eq(((Depfs__MdsReply *)m)->err, 0);
    uint64_t epoch = ((Depfs__MdsReply *)m)->cluster_epoch;
    protobuf_c_message_free_unpacked(m, NULL);
    rpc_conn_close(c);
    /* and, like depfs-recovery, push the new epoch to the servers that run */
    for (unsigned i = 0; i < T_SERVERS; i++) {
        if (i == id)
            continue;
        Depfs__IoRequest q = DEPFS__IO_REQUEST__INIT;
        q.has_cluster_epoch = true;
        q.cluster_epoch = epoch;
        ck_assert_int_eq(raw_call(i, DEPFS__IO_OP__IO_SET_STATE, &q, NULL, 0), 0);
    }
}

/* -------------------------------------------------- rebuild one file */

/* Server S's strip file of ino: its path (into path) and a copy of it. */
static uint8_t *strip_copy(unsigned S, uint64_t ino, char *path, size_t path_len, long *len)
{
    td_strip_path(&g_cl, S, ino, path, path_len);
    uint8_t *copy = slurp(path, len);
    ck_assert_msg(copy != NULL, "server %u has no strip file %s", S, path);
    return copy;
}

START_TEST(test_rebuild_deleted_strip)
{
    depfs_t *fs = mount_fs();
    size_t size = 300000 + 123;
    uint8_t *model = calloc(1, size);
    uint64_t ino = write_file(fs, "depfs@6@4@4k:/rb1", model, 0, size);
    depfs_layout_info li;
    layout_of(fs, ino, &li);
    unsigned S = li.servers[2];
    char strip[512];
    long orig_len;
    uint8_t *orig = strip_copy(S, ino, strip, sizeof strip, &orig_len);
    depfs_unmount(fs);

    td_ios_kill(&g_cl, S);
    ck_assert_int_eq(unlink(strip), 0);
    /* what depfs-recovery would tell the MDS; status shows it while S is away */
    mds_set_state(S, 2);
    fs = mount_fs();
    depfs_server_status st[T_SERVERS];
    ck_assert_int_eq(depfs_cluster_status(fs, st, T_SERVERS), (int)T_SERVERS);
    ck_assert(!st[S].reachable);
    ck_assert_int_eq(st[S].state, 2);
    ck_assert_int_eq(st[S].mds_state, 2);
    depfs_unmount(fs);
    ck_assert(td_ios_start(&g_cl, S, "--rebuild"));

    fs = mount_fs();
    ck_assert_int_eq(depfs_cluster_status(fs, st, T_SERVERS), (int)T_SERVERS);
    ck_assert(st[S].reachable);
    ck_assert_int_eq(st[S].state, 2);
    progress prog = {0};
    int rc = depfs_rebuild_file(fs, ino, S, on_progress, &prog);
    ck_assert_msg(rc == 0, "rebuild: %s (%s)", strerror(-rc), depfs_last_error());
    uint64_t nst = stripes_of(&li, size);
    ck_assert_uint_eq(prog.last, nst * li.stripe_unit);
    ck_assert_uint_ge(prog.calls, 1);
    long now_len;
    uint8_t *now = slurp(strip, &now_len);
    ck_assert_ptr_nonnull(now);
    ck_assert_int_eq(now_len, (long)(nst * li.stripe_unit)); /* whole units, cut past the end */
    ck_assert_int_le(orig_len, now_len);
    ck_assert_msg(memcmp(orig, now, (size_t)orig_len) == 0, "rebuilt units differ");
    for (long i = orig_len; i < now_len; i++)
        ck_assert_uint_eq(now[i], 0);
    /* a server not in the layout: nothing to do */
    unsigned other = T_SERVERS;
    for (unsigned id = 0; id < T_SERVERS && other == T_SERVERS; id++) {
        bool in = false;
        for (unsigned p = 0; p < li.n; p++)
            in = in || li.servers[p] == id;
        if (!in)
            other = id;
    }
    ck_assert_int_eq(depfs_rebuild_file(fs, ino, other, NULL, NULL), 0);
    ck_assert_int_eq(depfs_rebuild_file(fs, 999999, S, NULL, NULL), -ENOENT);

    rc = depfs_server_rejoin(fs, S, NULL, NULL);
    ck_assert_msg(rc == 0, "rejoin: %s (%s)", strerror(-rc), depfs_last_error());
    depfs_unmount(fs);
    fs = mount_fs();
    scrub_clean(fs, ino);
    check_content(fs, "/rb1", model, size);
    ck_assert_int_eq(depfs_cluster_status(fs, st, T_SERVERS), (int)T_SERVERS);
    ck_assert_int_eq(st[S].state, 0); /* up again, for the MDS and itself */
    ck_assert_int_eq(st[S].mds_state, 0);
    depfs_unmount(fs);
    free(orig);
    free(now);
    free(model);
}
END_TEST

/* A file a migrate replaced is ESTALE to new opens, yet a handle opened
 * before the swap still reads it: its units on a rebuilding server are
 * rebuilt like any file's (the rebuild holds it as the older handle's
 * client does). Once no handle holds it, it has nothing left to rebuild
 * (-ENOENT: its strip files are going). Before the rebuild held files
 * through a hold rather than a new open, it failed with ESTALE, and every
 * rejoin that met such a file failed with it. */
START_TEST(test_rebuild_migrated_away)
{
    depfs_t *fs = mount_fs();
    size_t size = 200000 + 77;
    uint8_t *model = calloc(1, size), *got = malloc(size + 64);
    ck_assert_ptr_nonnull(model);
    ck_assert_ptr_nonnull(got);
    uint64_t ino = write_file(fs, "depfs@6@4@4k:/mig", model, 0, size);
    depfs_layout_info li;
    layout_of(fs, ino, &li);
    depfs_fh_t *old = NULL, *copy = NULL;
    ck_assert_int_eq(depfs_open_ino(fs, ino, O_RDONLY, &old), 0);
    /* the migrate: a copy (unlinked, open here) of another layout swapped in */
    uint64_t version = 0, root = 0;
    ck_assert_int_eq(depfs_data_version(fs, ino, &version), 0);
    ck_assert_int_eq(depfs_resolve(fs, "/", &root, NULL), 0);
    depfs_layout_info want = {.n = 4, .k = 2, .stripe_unit = 4096};
    ck_assert_int_eq(depfs_create(fs, root, NULL, 0644, O_RDWR | O_TMPFILE, NULL, &want, NULL,
                                  &copy), 0);
    ck_assert_int_eq(depfs_write(copy, model, size, 0), (ssize_t)size);
    ck_assert_int_eq(depfs_fsync(copy), 0);
    ck_assert_int_eq(depfs_migrate_swap(fs, root, "mig", ino, depfs_fh_ino(copy), version, NULL),
                     0);
    ck_assert_int_eq(depfs_close(copy), 0);
    depfs_fh_t *fresh = NULL;
    ck_assert_int_eq(depfs_open_ino(fs, ino, O_RDONLY, &fresh), -ESTALE);

    unsigned S = li.servers[1];
    char strip[512];
    long orig_len;
    uint8_t *orig = strip_copy(S, ino, strip, sizeof strip, &orig_len);
    td_ios_kill(&g_cl, S);
    ck_assert_int_eq(unlink(strip), 0);
    mds_set_state(S, 2);
    ck_assert(td_ios_start(&g_cl, S, "--rebuild"));
    depfs_t *rfs = mount_fs(); /* the rebuilder: another client */
    int rc = depfs_rebuild_file(rfs, ino, S, NULL, NULL);
    ck_assert_msg(rc == 0, "rebuild of a migrated-away file still open: %s (%s)", strerror(-rc),
                  depfs_last_error());
    long now_len;
    uint8_t *now = slurp(strip, &now_len);
    ck_assert_ptr_nonnull(now);
    ck_assert_int_le(orig_len, now_len);
    ck_assert_msg(memcmp(orig, now, (size_t)orig_len) == 0, "rebuilt units differ");
    ck_assert_int_eq(depfs_read(old, got, size + 64, 0), (ssize_t)size);
    ck_assert(memcmp(got, model, size) == 0);
    ck_assert_int_eq(depfs_close(old), 0); /* its last handle: the hold goes */
    depfs_release_holds(fs); /* now, and the first rebuild's too */
    depfs_release_holds(rfs);
    rc = depfs_rebuild_file(rfs, ino, S, NULL, NULL);
    ck_assert_msg(rc == -ENOENT, "rebuild of a migrated-away file nobody holds: %d (%s)", rc,
                  depfs_last_error());
    ck_assert_int_eq(depfs_server_rejoin(rfs, S, NULL, NULL), 0);
    depfs_unmount(rfs);
    check_content(fs, "/mig", model, size); /* the copy, under the name */
    depfs_unmount(fs);
    free(orig);
    free(now);
    free(got);
    free(model);
}
END_TEST

/* ------------------------------------------------- dirty records, rejoin */

#define T_DIRTY_FILES 3u

START_TEST(test_dirty_rejoin)
{
    static const char *paths[T_DIRTY_FILES] = {"depfs@6@4@4k:/d0", "depfs@4@2@4k:/d1",
                                               "depfs@8@6@4k:/d2"};
    size_t size = 200000, grow = 50000;
    uint8_t *model[T_DIRTY_FILES];
    uint64_t ino[T_DIRTY_FILES];
    depfs_t *fs = mount_fs();
    for (unsigned i = 0; i < T_DIRTY_FILES; i++) {
        model[i] = calloc(1, size + grow);
        ino[i] = write_file(fs, paths[i], model[i], 0, size);
    }
    depfs_layout_info li;
    layout_of(fs, ino[2], &li); /* 8@6 on 8 servers: every server */
    unsigned S = li.servers[0];
    uint8_t gone_model[8192];
    uint64_t gone = write_file(fs, "depfs@8@6@4k:/gone", gone_model, 0, sizeof gone_model);

    td_ios_kill(&g_cl, S);
    /* overwrite the middle, extend, and change a file then remove it */
    for (unsigned i = 0; i < T_DIRTY_FILES; i++) {
        write_file(fs, strchr(paths[i], ':') + 1, model[i], 12345, 40000);
        write_file(fs, strchr(paths[i], ':') + 1, model[i], size, grow);
    }
    write_file(fs, "/gone", gone_model, 100, 5000);
    ck_assert_int_eq(depfs_unlink_path(fs, "/gone"), 0);
    /* the purge cannot reach S: the file stays queued, S keeps its strip */
    uint64_t cursor = 0;
    depfs_purge_report pr;
    ck_assert_int_eq(depfs_purge_pass(fs, 16, &cursor, &pr), 0);
    ck_assert_uint_eq(pr.listed, 1);
    ck_assert_uint_eq(pr.purged, 0);
    ck_assert_uint_eq(pr.failed, 1);
    depfs_unmount(fs);
    char strip[512];
    td_strip_path(&g_cl, S, gone, strip, sizeof strip);
    ck_assert_int_eq(access(strip, F_OK), 0); /* S missed the removal */

    ck_assert(td_ios_start(&g_cl, S, "--rebuild"));
    fs = mount_fs();
    progress prog = {0};
    int rc = depfs_server_rejoin(fs, S, on_progress, &prog);
    ck_assert_msg(rc == 0, "rejoin: %s (%s)", strerror(-rc), depfs_last_error());
    ck_assert_uint_gt(prog.last, 0);
    /* still queued (a handle might hold it): rebuilt like any file, then
     * the next purge pass reaches every server */
    cursor = 0;
    ck_assert_int_eq(depfs_purge_pass(fs, 16, &cursor, &pr), 0);
    ck_assert_uint_eq(pr.purged, 1);
    ck_assert_uint_eq(pr.failed, 0);
    ck_assert(pr.eof);
    ck_assert_int_ne(access(strip, F_OK), 0);
    /* nothing dirty is left: a second rejoin rebuilds nothing */
    progress again = {0};
    ck_assert_int_eq(depfs_server_rejoin(fs, S, on_progress, &again), 0);
    ck_assert_uint_eq(again.last, 0);
    depfs_unmount(fs);

    fs = mount_fs();
    for (unsigned i = 0; i < T_DIRTY_FILES; i++) {
        scrub_clean(fs, ino[i]);
        check_content(fs, strchr(paths[i], ':') + 1, model[i], size + grow);
        free(model[i]);
    }
    depfs_unmount(fs);
}
END_TEST

/* A truncate while a server is down: the server keeps the cut bytes, so it
 * must be recorded dirty for the file; after an extension and its rejoin
 * the cut range reads as zeros (before, the rejoin rebuilt nothing and the
 * returning server's old bytes came back). */
START_TEST(test_truncate_while_down)
{
    size_t stripe = 4 * 4096, size = 10 * stripe, cut = 2 * stripe;
    uint8_t *model = calloc(1, size);
    depfs_t *fs = mount_fs();
    uint64_t ino = write_file(fs, "depfs@6@4@4k:/cut", model, 0, size);
    depfs_layout_info li;
    layout_of(fs, ino, &li);
    unsigned S = li.servers[0];
    td_ios_kill(&g_cl, S);
    /* as depfs-recovery does: a truncate that missed a server the cluster
     * still calls UP waits until it is out of service */
    mds_set_state(S, DEPFS__SERVER_STATE__SERVER_DOWN);
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, "/cut", O_RDWR, 0, &fh), 0);
    int rc = depfs_ftruncate(fh, cut);
    ck_assert_msg(rc == 0, "truncate: %s (%s)", strerror(-rc), depfs_last_error());
    ck_assert_int_eq(depfs_ftruncate(fh, size), 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    memset(model + cut, 0, size - cut);
    depfs_unmount(fs);

    ck_assert(td_ios_start(&g_cl, S, "--rebuild"));
    fs = mount_fs();
    rc = depfs_server_rejoin(fs, S, NULL, NULL);
    ck_assert_msg(rc == 0, "rejoin: %s (%s)", strerror(-rc), depfs_last_error());
    depfs_unmount(fs);
    fs = mount_fs();
    check_content(fs, "/cut", model, size);
    scrub_clean(fs, ino);
    depfs_unmount(fs);
    free(model);
}
END_TEST

/* A server frozen (SIGSTOP) while a writer writes around it comes back
 * with stale units and still believes it is UP; a reader whose picture of
 * the cluster is as old serves itself from it right away. The server must
 * see it did not run, demote itself and refuse the read (the reader then
 * decodes): the reader gets the new bytes, never the stale ones. */
/* A client marked server A failed while it was down (and heard the
 * cluster's state after that); A came back and rejoined, and then server B
 * goes down. A read of an 8@7 file (one parity unit) by that client must
 * decode around B alone: A's old mark may not count as a second lost unit
 * (it did, and the read failed with EIO until the mark expired). */
START_TEST(test_read_rechecks_old_marks)
{
    size_t size = 4 * 7 * 4096;
    uint8_t *model = calloc(1, size);
    depfs_t *fs = mount_fs();
    uint64_t ino = write_file(fs, "depfs@8@7@4k:/marks", model, 0, size);
    depfs_layout_info li;
    layout_of(fs, ino, &li);
    unsigned a = li.servers[0], b = li.servers[1];
    td_ios_kill(&g_cl, a);
    mds_set_state(a, DEPFS__SERVER_STATE__SERVER_DOWN); /* as depfs-recovery does */
    check_content(fs, "/marks", model, size); /* marks a failed here */
    depfs_server_status st[T_SERVERS];
    (void)depfs_cluster_status(fs, st, T_SERVERS); /* the cluster's word after the mark */
    ck_assert(td_ios_start(&g_cl, a, "--rebuild"));
    depfs_t *adm = mount_fs();
    int rc = depfs_server_rejoin(adm, a, NULL, NULL);
    ck_assert_msg(rc == 0, "rejoin: %s (%s)", strerror(-rc), depfs_last_error());
    depfs_unmount(adm);
    td_ios_kill(&g_cl, b);
    check_content(fs, "/marks", model, size);
    depfs_unmount(fs);
    free(model);
}
END_TEST

#define T_FROZEN_PROBE_MS 30000u

/* The write around the stopped server S is acknowledged once S is out of
 * service (it resumes and demotes itself: it did not run for a while), and
 * r then never reads S's stale units. */
START_TEST(test_stalled_server_serves_no_stale_reads)
{
    size_t size = 8 * 6 * 4096;
    uint8_t *model = calloc(1, size);
    depfs_t *w = mount_fs(), *r = mount_fs();
    uint64_t ino = write_file(w, "depfs@8@6@4k:/frozen", model, 0, size);
    check_content(r, "/frozen", model, size); /* r knows the file, S is UP for it */
    depfs_layout_info li;
    layout_of(w, ino, &li);
    unsigned S = li.servers[0];
    ck_assert_int_eq(kill(g_cl.ios[S], SIGSTOP), 0);
    rnd_fill(model, size);
    td_bg_write fw = {.fs = w, .path = "/frozen", .buf = model, .len = size};
    td_bg_write_start(&fw); /* times out on S, writes around it */
    layout lay = layout_from(&li);
    uint32_t recorded = 0;
    uint64_t deadline_ms = clock_now_ms() + T_FROZEN_PROBE_MS;
    while (!(recorded & 1u) && clock_now_ms() < deadline_ms) {
        usleep(100 * 1000);
        ck_assert_int_eq(dc_dirty_probe(r, &lay, ino, &recorded, NULL, NULL), 0);
    }
    ck_assert_msg(recorded & 1u, "no dirty record names the stopped server %u", S);
    ck_assert_int_eq(kill(g_cl.ios[S], SIGCONT), 0);
    int rc = td_bg_write_join(&fw);
    ck_assert_msg(rc == 0, "write around the stopped server: %s", strerror(-rc));
    check_content(r, "/frozen", model, size);
    depfs_unmount(r);
    depfs_unmount(w);
    free(model);
}
END_TEST

/* ---------------------------------------------------------- file walk */

typedef struct walk_seen {
    uint64_t ino[256];
    unsigned n;
} walk_seen;

static int on_file(void *arg, uint64_t ino, uint64_t size)
{
    (void)size;
    walk_seen *w = arg;
    for (unsigned i = 0; i < w->n; i++)
        ck_assert_msg(w->ino[i] != ino, "inode %" PRIu64 " reported twice", ino);
    ck_assert_uint_lt(w->n, 256);
    w->ino[w->n++] = ino;
    return 0;
}

START_TEST(test_files_on_server)
{
    depfs_t *fs = mount_fs();
    ck_assert_int_eq(depfs_mkdir_path(fs, "/w", 0755), 0);
    ck_assert_int_eq(depfs_mkdir_path(fs, "/w/sub", 0755), 0);
    ck_assert_int_eq(depfs_mkdir_path(fs, "/w/sub/deeper", 0755), 0);
    static const char *paths[] = {"depfs@4@2@4k:/w/a", "depfs@8@6@4k:/w/sub/b",
                                  "depfs@2@1@4k:/w/sub/deeper/c", "depfs@3@2@4k:/w/d"};
    enum { NF = sizeof paths / sizeof paths[0] };
    uint64_t ino[NF];
    uint8_t buf[5000];
    for (unsigned i = 0; i < NF; i++)
        ino[i] = write_file(fs, paths[i], buf, 0, sizeof buf);
    struct stat st;
    uint64_t wdir;
    ck_assert_int_eq(depfs_resolve(fs, "/w", &wdir, &st), 0);
    ck_assert_int_eq(depfs_link(fs, ino[0], wdir, "alink", &st), 0);
    for (unsigned s = 0; s < T_SERVERS; s++) {
        walk_seen w = {.n = 0};
        ck_assert_int_eq(depfs_files_on_server(fs, s, on_file, &w), 0);
        for (unsigned i = 0; i < NF; i++) {
            depfs_layout_info li;
            layout_of(fs, ino[i], &li);
            bool want = false, got = false;
            for (unsigned p = 0; p < li.n; p++)
                want = want || li.servers[p] == s;
            for (unsigned j = 0; j < w.n; j++)
                got = got || w.ino[j] == ino[i];
            ck_assert_msg(want == got, "server %u file %s: want %d got %d", s, paths[i], want, got);
        }
    }
    depfs_unmount(fs);
}
END_TEST

/* -------------------------------------------------------- orphan locks */

static rpc_conn *ios_conn(unsigned id)
{
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", g_cl.ports[1 + id]);
    frame_limits lim = {FRAME_DEFAULT_MAX_HEADER_BYTES, FRAME_DEFAULT_MAX_BULK_BYTES};
    rpc_conn *c = NULL;
    ck_assert_int_eq(rpc_conn_open("tcp", addr, &lim, 1000, td_creds(&g_cl), &c), 0);
    return c;
}

/* One raw request; returns the reply's err. */
static int raw_call(unsigned id, uint16_t op, Depfs__IoRequest *q, const void *bulk, size_t len)
{
    rpc_conn *c = ios_conn(id);
    struct iovec iov = {(void *)bulk, len};
    ProtobufCMessage *m = NULL;
    int rc = rpc_call_msg(c, op, &q->base, bulk ? &iov : NULL, bulk ? 1 : 0, NULL, 0, 2000,
                          &depfs__io_reply__descriptor, &m, NULL);
    ck_assert_int_eq(rc, 0);
    int err = ((Depfs__IoReply *)m)->err;
    protobuf_c_message_free_unpacked(m, NULL);
    rpc_conn_close(c);
    return err;
}

/* A raw IO_LOCK of (client, op); read_only: a lock taken only to read. */
static void raw_lock(unsigned id, uint64_t ino, uint64_t first, uint64_t count, uint64_t client,
                     uint64_t op, bool read_only)
{
    Depfs__LockSpec l = DEPFS__LOCK_SPEC__INIT;
    l.first_stripe = first;
    l.stripe_count = count;
    l.owner_client = client;
    l.owner_op = op;
    l.has_read_only = l.read_only = read_only;
    Depfs__IoRequest q = DEPFS__IO_REQUEST__INIT;
    q.file_id = ino;
    q.lock = &l;
    ck_assert_int_eq(raw_call(id, DEPFS__IO_OP__IO_LOCK, &q, NULL, 0), 0);
}

static void orphan_lock(unsigned id, uint64_t ino, uint64_t first, uint64_t count)
{
    raw_lock(id, ino, first, count, T_ORPHAN_CLIENT, T_ORPHAN_OP, false);
}

START_TEST(test_orphan_repair)
{
    depfs_t *fs = mount_fs();
    size_t size = 5 * 4 * 4096; /* 5 stripes of 6@4@4k */
    uint8_t *model = calloc(1, size);
    uint64_t ino = write_file(fs, "depfs@6@4@4k:/orphan", model, 0, size);
    depfs_layout_info li;
    layout_of(fs, ino, &li);
    layout lay = {.n = li.n, .k = li.k, .su = li.stripe_unit};
    for (unsigned p = 0; p < li.n; p++)
        lay.servers[p] = li.servers[p];
    /* the dead writer locked stripes 1..2 everywhere but on one server... */
    const uint64_t first = 1, count = 2;
    unsigned skipped = layout_unit_server(&lay, first, 1);
    for (unsigned p = 0; p < li.n; p++)
        if (li.servers[p] != skipped)
            orphan_lock(li.servers[p], ino, first, count);
    /* ...and stored new bytes of data unit 0 of stripe 1 but no parity */
    uint8_t garbage[4096];
    rnd_fill(garbage, sizeof garbage);
    Depfs__Extent e = DEPFS__EXTENT__INIT;
    e.offset = layout_local_offset(&lay, first);
    e.length = sizeof garbage;
    Depfs__Extent *ep = &e;
    Depfs__IoRequest q = DEPFS__IO_REQUEST__INIT;
    q.file_id = ino;
    q.n_extents = 1;
    q.extents = &ep;
    q.has_ignore_locks = q.ignore_locks = true;
    ck_assert_int_eq(raw_call(layout_unit_server(&lay, first, 0), DEPFS__IO_OP__IO_WRITE, &q,
                              garbage, sizeof garbage),
                     0);
    memcpy(model + first * 4 * 4096, garbage, sizeof garbage);
    usleep(T_LEASE_WAIT_US); /* the orphan's entries are stale now */
    /* the half-done write really broke parity (seen by a lock-ignoring scrub) */
    depfs_options ro = {.config_path = g_cl.conf, .ignore_locks = true};
    depfs_t *rfs = NULL;
    ck_assert_int_eq(depfs_mount(&ro, &rfs), 0);
    depfs_scrub_report rep;
    ck_assert_int_eq(depfs_scrub_ino(rfs, ino, false, &rep), 0);
    ck_assert_uint_eq(rep.stripes_bad, 1);
    ck_assert_uint_eq(rep.first_bad_stripe, first);
    depfs_unmount(rfs);

    int rc = depfs_repair_orphan_lock(fs, ino, first, count, T_ORPHAN_CLIENT, T_ORPHAN_OP);
    ck_assert_msg(rc == 0, "repair: %s (%s)", strerror(-rc), depfs_last_error());
    scrub_clean(fs, ino); /* takes the stripe locks: they are free again */
    check_content(fs, "/orphan", model, size);
    /* idempotent */
    ck_assert_int_eq(depfs_repair_orphan_lock(fs, ino, first, count, T_ORPHAN_CLIENT, T_ORPHAN_OP), 0);
    /* writers get the stripes */
    write_file(fs, "/orphan", model, first * 4 * 4096 + 100, 3 * 4096);
    scrub_clean(fs, ino);
    check_content(fs, "/orphan", model, size);
    depfs_unmount(fs);
    free(model);
}
END_TEST

static void orphan_lock_as(unsigned id, uint64_t ino, uint64_t first, uint64_t count,
                           uint64_t client, uint64_t op)
{
    raw_lock(id, ino, first, count, client, op, false);
}

static void raw_unit_write(unsigned id, uint64_t ino, uint64_t local_off, const uint8_t *b,
                           size_t len)
{
    Depfs__Extent e = DEPFS__EXTENT__INIT;
    e.offset = local_off;
    e.length = len;
    Depfs__Extent *ep = &e;
    Depfs__IoRequest q = DEPFS__IO_REQUEST__INIT;
    q.file_id = ino;
    q.n_extents = 1;
    q.extents = &ep;
    q.has_ignore_locks = q.ignore_locks = true;
    ck_assert_int_eq(raw_call(id, DEPFS__IO_OP__IO_WRITE, &q, b, len), 0);
}

static layout layout_from(const depfs_layout_info *li)
{
    layout lay = {.n = li->n, .k = li->k, .su = li->stripe_unit};
    for (unsigned p = 0; p < li->n; p++)
        lay.servers[p] = li->servers[p];
    return lay;
}

/* Survivors record that server x missed writes to the file (its units
 * are untrusted until a rebuild). */
static void mark_dirty_everywhere_but(const depfs_layout_info *li, uint64_t ino, unsigned x)
{
    for (unsigned p = 0; p < li->n; p++) {
        if (li->servers[p] == x)
            continue;
        Depfs__IoRequest q = DEPFS__IO_REQUEST__INIT;
        q.file_id = ino;
        uint32_t down = x;
        q.n_down_servers = 1;
        q.down_servers = &down;
        ck_assert_int_eq(raw_call(li->servers[p], DEPFS__IO_OP__IO_WRITE, &q, NULL, 0), 0);
    }
}

/* What a rejoin does once it rebuilt the file on x: claims and clears the
 * survivors' records (x, file), so that x's units are trusted again. */
static void clear_dirty_everywhere_but(const depfs_layout_info *li, uint64_t ino, unsigned x)
{
    static const Depfs__DirtyAction steps[] = {DEPFS__DIRTY_ACTION__DIRTY_CLAIM,
                                               DEPFS__DIRTY_ACTION__DIRTY_CLEAR};
    for (unsigned i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        for (unsigned p = 0; p < li->n; p++) {
            if (li->servers[p] == x)
                continue;
            Depfs__IoRequest q = DEPFS__IO_REQUEST__INIT;
            q.file_id = ino;
            q.has_local_size = true;
            q.local_size = x;
            q.has_dirty_action = true;
            q.dirty_action = steps[i];
            ck_assert_int_eq(raw_call(li->servers[p], DEPFS__IO_OP__IO_DIRTY, &q, NULL, 0), 0);
        }
    }
}

/* Issue 10's data loss in miniature: server X missed a write (its data unit
 * of stripe 1 is stale, and the survivors hold a dirty record (X, file)),
 * then a lock request that waited at X is granted late and becomes an
 * orphan held on X alone. The repair must not recompute parity from X's
 * stale unit: rebuilding X afterwards must give back the acknowledged bytes. */
START_TEST(test_orphan_on_stale_server)
{
    depfs_t *fs = mount_fs();
    size_t size = 5 * 4 * 4096; /* 5 stripes of 6@4@4k */
    uint8_t *model = calloc(1, size);
    uint64_t ino = write_file(fs, "depfs@6@4@4k:/stale", model, 0, size);
    depfs_layout_info li;
    layout_of(fs, ino, &li);
    layout lay = layout_from(&li);
    const uint64_t first = 1, count = 2;
    unsigned x = layout_unit_server(&lay, first, 0);
    /* X's unit is stale: it holds other bytes than parity implies */
    uint8_t stale[4096];
    memset(stale, 0, sizeof stale);
    raw_unit_write(x, ino, layout_local_offset(&lay, first), stale, sizeof stale);
    /* and the survivors know X missed writes to the file */
    mark_dirty_everywhere_but(&li, ino, x);
    orphan_lock(x, ino, first, count); /* the late grant */
    usleep(T_LEASE_WAIT_US);
    int rc = depfs_repair_orphan_lock(fs, ino, first, count, T_ORPHAN_CLIENT, T_ORPHAN_OP);
    ck_assert_msg(rc == 0, "repair: %s (%s)", strerror(-rc), depfs_last_error());
    /* X's units come back from the others, as the rejoin does */
    rc = depfs_rebuild_file(fs, ino, x, NULL, NULL);
    ck_assert_msg(rc == 0, "rebuild: %s (%s)", strerror(-rc), depfs_last_error());
    clear_dirty_everywhere_but(&li, ino, x);
    check_content(fs, "/stale", model, size);
    scrub_clean(fs, ino);
    depfs_unmount(fs);
    free(model);
}
END_TEST

/* A file of `size` bytes written through fs with layout spec ("4@3@4k")
 * as path: its inode, its bytes in *model (calloc'd) and its layout. */
static uint64_t orphan_case_file(depfs_t *fs, const char *spec, const char *path, size_t size,
                                 uint8_t **model, depfs_layout_info *li, layout *lay)
{
    char label[64];
    snprintf(label, sizeof label, "depfs@%s:%s", spec, path);
    *model = calloc(1, size);
    ck_assert_ptr_nonnull(*model);
    uint64_t ino = write_file(fs, label, *model, 0, size);
    layout_of(fs, ino, li);
    *lay = layout_from(li);
    return ino;
}

/* Server x's unit of stripe s holds zeros (behind the code's back). */
static void unit_zeroed(unsigned x, uint64_t ino, const layout *lay, uint64_t s)
{
    uint8_t zeros[4096];
    ck_assert_uint_eq(lay->su, sizeof zeros);
    memset(zeros, 0, sizeof zeros);
    raw_unit_write(x, ino, layout_local_offset(lay, s), zeros, sizeof zeros);
}

/* The orphan's repair of stripes [first, first+count) refuses: the units
 * are no codeword, the stripes stay locked. */
static void repair_refused(depfs_t *fs, uint64_t ino, uint64_t first, uint64_t count)
{
    usleep(T_LEASE_WAIT_US); /* the orphan's entries are stale now */
    int rc = depfs_repair_orphan_lock(fs, ino, first, count, T_ORPHAN_CLIENT, T_ORPHAN_OP);
    ck_assert_int_eq(rc, -EIO);
    ck_assert_msg(strstr(depfs_last_error(), "no codeword") != NULL, "%s", depfs_last_error());
}

/* The orphan's repair passes, and so does the rebuild of stale server x
 * (as its rejoin does, records cleared after). */
static void repair_then_rebuild(depfs_t *fs, const depfs_layout_info *li, uint64_t ino,
                                uint64_t first, uint64_t count, unsigned x)
{
    usleep(T_LEASE_WAIT_US);
    int rc = depfs_repair_orphan_lock(fs, ino, first, count, T_ORPHAN_CLIENT, T_ORPHAN_OP);
    ck_assert_msg(rc == 0, "repair: %s (%s)", strerror(-rc), depfs_last_error());
    rc = depfs_rebuild_file(fs, ino, x, NULL, NULL);
    ck_assert_msg(rc == 0, "rebuild: %s (%s)", strerror(-rc), depfs_last_error());
    clear_dirty_everywhere_but(li, ino, x);
}

/* Campaign seed 1109 in miniature: on an n-k=1 layout, a writing orphan
 * held on one server (its unit in doubt) and dirty records naming another
 * (its data unit untrusted) are two erasures, one more than the code
 * covers, and the repair left the stripe locked for ever (the rejoin of the
 * untrusted server then waited on it). When every unit is still one
 * codeword (the "stale" unit is current: dirty records are per file) the
 * stripe is freed as it is; when they are not (the unit really is stale)
 * the repair still refuses. */
START_TEST(test_orphan_beyond_n_minus_k_one)
{
    depfs_t *fs = mount_fs();
    size_t size = 4 * 3 * 4096; /* 4 stripes of 4@3@4k */
    const uint64_t first = 1, count = 1;
    for (int really_stale = 0; really_stale < 2; really_stale++) {
        char path[32];
        snprintf(path, sizeof path, "/nk1-%d", really_stale);
        uint8_t *model;
        depfs_layout_info li;
        layout lay;
        uint64_t ino = orphan_case_file(fs, "4@3@4k", path, size, &model, &li, &lay);
        unsigned x = layout_unit_server(&lay, first, 0); /* untrusted data unit */
        unsigned y = layout_unit_server(&lay, first, 1); /* the orphan's unit in doubt */
        if (really_stale)
            unit_zeroed(x, ino, &lay, first);
        mark_dirty_everywhere_but(&li, ino, x);
        orphan_lock(y, ino, first, count);
        if (really_stale) {
            repair_refused(fs, ino, first, count);
        } else {
            repair_then_rebuild(fs, &li, ino, first, count, x);
            /* writers get the stripe */
            write_file(fs, path, model, first * 3 * 4096 + 100, 4096);
            scrub_clean(fs, ino);
            check_content(fs, path, model, size);
        }
        free(model);
    }
    depfs_unmount(fs);
}
END_TEST

/* Campaign seed 8201 in miniature: a write locked its stripe on every
 * server and then stalled (a slow disk) until its locks went stale, having
 * stored nothing, while server X was stale for the file (dirty records,
 * its data unit of the stripe old). Every trusted unit held plus X's
 * untrusted one are more erasures than n-k, and the repair left the stripe
 * locked for ever, so X's rejoin could not rebuild the file. The trusted
 * units, more than k of them, are still one codeword: the stripe stands,
 * and X's rebuild gives back every byte. When one trusted unit took the
 * write (a server stored it and crashed before its unlock: its lock
 * intent came back held) they are no codeword, and the repair still
 * refuses. */
START_TEST(test_orphan_landed_nowhere)
{
    depfs_t *fs = mount_fs();
    size_t size = 4 * 4 * 4096; /* 4 stripes of 6@4@4k */
    const uint64_t first = 1, count = 1;
    for (int one_took_it = 0; one_took_it < 2; one_took_it++) {
        char path[32];
        snprintf(path, sizeof path, "/nowhere-%d", one_took_it);
        uint8_t *model;
        depfs_layout_info li;
        layout lay;
        uint64_t ino = orphan_case_file(fs, "6@4@4k", path, size, &model, &li, &lay);
        unsigned x = layout_unit_server(&lay, first, 0); /* stale data unit */
        unit_zeroed(x, ino, &lay, first);
        mark_dirty_everywhere_but(&li, ino, x);
        for (unsigned p = 0; p < li.n; p++)
            orphan_lock(li.servers[p], ino, first, count);
        if (one_took_it) {
            uint8_t fresh[4096];
            rnd_fill(fresh, sizeof fresh);
            raw_unit_write(layout_unit_server(&lay, first, 1), ino,
                           layout_local_offset(&lay, first), fresh, sizeof fresh);
        }
        if (one_took_it) {
            repair_refused(fs, ino, first, count);
        } else {
            repair_then_rebuild(fs, &li, ino, first, count, x);
            check_content(fs, path, model, size);
            /* writers get the stripe */
            write_file(fs, path, model, first * 4 * 4096 + 100, 4096);
            scrub_clean(fs, ino);
            check_content(fs, path, model, size);
        }
        free(model);
    }
    depfs_unmount(fs);
}
END_TEST

/* Two orphans of different owners on overlapping stripes, held on two
 * different servers, with a write in doubt under one of them (its parity
 * unit was stored, its data unit not): one repair takes both over, the
 * stripes are consistent and free, and the other orphan's remainder is
 * repaired by its own call. */
START_TEST(test_orphans_overlap)
{
    depfs_t *fs = mount_fs();
    size_t size = 6 * 4 * 4096;
    uint8_t *model = calloc(1, size);
    uint64_t ino = write_file(fs, "depfs@6@4@4k:/overlap", model, 0, size);
    depfs_layout_info li;
    layout_of(fs, ino, &li);
    layout lay = layout_from(&li);
    unsigned pa = layout_unit_server(&lay, 1, 2);         /* a data unit of stripe 1 */
    unsigned pb = layout_unit_server(&lay, 1, lay.k);     /* parity 0 of stripe 1 */
    orphan_lock_as(pa, ino, 0, 3, T_ORPHAN_CLIENT, 1);     /* A: stripes 0..2 */
    orphan_lock_as(pb, ino, 1, 4, T_ORPHAN_CLIENT + 1, 2); /* B: stripes 1..4 */
    /* B's write stored new parity on pb's unit of stripe 1 and nothing else:
     * a different parity than the data implies */
    uint8_t junk[4096];
    rnd_fill(junk, sizeof junk);
    raw_unit_write(pb, ino, layout_local_offset(&lay, 1), junk, sizeof junk);
    usleep(T_LEASE_WAIT_US);
    int rc = depfs_repair_orphan_lock(fs, ino, 0, 3, T_ORPHAN_CLIENT, 1);
    ck_assert_msg(rc == 0, "repair A: %s (%s)", strerror(-rc), depfs_last_error());
    rc = depfs_repair_orphan_lock(fs, ino, 1, 4, T_ORPHAN_CLIENT + 1, 2);
    ck_assert_msg(rc == 0, "repair B: %s (%s)", strerror(-rc), depfs_last_error());
    scrub_clean(fs, ino);
    check_content(fs, "/overlap", model, size);
    write_file(fs, "/overlap", model, 4096 + 17, 5 * 4096); /* the stripes are free */
    scrub_clean(fs, ino);
    check_content(fs, "/overlap", model, size);
    depfs_unmount(fs);
    free(model);
}
END_TEST

/* Every server SIGKILLed in the middle of a write: the writer held stripes
 * 1..2 on every server and its new data unit reached one server only. The
 * lock intents bring the locks back on restart (a writer of those stripes
 * is refused until they are repaired), and the repair leaves them
 * consistent. Before, the restarted servers held no locks and the stripes
 * stayed inconsistent until someone ran scrub. */
START_TEST(test_intents_survive_a_crash_of_every_server)
{
    depfs_t *fs = mount_fs();
    size_t size = 5 * 4 * 4096;
    uint8_t *model = calloc(1, size);
    uint64_t ino = write_file(fs, "depfs@6@4@4k:/crash", model, 0, size);
    depfs_layout_info li;
    layout_of(fs, ino, &li);
    layout lay = layout_from(&li);
    const uint64_t first = 1, count = 2;
    for (unsigned p = 0; p < li.n; p++)
        orphan_lock(li.servers[p], ino, first, count);
    uint8_t fresh[4096];
    rnd_fill(fresh, sizeof fresh);
    raw_unit_write(layout_unit_server(&lay, first, 1), ino, layout_local_offset(&lay, first),
                   fresh, sizeof fresh);
    memcpy(model + first * 4 * 4096 + 4096, fresh, sizeof fresh);
    depfs_unmount(fs);
    for (unsigned i = 0; i < T_SERVERS; i++)
        td_ios_kill(&g_cl, i);
    for (unsigned i = 0; i < T_SERVERS; i++)
        ck_assert(td_ios_start(&g_cl, i, NULL));
    /* the locks are back: another owner is refused on every server */
    for (unsigned p = 0; p < li.n; p++) {
        Depfs__LockSpec l = DEPFS__LOCK_SPEC__INIT;
        l.first_stripe = first;
        l.stripe_count = 1;
        l.owner_client = 5;
        l.owner_op = 5;
        Depfs__IoRequest q = DEPFS__IO_REQUEST__INIT;
        q.file_id = ino;
        q.lock = &l;
        ck_assert_int_eq(raw_call(li.servers[p], DEPFS__IO_OP__IO_LOCK, &q, NULL, 0), EAGAIN);
    }
    fs = mount_fs();
    int rc = depfs_repair_orphan_lock(fs, ino, first, count, T_ORPHAN_CLIENT, T_ORPHAN_OP);
    ck_assert_msg(rc == 0, "repair: %s (%s)", strerror(-rc), depfs_last_error());
    scrub_clean(fs, ino);
    check_content(fs, "/crash", model, size);
    depfs_unmount(fs);
    free(model);
}
END_TEST

/* A dead reader's orphans (locks taken only to read) on the servers that
 * answer, while more than n-k of the file's servers cannot be reached
 * (make test's CI at cd0ed17: every server SIGKILLed mid-write, the repair
 * ran while five were restarting). Before, it found nothing in doubt,
 * "succeeded" and recorded every unreached server dirty for the file: more
 * untrusted units than n-k, so no rejoin could ever rebuild it. Now it
 * waits (EAGAIN, nothing recorded); once they answer it succeeds, and each
 * of them can be rebuilt from the others. */
START_TEST(test_orphan_repair_waits_for_servers)
{
    depfs_t *fs = mount_fs();
    size_t size = 5 * 4 * 4096; /* 5 stripes of 6@4@4k */
    uint8_t *model = calloc(1, size);
    uint64_t ino = write_file(fs, "depfs@6@4@4k:/wait", model, 0, size);
    depfs_layout_info li;
    layout_of(fs, ino, &li);
    const uint64_t first = 1, count = 2;
    for (unsigned p = 0; p < 3; p++)
        raw_lock(li.servers[p], ino, first, count, T_ORPHAN_CLIENT, T_ORPHAN_OP, true);
    for (unsigned p = 3; p < 6; p++) /* three of six: more than n-k = 2 */
        td_ios_kill(&g_cl, li.servers[p]);
    usleep(T_LEASE_WAIT_US);
    int rc = depfs_repair_orphan_lock(fs, ino, first, count, T_ORPHAN_CLIENT, T_ORPHAN_OP);
    ck_assert_msg(rc == -EAGAIN, "repair with 3 of 6 servers gone: %s (%s)", strerror(-rc),
                  depfs_last_error());
    for (unsigned p = 3; p < 6; p++)
        ck_assert(td_ios_start(&g_cl, li.servers[p], NULL));
    depfs_unmount(fs);
    fs = mount_fs(); /* no failure marks from before */
    rc = depfs_repair_orphan_lock(fs, ino, first, count, T_ORPHAN_CLIENT, T_ORPHAN_OP);
    ck_assert_msg(rc == 0, "repair: %s (%s)", strerror(-rc), depfs_last_error());
    for (unsigned p = 3; p < 6; p++) {
        rc = depfs_rebuild_file(fs, ino, li.servers[p], NULL, NULL);
        ck_assert_msg(rc == 0, "rebuild on server %u: %s (%s)", li.servers[p], strerror(-rc),
                      depfs_last_error());
    }
    check_content(fs, "/wait", model, size);
    scrub_clean(fs, ino);
    depfs_unmount(fs);
    free(model);
}
END_TEST

/* Orphans of locks "to the end of the file" (a rebuild's tail lock: every
 * stripe from its end on, 2^62 of them), one taken to read and one to
 * write, whose dead writer stored a data unit past the file's end on one
 * server only (make test's CI at e2d3d05: a reconstruct interrupted while it
 * held its tail lock). Before, the repair walked all 2^62 stripes: it never
 * ended, kept the stripes locked, and the resumed reconstruct got EBUSY.
 * Now it looks only at the stripes some strip file or the size reaches. */
START_TEST(test_orphan_tail_lock)
{
    depfs_t *fs = mount_fs();
    const uint64_t stripe = 4 * 4096, tail = 3, past = 6; /* 6@4@4k */
    size_t size = 5 * stripe;
    uint8_t *model = calloc(1, 6 * stripe);
    uint64_t ino = write_file(fs, "depfs@6@4@4k:/tail", model, 0, size);
    depfs_layout_info li;
    layout_of(fs, ino, &li);
    layout lay = layout_from(&li);
    /* a reader's tail lock, everywhere */
    for (unsigned p = 0; p < li.n; p++)
        raw_lock(li.servers[p], ino, tail, UINT64_MAX / 4, T_ORPHAN_CLIENT, T_ORPHAN_OP, true);
    usleep(T_LEASE_WAIT_US);
    int rc = depfs_repair_orphan_lock(fs, ino, tail, UINT64_MAX / 4, T_ORPHAN_CLIENT, T_ORPHAN_OP);
    ck_assert_msg(rc == 0, "repair of a reading tail lock: %s (%s)", strerror(-rc),
                  depfs_last_error());
    /* a writer's tail lock, everywhere, and one unit of stripe 6 stored */
    for (unsigned p = 0; p < li.n; p++)
        raw_lock(li.servers[p], ino, tail, UINT64_MAX / 4, T_ORPHAN_CLIENT, T_ORPHAN_OP + 1,
                 false);
    uint8_t unit[4096];
    rnd_fill(unit, sizeof unit);
    raw_unit_write(layout_unit_server(&lay, past, 0), ino, layout_local_offset(&lay, past), unit,
                   sizeof unit);
    usleep(T_LEASE_WAIT_US);
    rc = depfs_repair_orphan_lock(fs, ino, tail, UINT64_MAX / 4, T_ORPHAN_CLIENT,
                                  T_ORPHAN_OP + 1);
    ck_assert_msg(rc == 0, "repair of a writing tail lock: %s (%s)", strerror(-rc),
                  depfs_last_error());
    /* the stripes are free again: a writer appends */
    write_file(fs, "/tail", model, size, stripe);
    scrub_clean(fs, ino);
    check_content(fs, "/tail", model, size + stripe);
    depfs_unmount(fs);
    free(model);
}
END_TEST

/* -------------------------------------- a write that meets a held lock */

#define T_HOLDER_OP 43u
#define T_HOLD_POLL_MS 2u
#define T_HOLD_POLLS 5000u /* x T_HOLD_POLL_MS: 10 s */

/* The lock counters of server id's IO_STAT. */
typedef struct lock_counts {
    uint64_t nacked, retried, waiting;
} lock_counts;

static lock_counts lock_counts_of(unsigned id)
{
    rpc_conn *c = ios_conn(id);
    Depfs__IoRequest q = DEPFS__IO_REQUEST__INIT;
    ProtobufCMessage *m = NULL;
    ck_assert_int_eq(rpc_call_msg(c, DEPFS__IO_OP__IO_STAT, &q.base, NULL, 0, NULL, 0, 2000,
                                  &depfs__io_reply__descriptor, &m, NULL), 0);
    Depfs__IoReply *rep = (Depfs__IoReply *)m;
    ck_assert_int_eq(rep->err, 0);
    lock_counts n = {rep->locks_nacked, rep->locks_retried, rep->locks_waiting};
    protobuf_c_message_free_unpacked(m, NULL);
    rpc_conn_close(c);
    return n;
}

typedef struct held_lock {
    uint64_t ino;
    depfs_layout_info li;
    uint32_t down;    /* server id not held on (killed), or UINT32_MAX */
    uint32_t gate;    /* the file's gate (client/lib/io_fanout.c): lowest server id up */
    uint64_t nacked;  /* the servers' locks_nacked once the lock was taken */
    uint64_t retried; /* and their locks_retried */
    bool gate_waited; /* a request waited at the gate while it was held */
} held_lock;

/* Takes stripe 0 of h's file by hand on each of its servers but h->down,
 * and notes the gate and the servers' lock counters. */
static void hold_stripe0(held_lock *h)
{
    h->gate = UINT32_MAX;
    h->nacked = h->retried = 0;
    for (unsigned p = 0; p < h->li.n; p++) {
        uint32_t id = h->li.servers[p];
        if (id == h->down)
            continue;
        raw_lock(id, h->ino, 0, 1, T_ORPHAN_CLIENT, T_HOLDER_OP, false);
        lock_counts n = lock_counts_of(id);
        h->nacked += n.nacked;
        h->retried += n.retried;
        if (id < h->gate)
            h->gate = id;
    }
}

/* The sum of a counter over h's servers but h->down. */
static uint64_t counted(const held_lock *h, bool retried)
{
    uint64_t sum = 0;
    for (unsigned p = 0; p < h->li.n; p++)
        if (h->li.servers[p] != h->down) {
            lock_counts n = lock_counts_of(h->li.servers[p]);
            sum += retried ? n.retried : n.nacked;
        }
    return sum;
}

static void unlock_stripe0(const held_lock *h, uint32_t server)
{
    Depfs__LockSpec l = DEPFS__LOCK_SPEC__INIT;
    l.first_stripe = 0;
    l.stripe_count = 1;
    l.owner_client = T_ORPHAN_CLIENT;
    l.owner_op = T_HOLDER_OP;
    Depfs__IoRequest q = DEPFS__IO_REQUEST__INIT;
    q.file_id = h->ino;
    q.lock = &l;
    ck_assert_int_eq(raw_call(server, DEPFS__IO_OP__IO_UNLOCK, &q, NULL, 0), 0);
}

/* The holder: keeps stripe 0 until the client's first try was refused,
 * then lets go of every server but the gate, and of the gate once a
 * request waits there (or after the polls' bound: a client that never
 * waits). Steps, not sleeps, so a slow machine changes nothing: the
 * waiting round the gate lets through finds the other servers free. */
static void *release_later(void *arg)
{
    held_lock *h = arg;
    for (unsigned i = 0; i < T_HOLD_POLLS && counted(h, false) == h->nacked; i++)
        clock_sleep_ms(T_HOLD_POLL_MS);
    for (unsigned p = 0; p < h->li.n; p++)
        if (h->li.servers[p] != h->down && h->li.servers[p] != h->gate)
            unlock_stripe0(h, h->li.servers[p]);
    for (unsigned i = 0; i < T_HOLD_POLLS && !h->gate_waited; i++) {
        h->gate_waited = lock_counts_of(h->gate).waiting > 0;
        if (!h->gate_waited)
            clock_sleep_ms(T_HOLD_POLL_MS);
    }
    unlock_stripe0(h, h->gate);
    return NULL;
}

/* Another owner holds stripe 0 of a fresh 6@4@4k file while a client
 * writes into it (degraded: reads it, the server of its first unit
 * killed, so the read decodes under the stripe locks). NACKed once, the
 * next try waits at the gate and goes through when the stripes are
 * released, in one more round (before: a back-off sleep and a new try,
 * again and again, each counted by the servers as a retry). */
static void meet_a_held_lock(bool degraded)
{
    depfs_t *fs = mount_fs();
    const size_t size = 2 * 4 * 4096; /* 2 stripes */
    uint8_t *model = calloc(1, size);
    held_lock h = {.down = UINT32_MAX};
    h.ino = write_file(fs, "depfs@6@4@4k:/held", model, 0, size);
    layout_of(fs, h.ino, &h.li);
    if (degraded) {
        layout lay = layout_from(&h.li);
        h.down = layout_unit_server(&lay, 0, 0);
        td_ios_kill(&g_cl, h.down);
    }
    hold_stripe0(&h);
    pthread_t thr;
    ck_assert_int_eq(pthread_create(&thr, NULL, release_later, &h), 0);
    if (degraded)
        check_content(fs, "/held", model, size); /* unit 0 of stripe 0: decoded */
    else
        write_file(fs, "/held", model, 100, 1000); /* a partial stripe of stripe 0 */
    pthread_join(thr, NULL);
    ck_assert_msg(h.gate_waited, "no request of the %s waited at the gate",
                  degraded ? "degraded read" : "write");
    uint64_t retried = counted(&h, true) - h.retried;
    /* one waiting try: at most a request per server (the round's and the
     * gate's), each counted once, by its answer */
    ck_assert_msg(retried > 0 && retried <= h.li.n,
                  "%" PRIu64 " lock requests retried for one %s that met a held lock", retried,
                  degraded ? "degraded read" : "write");
    if (!degraded)
        scrub_clean(fs, h.ino);
    check_content(fs, "/held", model, size);
    depfs_unmount(fs);
    free(model);
}

START_TEST(test_write_waits_for_a_held_lock)
{
    meet_a_held_lock(false);
}
END_TEST

START_TEST(test_degraded_read_waits_for_a_held_lock)
{
    meet_a_held_lock(true);
}
END_TEST

/* ------------------------------------------------------- cluster epochs */

/* A client that mounted before two state changes writes: every server
 * refuses its old epoch (ESTALE), it refreshes from the MDS and redoes. */
/* ------------------------------------- SEEK_DATA/SEEK_HOLE never lie */

/* depfs_lseek from off; -errno or the offset. */
static int64_t seek(depfs_t *fs, const char *path, uint64_t off, int whence)
{
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, path, O_RDONLY, 0, &fh), 0);
    uint64_t out = 0;
    int rc = depfs_lseek(fh, off, whence, &out);
    ck_assert_int_eq(depfs_close(fh), 0);
    return rc < 0 ? rc : (int64_t)out;
}

START_TEST(test_seek_never_a_false_hole)
{
    /* 6@4 with 4 KiB units (16 KiB stripes), a 1 MiB sparse file: 8 KiB
     * at 100 KiB (units 1 and 2 of stripe 6); then, with the server of
     * unit 0 of stripe 32 down, 4 KiB there (that unit alone): its server
     * never gets it, the others keep dirty records. Brought back UP by
     * hand without a rebuild (as a server cut off from one writer only
     * stays UP until depfs-recovery acts), its strip file has a hole there:
     * the seek must still call the unit data. Then the rejoin rebuilds it
     * and everything is exact again. */
    const uint64_t size = 1 << 20, a_off = 100 << 10, a_len = 8 << 10;
    const uint64_t b_off = 512 << 10, b_len = 4 << 10, su = 4096;
    uint8_t *model = calloc(1, size);
    ck_assert_ptr_nonnull(model);
    depfs_t *fs = mount_fs();
    uint64_t ino = write_file(fs, "depfs@6@4@4k:/sk", model, a_off, a_len);
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, "/sk", O_RDWR, 0, &fh), 0);
    ck_assert_int_eq(depfs_ftruncate(fh, size), 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    /* healthy: exactly the units written; st_blocks the data's share:
     * 2 data units and 2 parity units of 4 KiB x 4/6 */
    ck_assert_int_eq(seek(fs, "/sk", 0, SEEK_DATA), (int64_t)a_off);
    ck_assert_int_eq(seek(fs, "/sk", a_off, SEEK_HOLE), (int64_t)(a_off + a_len));
    ck_assert_int_eq(seek(fs, "/sk", a_off + a_len, SEEK_DATA), -ENXIO);
    ck_assert_int_eq(seek(fs, "/sk", 0, SEEK_HOLE), 0);
    ck_assert_int_eq(seek(fs, "/sk", size, SEEK_DATA), -ENXIO);
    struct stat st;
    ck_assert_int_eq(depfs_getattr(fs, ino, &st), 0);
    ck_assert_int_eq(st.st_blocks, (4 * su * 4 / 6 + 511) / 512);

    depfs_layout_info li;
    layout_of(fs, ino, &li);
    unsigned S = li.servers[(0 + b_off / (4 * su)) % 6]; /* unit 0 of stripe 32 */
    depfs_unmount(fs);
    td_ios_kill(&g_cl, S);
    mds_set_state(S, DEPFS__SERVER_STATE__SERVER_DOWN); /* as depfs-recovery does */
    fs = mount_fs();
    write_file(fs, "/sk", model, b_off, b_len); /* around S: dirty records */
    depfs_unmount(fs);
    ck_assert(td_ios_start(&g_cl, S, "--rebuild"));
    char strip[512];
    td_strip_path(&g_cl, S, ino, strip, sizeof strip);
    int sfd = open(strip, O_RDONLY);
    ck_assert_int_ge(sfd, 0);
    off_t d = lseek(sfd, (off_t)(b_off / 4), SEEK_DATA); /* stripe 32 is at local 32 x su */
    ck_assert_msg(d != (off_t)(b_off / 4), "S holds the unit it missed");
    close(sfd);

    fs = mount_fs(); /* REBUILDING: its holes mean nothing */
    ck_assert_int_le(seek(fs, "/sk", a_off + a_len, SEEK_DATA), (int64_t)b_off);
    ck_assert_int_eq(seek(fs, "/sk", b_off, SEEK_DATA), (int64_t)b_off);
    ck_assert_int_ge(seek(fs, "/sk", b_off, SEEK_HOLE), (int64_t)(b_off + b_len));
    /* UP by hand, at the MDS and at S itself, never rebuilt */
    ck_assert_int_eq(depfs_set_server_state(fs, S, DEPFS_SERVER_UP), 0);
    depfs_push_result pr;
    ck_assert_int_eq(depfs_push_state(fs, &S, 1, DEPFS_SERVER_UP, 0, &pr), 1);
    depfs_unmount(fs);
    fs = mount_fs();
    ck_assert_int_eq(seek(fs, "/sk", b_off, SEEK_DATA), (int64_t)b_off);
    ck_assert_int_ge(seek(fs, "/sk", b_off, SEEK_HOLE), (int64_t)(b_off + b_len));
    ck_assert_int_le(seek(fs, "/sk", a_off + a_len, SEEK_DATA), (int64_t)b_off);

    /* rebuilt and rejoined: exact again */
    ck_assert_int_eq(depfs_set_server_state(fs, S, DEPFS_SERVER_REBUILDING), 0);
    ck_assert_int_eq(depfs_push_state(fs, &S, 1, DEPFS_SERVER_REBUILDING, 0, &pr), 1);
    int rc = depfs_server_rejoin(fs, S, NULL, NULL);
    ck_assert_msg(rc == 0, "rejoin: %s (%s)", strerror(-rc), depfs_last_error());
    depfs_unmount(fs);
    fs = mount_fs();
    ck_assert_int_eq(seek(fs, "/sk", a_off + a_len, SEEK_DATA), (int64_t)b_off);
    ck_assert_int_eq(seek(fs, "/sk", b_off, SEEK_HOLE), (int64_t)(b_off + b_len));
    ck_assert_int_eq(seek(fs, "/sk", b_off + b_len, SEEK_DATA), -ENXIO);
    scrub_clean(fs, ino);
    check_content(fs, "/sk", model, size);
    depfs_unmount(fs);
    free(model);
}
END_TEST

START_TEST(test_epoch_refresh)
{
    depfs_t *fs = mount_fs();
    uint8_t model[50000];
    uint64_t ino = write_file(fs, "depfs@8@6@4k:/ep", model, 0, sizeof model);
    mds_set_state(7, 2);
    mds_set_state(7, 0);
    Depfs__IoRequest q = DEPFS__IO_REQUEST__INIT;
    q.has_cluster_epoch = true;
    q.cluster_epoch = 2;
    ck_assert_int_eq(raw_call(7, DEPFS__IO_OP__IO_SET_STATE, &q, NULL, 0), 0);
    write_file(fs, "/ep", model, 1000, 20000); /* partial stripes: locks, pre-reads */
    scrub_clean(fs, ino);
    check_content(fs, "/ep", model, sizeof model);
    depfs_server_status st[T_SERVERS];
    ck_assert_int_eq(depfs_cluster_status(fs, st, T_SERVERS), (int)T_SERVERS);
    for (unsigned i = 0; i < T_SERVERS; i++)
        ck_assert(st[i].reachable); /* nobody was taken for "behind" */
    depfs_unmount(fs);
}
END_TEST

/* ------------------------------------------- `depfs reconstruct` (CLI) */

#define T_RC_FILES 5u

static int run_reconstruct(unsigned S, const char *extra)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s/depfs' --config '%s' reconstruct %u --rate 200 --jobs 3 %s "
             ">>'%s/reconstruct.out' 2>&1",
             td_bin_dir(), g_cl.conf, S, extra, g_cl.dir);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(test_reconstruct_cli)
{
    depfs_t *fs = mount_fs();
    ck_assert_int_eq(depfs_mkdir_path(fs, "/r", 0755), 0);
    uint64_t ino[T_RC_FILES];
    long len[T_RC_FILES];
    uint8_t *orig[T_RC_FILES], *model[T_RC_FILES];
    size_t size[T_RC_FILES];
    char path[T_RC_FILES][64], strip[T_RC_FILES][512];
    unsigned S = 5;
    for (unsigned i = 0; i < T_RC_FILES; i++) {
        size[i] = 70000 + 33333 * i;
        model[i] = calloc(1, size[i]);
        snprintf(path[i], sizeof path[i], "depfs@8@%u@4k:/r/f%u", 4 + i % 4, i);
        ino[i] = write_file(fs, path[i], model[i], 0, size[i]);
        td_strip_path(&g_cl, S, ino[i], strip[i], sizeof strip[i]);
        orig[i] = slurp(strip[i], &len[i]);
        ck_assert_ptr_nonnull(orig[i]);
    }
    depfs_unmount(fs);
    /* the node is replaced: empty data dir, started with --reconstruct */
    td_ios_kill(&g_cl, S);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/io%u'", g_cl.dir, S);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert(td_ios_start(&g_cl, S, "--reconstruct"));
    /* an earlier run finished file 0 (so this one skips it) */
    char state[512];
    snprintf(state, sizeof state, "%s/depfs-reconstruct-%u.state", g_cl.dir, S);
    FILE *f = fopen(state, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%llu\n", (unsigned long long)ino[0]);
    fclose(f);
    ck_assert_int_eq(run_reconstruct(S, ""), 0);
    ck_assert_int_ne(access(state, F_OK), 0); /* removed at the end */
    ck_assert_int_ne(access(strip[0], F_OK), 0); /* skipped: resumed past it */
    for (unsigned i = 1; i < T_RC_FILES; i++) {
        long now_len;
        uint8_t *now = slurp(strip[i], &now_len);
        ck_assert_ptr_nonnull(now);
        ck_assert_int_ge(now_len, len[i]);
        ck_assert_msg(memcmp(now, orig[i], (size_t)len[i]) == 0, "file %u differs", i);
        free(now);
    }
    /* --restart ignores a state file: file 0 comes back too (on the node,
     * put back into RECONSTRUCTING: an up server is refused) */
    td_ios_kill(&g_cl, S);
    ck_assert(td_ios_start(&g_cl, S, "--reconstruct"));
    f = fopen(state, "w");
    fprintf(f, "%llu\n", (unsigned long long)ino[0]);
    fclose(f);
    ck_assert_int_eq(run_reconstruct(S, "--restart"), 0);
    ck_assert_int_eq(access(strip[0], F_OK), 0);
    fs = mount_fs();
    depfs_server_status st[T_SERVERS];
    ck_assert_int_eq(depfs_cluster_status(fs, st, T_SERVERS), (int)T_SERVERS);
    ck_assert_int_eq(st[S].state, 0);
    for (unsigned i = 0; i < T_RC_FILES; i++) {
        scrub_clean(fs, ino[i]);
        check_content(fs, strchr(path[i], ':') + 1, model[i], size[i]);
        free(orig[i]);
        free(model[i]);
    }
    depfs_unmount(fs);
    /* an up server is refused */
    ck_assert_int_eq(run_reconstruct(S, ""), 1);
}
END_TEST

static TCase *own_cluster(const char *name, const TTest *t)
{
    TCase *tc = tcase_create(name);
    tcase_add_unchecked_fixture(tc, cluster_up, cluster_down);
    tcase_set_timeout(tc, T_TEST_TIMEOUT_S);
    tcase_add_test(tc, t);
    return tc;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    seed_rng_default(88172645463325252ull);
    Suite *s = suite_create("client_rebuild");
    suite_add_tcase(s, own_cluster("rebuild_file", test_rebuild_deleted_strip));
    suite_add_tcase(s, own_cluster("rebuild_migrated", test_rebuild_migrated_away));
    suite_add_tcase(s, own_cluster("dirty_rejoin", test_dirty_rejoin));
    suite_add_tcase(s, own_cluster("truncate_while_down", test_truncate_while_down));
    suite_add_tcase(s, own_cluster("stalled_server", test_stalled_server_serves_no_stale_reads));
    suite_add_tcase(s, own_cluster("read_rechecks_marks", test_read_rechecks_old_marks));
    suite_add_tcase(s, own_cluster("files_on_server", test_files_on_server));
    suite_add_tcase(s, own_cluster("orphan", test_orphan_repair));
    suite_add_tcase(s, own_cluster("orphan_stale_server", test_orphan_on_stale_server));
    suite_add_tcase(s, own_cluster("orphans_overlap", test_orphans_overlap));
    suite_add_tcase(s, own_cluster("orphan_beyond_nk1", test_orphan_beyond_n_minus_k_one));
    suite_add_tcase(s, own_cluster("orphan_landed_nowhere", test_orphan_landed_nowhere));
    suite_add_tcase(s, own_cluster("intents_crash", test_intents_survive_a_crash_of_every_server));
    suite_add_tcase(s, own_cluster("orphan_waits", test_orphan_repair_waits_for_servers));
    suite_add_tcase(s, own_cluster("orphan_tail_lock", test_orphan_tail_lock));
    suite_add_tcase(s, own_cluster("write_waits", test_write_waits_for_a_held_lock));
    suite_add_tcase(s, own_cluster("degraded_read_waits", test_degraded_read_waits_for_a_held_lock));
    suite_add_tcase(s, own_cluster("reconstruct_cli", test_reconstruct_cli));
    suite_add_tcase(s, own_cluster("epoch_refresh", test_epoch_refresh));
    suite_add_tcase(s, own_cluster("seek_false_hole", test_seek_never_a_false_hole));
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
