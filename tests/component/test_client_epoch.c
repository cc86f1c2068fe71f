/* test_client_epoch.c - a state change reaches the MDS before the I/O
 * servers (depfs-recovery updates the MDS, then pushes the new epoch to
 * every server). A client that refreshed its view in between sends the new
 * epoch to servers that still know the old one: they answer "server
 * behind". The client must wait for the push (client/lib/io_fanout.c), not
 * mark every server failed, which on a 4@2 file with one server down would
 * fail the write with EIO. And a truncate one server refuses for a while
 * must complete, not fail with the other strips already cut. Real daemons
 * (tests/lib/cluster.h: depfs-mds and 4 depfs-ioserver). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "depfs.h"
#include "recover.h"
#include "tests/lib/cluster.h"

#define T_SERVERS 4u
#define T_TEST_TIMEOUT_S 60
#define T_FILE_BYTES (256u * 1024u)
#define T_OTHER 2u                 /* the server the state change is about */
#define T_PUSH_DELAY_US 200000u    /* < the 1000 ms request timeout */
#define T_STATE_DOWN DEPFS_SERVER_DOWN

static td_cluster g_cl;

static void cluster_up(void) { td_cluster_up(&g_cl, T_SERVERS, NULL); }
static void cluster_down(void) { td_cluster_down(&g_cl); }

static depfs_t *mount_fs(void) { return td_mount(&g_cl); }

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(i * 131u + seed);
}

static void write_all(depfs_t *fs, const char *path, const uint8_t *buf, size_t len)
{
    depfs_fh_t *fh = NULL;
    int rc = depfs_open(fs, path, O_CREAT | O_RDWR, 0644, &fh);
    ck_assert_msg(rc == 0, "open %s: %s (%s)", path, strerror(-rc), depfs_last_error());
    ssize_t n = depfs_write(fh, buf, len, 0);
    ck_assert_msg(n == (ssize_t)len, "write %s: %zd (%s)", path, n, depfs_last_error());
    rc = depfs_fsync(fh);
    ck_assert_msg(rc == 0, "fsync %s: %s (%s)", path, strerror(-rc), depfs_last_error());
    ck_assert_int_eq(depfs_close(fh), 0);
}

static void read_check(depfs_t *fs, const char *path, const uint8_t *model, size_t len)
{
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, path, O_RDONLY, 0, &fh), 0);
    uint8_t *got = malloc(len);
    ck_assert_ptr_nonnull(got);
    ssize_t n = depfs_read(fh, got, len, 0);
    ck_assert_msg(n == (ssize_t)len, "read %zd of %zu (%s)", n, len, depfs_last_error());
    ck_assert_msg(memcmp(got, model, len) == 0, "%s: content differs", path);
    free(got);
    ck_assert_int_eq(depfs_close(fh), 0);
}

typedef struct late_push {
    depfs_t *adm;
    uint64_t epoch;
    int rc[T_SERVERS];
} late_push;

/* depfs-recovery's second step, a moment late. */
static void *push_late(void *arg)
{
    late_push *p = arg;
    usleep(T_PUSH_DELAY_US);
    for (uint32_t id = 0; id < T_SERVERS; id++)
        p->rc[id] = dc_push_state(p->adm, id, p->epoch, -1);
    return NULL;
}

START_TEST(test_server_behind_waits_for_push)
{
    static uint8_t v1[T_FILE_BYTES], v2[T_FILE_BYTES];
    depfs_t *fs = mount_fs();  /* the client under test */
    depfs_t *adm = mount_fs(); /* plays depfs-recovery */
    fill(v1, sizeof v1, 7);
    fill(v2, sizeof v2, 91);
    write_all(fs, "depfs@4@2@4k:/f", v1, sizeof v1);

    /* step 1 only: the MDS has the new epoch, the servers do not */
    late_push push = {.adm = adm};
    int rc = dc_mds_set_state(adm, T_OTHER, T_STATE_DOWN, &push.epoch);
    ck_assert_msg(rc == 0, "set state: %s (%s)", strerror(-rc), depfs_last_error());
    depfs_server_status st[T_SERVERS];
    ck_assert_int_eq(depfs_cluster_status(fs, st, T_SERVERS), (int)T_SERVERS);
    ck_assert_uint_eq(atomic_load(&fs->cluster_epoch), push.epoch);

    /* the write meets three servers behind; the push reaches them meanwhile */
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, push_late, &push), 0);
    write_all(fs, "/f", v2, sizeof v2);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    for (uint32_t id = 0; id < T_SERVERS; id++) {
        ck_assert_msg(push.rc[id] == 0, "push to %u: %s", id, strerror(-push.rc[id]));
        if (id == T_OTHER)
            continue;
        ck_assert_msg(!dc_server_is_down(fs, id),
                      "server %u was marked failed for being a moment behind the epoch", id);
    }

    /* the server the cluster called down missed the write: rejoin rebuilds it */
    rc = depfs_server_rejoin(adm, T_OTHER, NULL, NULL);
    ck_assert_msg(rc == 0, "rejoin: %s (%s)", strerror(-rc), depfs_last_error());
    ck_assert_int_eq(depfs_cluster_status(fs, st, T_SERVERS), (int)T_SERVERS);
    read_check(fs, "/f", v2, sizeof v2);
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, "/f", O_RDONLY, 0, &fh), 0);
    uint64_t ino = depfs_fh_ino(fh);
    ck_assert_int_eq(depfs_close(fh), 0);
    depfs_scrub_report rep;
    ck_assert_int_eq(depfs_scrub_ino(fs, ino, false, &rep), 0);
    ck_assert_uint_eq(rep.stripes_bad, 0);
    ck_assert_uint_eq(rep.stripes_unreadable, 0);
    depfs_unmount(adm);
    depfs_unmount(fs);
}
END_TEST

