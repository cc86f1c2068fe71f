/* test_client_status.c - libdepfs's status vector against the cluster view
 * (client/lib/core_servers.c), with real daemons (tests/lib/cluster.h: depfs-mds
 * and 4 depfs-ioserver; server_down_expiry_ms = 60 s there):
 *   - a client reading a file while one of its servers is SIGKILLed marks
 *     that server failed;
 *   - while the server stays dead the mark stands, untouched, even though
 *     the MDS still calls it up and the cluster epoch moves on because of
 *     another server's state changes (no new attempt, so no timeout);
 *   - once the cluster has declared it DOWN, it has been restarted with
 *     --rebuild and rejoined (MDS UP with a newer epoch, from a second
 *     client, as depfs-recovery does), the first client uses it again
 *     within about a second: not after the 60 s expiry. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "depfs_admin.h"
#include "core.h"
#include "tests/lib/cluster.h"

#define T_SERVERS 4u
#define T_TEST_TIMEOUT_S 60
#define T_FILE_BYTES (256u * 1024u)
#define T_DEAD 1u            /* the server that dies and comes back */
#define T_OTHER 2u           /* a server whose state changes meanwhile */
#define T_RECHECK_WAIT_US 1200000u /* > the client's recheck period (1 s) */
#define T_UP_WAIT_ROUNDS 5u  /* rechecks allowed before "promptly" fails */
#define T_STATE_UP DEPFS_SERVER_UP
#define T_STATE_DOWN DEPFS_SERVER_DOWN

static td_cluster g_cl;

static void cluster_up(void) { td_cluster_up(&g_cl, T_SERVERS, NULL); }
static void cluster_down(void) { td_cluster_down(&g_cl); }

static depfs_t *mount_fs(void) { return td_mount(&g_cl); }

static void write_model(depfs_t *fs, const char *path, uint8_t *model, size_t len)
{
    for (size_t i = 0; i < len; i++)
        model[i] = (uint8_t)(i * 131u + 7u);
    depfs_fh_t *fh = NULL;
    int rc = depfs_open(fs, path, O_CREAT | O_RDWR, 0644, &fh);
    ck_assert_msg(rc == 0, "open %s: %s (%s)", path, strerror(-rc), depfs_last_error());
    ck_assert_int_eq(depfs_write(fh, model, len, 0), (ssize_t)len);
    ck_assert_int_eq(depfs_fsync(fh), 0);
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

static dc_server *server_of(depfs_t *fs, uint32_t id)
{
    dc_server *s = dc_server_by_id(fs, id);
    ck_assert_ptr_nonnull(s);
    return s;
}

static void set_state(depfs_t *fs, uint32_t id, int state)
{
    int rc = depfs_set_server_state(fs, id, state);
    ck_assert_msg(rc == 0, "set state of %u: %s (%s)", id, strerror(-rc), depfs_last_error());
}

START_TEST(test_mark_follows_cluster_view)
{
    static uint8_t model[T_FILE_BYTES];
    depfs_t *fs = mount_fs();  /* the client under test */
    depfs_t *adm = mount_fs(); /* plays depfs-recovery */
    write_model(fs, "depfs@4@2@4k:/f", model, sizeof model);

    /* 1. the server dies; a read marks it failed */
    td_ios_kill(&g_cl, T_DEAD);
    read_check(fs, "/f", model, sizeof model);
    dc_server *dead = server_of(fs, T_DEAD);
    uint64_t mark = atomic_load(&dead->down_until_ms);
    ck_assert_msg(mark > dc_now_ms(), "server %u is not marked failed after a read", T_DEAD);

    /* 2. still dead, the MDS still says UP, the epoch moves on (another
     * server's state changes): the mark stands and nobody tries the dead
     * server again (a retry would have renewed the mark) */
    set_state(adm, T_OTHER, T_STATE_DOWN);
    set_state(adm, T_OTHER, T_STATE_UP);
    for (unsigned round = 0; round < 2; round++) {
        usleep(T_RECHECK_WAIT_US);
        read_check(fs, "/f", model, sizeof model);
        depfs_server_status st[T_SERVERS];
        ck_assert_int_eq(depfs_cluster_status(fs, st, T_SERVERS), (int)T_SERVERS);
        ck_assert(!st[T_DEAD].reachable);
    }
    ck_assert_msg(atomic_load(&dead->down_until_ms) == mark,
                  "the failure mark of dead server %u was lifted or renewed", T_DEAD);
    ck_assert_uint_gt(atomic_load(&fs->cluster_epoch), 0); /* it did see the new epochs */

    /* 3. the cluster declares it DOWN, it restarts and rejoins: UP at a
     * newer epoch than the failure */
    set_state(adm, T_DEAD, T_STATE_DOWN);
    ck_assert(td_ios_start(&g_cl, T_DEAD, "--rebuild"));
    int rc = depfs_server_rejoin(adm, T_DEAD, NULL, NULL);
    ck_assert_msg(rc == 0, "rejoin: %s (%s)", strerror(-rc), depfs_last_error());

    /* 4. the client under test uses it again promptly (reads only; no
     * status call that would refresh the view for it) */
    unsigned rounds = 0;
    while (atomic_load(&dead->down_until_ms) != 0 && rounds++ < T_UP_WAIT_ROUNDS) {
        usleep(T_RECHECK_WAIT_US);
        read_check(fs, "/f", model, sizeof model);
    }
    ck_assert_msg(atomic_load(&dead->down_until_ms) == 0,
                  "server %u is up again for the cluster but still marked failed here",
                  T_DEAD);
    depfs_server_status st[T_SERVERS];
    ck_assert_int_eq(depfs_cluster_status(fs, st, T_SERVERS), (int)T_SERVERS);
    ck_assert(st[T_DEAD].reachable);
    ck_assert_int_eq(st[T_DEAD].state, T_STATE_UP);
    ck_assert(!dc_server_is_down(fs, T_DEAD));
    read_check(fs, "/f", model, sizeof model);
    depfs_scrub_report rep;
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, "/f", O_RDONLY, 0, &fh), 0);
    uint64_t ino = depfs_fh_ino(fh);
    ck_assert_int_eq(depfs_close(fh), 0);
    ck_assert_int_eq(depfs_scrub_ino(fs, ino, false, &rep), 0);
    ck_assert_uint_eq(rep.stripes_bad, 0);
    ck_assert_uint_eq(rep.stripes_unreadable, 0);
    depfs_unmount(adm);
    depfs_unmount(fs);
}
END_TEST

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    Suite *s = suite_create("client_status");
    TCase *tc = tcase_create("mark_follows_cluster_view");
    tcase_add_unchecked_fixture(tc, cluster_up, cluster_down);
    tcase_set_timeout(tc, T_TEST_TIMEOUT_S);
    tcase_add_test(tc, test_mark_follows_cluster_view);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