/* A truncate that one server refuses for a while (it knows a newer epoch
 * than the client can learn) must not fail half done: before, the other
 * servers cut their strips, the truncate failed with EAGAIN and the MDS
 * kept the old size, so the file read back zeros where acknowledged bytes
 * had been (campaign seed 14 round 1). Now the refusing server is recorded
 * as missing the cut and the truncate completes; its rejoin rebuilds it. */
START_TEST(test_truncate_never_half_done)
{
    static uint8_t v1[T_FILE_BYTES], got[T_FILE_BYTES];
    depfs_t *fs = mount_fs();
    depfs_t *adm = mount_fs();
    fill(v1, sizeof v1, 33);
    write_all(fs, "depfs@4@2@4k:/t", v1, sizeof v1);
    uint64_t epoch = atomic_load(&adm->cluster_epoch);
    /* server T_OTHER is ahead of the MDS: every request to it is refused */
    ck_assert_int_eq(dc_push_state(adm, T_OTHER, epoch + 3, -1), 0);
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, "/t", O_RDWR, 0, &fh), 0);
    int rc = depfs_ftruncate(fh, 0);
    char why[512];
    snprintf(why, sizeof why, "%s", depfs_last_error());
    if (rc != 0) {
        /* a failed truncate must have left the file as it was */
        ssize_t n = depfs_read(fh, got, sizeof got, 0);
        ck_assert_msg(n == (ssize_t)sizeof got && memcmp(got, v1, sizeof got) == 0,
                      "a failed truncate (%s: %s) left the file damaged", strerror(-rc), why);
    }
    ck_assert_msg(rc == 0, "truncate: %s (%s)", strerror(-rc), why);
    ck_assert_int_eq(depfs_close(fh), 0);
    /* the MDS catches up (depfs-recovery's rejoin of the refusing server) */
    uint64_t e2 = 0;
    for (unsigned i = 0; i < 16 && e2 <= epoch + 3; i++) /* each change bumps the epoch */
        ck_assert_int_eq(dc_mds_set_state(adm, T_OTHER, i % 2 ? DEPFS_SERVER_UP
                                                                : DEPFS_SERVER_REBUILDING, &e2), 0);
    ck_assert_uint_gt(e2, epoch + 3); /* the rejoin below sets it UP */
    for (uint32_t id = 0; id < T_SERVERS; id++)
        ck_assert_int_eq(dc_push_state(adm, id, e2, -1), 0);
    rc = depfs_server_rejoin(adm, T_OTHER, NULL, NULL);
    ck_assert_msg(rc == 0, "rejoin: %s (%s)", strerror(-rc), depfs_last_error());
    /* extended again: the cut bytes do not come back */
    memset(v1, 0, sizeof v1);
    v1[sizeof v1 - 1] = 7;
    ck_assert_int_eq(depfs_open(fs, "/t", O_RDWR, 0, &fh), 0);
    ck_assert_int_eq(depfs_write(fh, &v1[sizeof v1 - 1], 1, sizeof v1 - 1), 1);
    ck_assert_int_eq(depfs_close(fh), 0);
    read_check(fs, "/t", v1, sizeof v1);
    depfs_unmount(adm);
    depfs_unmount(fs);
}
END_TEST

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    Suite *s = suite_create("client_epoch");
    TCase *tc = tcase_create("server_behind");
    tcase_add_unchecked_fixture(tc, cluster_up, cluster_down);
    tcase_set_timeout(tc, T_TEST_TIMEOUT_S);
    tcase_add_test(tc, test_server_behind_waits_for_push);
    tcase_add_test(tc, test_truncate_never_half_done);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
