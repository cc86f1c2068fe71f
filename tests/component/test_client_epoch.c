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
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "depfs.h"
#include "recover.h"
#include "tests/lib/bg_write.h"
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

/* Every stripe of ino read and consistent. */
static void scrub_clean(depfs_t *fs, uint64_t ino)
{
    depfs_scrub_report rep;
    ck_assert_int_eq(depfs_scrub_ino(fs, ino, false, &rep), 0);
    ck_assert_uint_eq(rep.stripes_bad, 0);
    ck_assert_uint_eq(rep.stripes_unreadable, 0);
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
    scrub_clean(fs, ino);
    depfs_unmount(adm);
    depfs_unmount(fs);
}
END_TEST

#define T_AROUND_BYTES 1000u
#define T_AROUND_PROBE_MS 20000u

static void write_at(depfs_t *fs, const char *path, const uint8_t *buf, size_t len, uint64_t off)
{
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, path, O_RDWR, 0, &fh), 0);
    ck_assert_int_eq(depfs_write(fh, buf, len, off), (ssize_t)len);
    int rc = depfs_fsync(fh);
    ck_assert_msg(rc == 0, "fsync %s: %s (%s)", path, strerror(-rc), depfs_last_error());
    ck_assert_int_eq(depfs_close(fh), 0);
}

/* The inode and layout of a 4@2@4k file. */
static uint64_t layout_4_2(depfs_t *fs, const char *path, layout *lay)
{
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, path, O_RDONLY, 0, &fh), 0);
    uint64_t ino = depfs_fh_ino(fh);
    depfs_layout_info li;
    ck_assert_int_eq(depfs_fh_layout(fh, &li), 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    ck_assert(li.n == 4 && li.k == 2 && li.stripe_unit == 4096);
    *lay = (layout){.n = li.n, .k = li.k, .su = li.stripe_unit, .version = li.version,
                    .codec_version = li.codec_version};
    for (unsigned p = 0; p < li.n; p++)
        lay->servers[p] = li.servers[p];
    return ino;
}

/* aw's client marks the server at position s_pos failed and writes (in
 * a thread); returns once, after its wait, the write went around that
 * server: the others' records name it, as probe sees. */
static void start_write_around(td_bg_write *aw, depfs_t *probe, const layout *lay, uint64_t ino,
                               unsigned s_pos)
{
    dc_server_mark_failed(aw->fs, lay->servers[s_pos], -ETIMEDOUT);
    td_bg_write_start(aw);
    uint32_t recorded = 0;
    for (unsigned waited = 0; waited < T_AROUND_PROBE_MS && !((recorded >> s_pos) & 1u);
         waited += 100) {
        usleep(100 * 1000);
        ck_assert_int_eq(dc_dirty_probe(probe, lay, ino, &recorded, NULL, NULL), 0);
    }
    ck_assert_msg((recorded >> s_pos) & 1u, "no dirty record names server %u",
                  lay->servers[s_pos]);
}

/* A truncate that one server refuses for a while (it knows a newer epoch
 * than the client can learn) must not fail half done: before, the other
 * servers cut their strips, the truncate failed with EAGAIN and the MDS
 * kept the old size, so the file read back zeros where acknowledged bytes
 * had been (campaign seed 14 round 1). Now the refusing server is recorded
 * as missing the cut and the truncate completes once that server, which
 * serves, no longer holds the cut bytes (an extension's hole would read
 * them back): here after its rejoin, which rebuilds it. */
typedef struct cut {
    depfs_fh_t *fh;
    int rc;
    char why[512];
    atomic_bool done;
} cut;

static void *truncate_to_zero(void *arg)
{
    cut *c = arg;
    c->rc = depfs_ftruncate(c->fh, 0);
    snprintf(c->why, sizeof c->why, "%s", depfs_last_error());
    atomic_store(&c->done, true);
    return NULL;
}

START_TEST(test_truncate_never_half_done)
{
    static uint8_t v1[T_FILE_BYTES], got[T_FILE_BYTES];
    depfs_t *fs = mount_fs();
    depfs_t *adm = mount_fs();
    fill(v1, sizeof v1, 33);
    write_all(fs, "depfs@4@2@4k:/t", v1, sizeof v1);
    layout lay;
    uint64_t ino = layout_4_2(fs, "/t", &lay);
    unsigned other_pos = 0;
    while (lay.servers[other_pos] != T_OTHER)
        other_pos++;
    uint64_t epoch = atomic_load(&adm->cluster_epoch);
    /* server T_OTHER is ahead of the MDS: every request to it is refused */
    ck_assert_int_eq(dc_push_state(adm, T_OTHER, epoch + 3, -1), 0);
    cut c = {.rc = 0};
    ck_assert_int_eq(depfs_open(fs, "/t", O_RDWR, 0, &c.fh), 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, truncate_to_zero, &c), 0);
    /* the others cut and record T_OTHER as missing it */
    uint32_t recorded = 0;
    for (unsigned waited = 0; waited < T_AROUND_PROBE_MS && !((recorded >> other_pos) & 1u) &&
                              !atomic_load(&c.done);
         waited += 100) {
        usleep(100 * 1000);
        (void)dc_dirty_probe(adm, &lay, ino, &recorded, NULL, NULL); /* T_OTHER refuses */
    }
    if (atomic_load(&c.done) && c.rc != 0) {
        /* a failed truncate must have left the file as it was */
        ssize_t n = depfs_read(c.fh, got, sizeof got, 0);
        ck_assert_msg(n == (ssize_t)sizeof got && memcmp(got, v1, sizeof got) == 0,
                      "a failed truncate (%s: %s) left the file damaged", strerror(-c.rc), c.why);
    }
    ck_assert_msg((recorded >> other_pos) & 1u, "no record names server %u (truncate: %s, %s)",
                  T_OTHER, strerror(-c.rc), c.why);
    ck_assert_msg(!atomic_load(&c.done), "the truncate was acknowledged (%s) while server %u "
                  "kept the cut bytes", strerror(-c.rc), T_OTHER);
    /* the MDS catches up (depfs-recovery's rejoin of the refusing server) */
    uint64_t e2 = 0;
    for (unsigned i = 0; i < 16 && e2 <= epoch + 3; i++) /* each change bumps the epoch */
        ck_assert_int_eq(dc_mds_set_state(adm, T_OTHER, i % 2 ? DEPFS_SERVER_UP
                                                                : DEPFS_SERVER_REBUILDING, &e2), 0);
    ck_assert_uint_gt(e2, epoch + 3); /* the rejoin below sets it UP */
    for (uint32_t id = 0; id < T_SERVERS; id++)
        ck_assert_int_eq(dc_push_state(adm, id, e2, -1), 0);
    int rc = depfs_server_rejoin(adm, T_OTHER, NULL, NULL);
    ck_assert_msg(rc == 0, "rejoin: %s (%s)", strerror(-rc), depfs_last_error());
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_msg(c.rc == 0, "truncate: %s (%s)", strerror(-c.rc), c.why);
    ck_assert_int_eq(depfs_close(c.fh), 0);
    /* extended again: the cut bytes do not come back */
    memset(v1, 0, sizeof v1);
    v1[sizeof v1 - 1] = 7;
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, "/t", O_RDWR, 0, &fh), 0);
    ck_assert_int_eq(depfs_write(fh, &v1[sizeof v1 - 1], 1, sizeof v1 - 1), 1);
    ck_assert_int_eq(depfs_close(fh), 0);
    read_check(fs, "/t", v1, sizeof v1);
    depfs_unmount(adm);
    depfs_unmount(fs);
}
END_TEST

/* A write that goes around a server the cluster still calls UP (only this
 * client cannot reach it) leaves that server's unit of the stripe stale,
 * with dirty records naming it on the others, until depfs-recovery demotes
 * and rebuilds it. Another client's read-modify-write of the same stripe
 * meanwhile pre-read the stale unit and stored parity made from it: the
 * rebuild then decoded the old bytes, and the first write's acknowledged
 * bytes were gone (long campaign seed 9301 round 7). Now the lock replies
 * name the untrusted server and the second writer decodes around it, and
 * the first write is acknowledged only once the server settled. */
START_TEST(test_write_around_up_server_stays_untrusted)
{
    enum { SU = 4096, K = 2, STRIPE = K * SU, FILE_BYTES = 8 * STRIPE };
    static uint8_t model[FILE_BYTES], a_bytes[T_AROUND_BYTES], b_bytes[T_AROUND_BYTES];
    depfs_t *a = mount_fs();   /* cannot reach server S */
    depfs_t *b = mount_fs();   /* a second node writing the same stripe */
    depfs_t *adm = mount_fs(); /* plays depfs-recovery */
    fill(model, sizeof model, 3);
    write_all(a, "depfs@4@2@4k:/w", model, sizeof model);
    layout lay;
    uint64_t ino = layout_4_2(a, "/w", &lay);

    /* stripe 1: data unit 0 on position 1 (S), data unit 1 on position 2 */
    const unsigned s_pos = 1;
    const uint32_t s_id = lay.servers[s_pos];
    td_bg_write aw = {.fs = a, .path = "/w", .buf = a_bytes, .len = sizeof a_bytes,
                      .off = STRIPE + 100};
    fill(a_bytes, sizeof a_bytes, 201);
    fill(b_bytes, sizeof b_bytes, 77);
    start_write_around(&aw, b, &lay, ino, s_pos);

    /* b rewrites part of unit 1 of the same stripe: a reconstruct-write that
     * reads unit 0, which S holds stale */
    write_at(b, "/w", b_bytes, sizeof b_bytes, STRIPE + SU + 100);
    memcpy(model + STRIPE + 100, a_bytes, sizeof a_bytes);
    memcpy(model + STRIPE + SU + 100, b_bytes, sizeof b_bytes);

    /* S still serves its old unit: a reader elsewhere would see the old
     * bytes, so the write must not be acknowledged yet */
    ck_assert_msg(!atomic_load(&aw.done), "the write around server %u was acknowledged while "
                  "it served its old unit (%s)", s_id, strerror(-aw.rc));

    /* depfs-recovery's answer to records naming a server that is up */
    int rc = depfs_server_rejoin(adm, s_id, NULL, NULL);
    ck_assert_msg(rc == 0, "rejoin: %s (%s)", strerror(-rc), depfs_last_error());
    rc = td_bg_write_join(&aw);
    ck_assert_msg(rc == 0, "write around, and its fsync: %s", strerror(-rc));

    depfs_t *fresh = mount_fs();
    read_check(fresh, "/w", model, sizeof model);
    scrub_clean(fresh, ino);
    depfs_unmount(fresh);
    depfs_unmount(adm);
    depfs_unmount(b);
    depfs_unmount(a);
}
END_TEST

/* The same stale unit must not reach a degraded reader nor the scrub
 * while its server serves: a reader decoding another lost unit of the
 * stripe decoded it from the stale one and returned wrong bytes (old,
 * acknowledged ones), and the scrub found the stripe inconsistent and,
 * with one parity unit, would rewrite the parity from the stale data. */
START_TEST(test_untrusted_unit_never_decoded_from)
{
    enum { SU = 4096, K = 2, STRIPE = K * SU, FILE_BYTES = 8 * STRIPE };
    static uint8_t model[FILE_BYTES], a_bytes[T_AROUND_BYTES], got[SU];
    depfs_t *a = mount_fs();   /* cannot reach server S */
    depfs_t *adm = mount_fs(); /* plays depfs-recovery */
    fill(model, sizeof model, 5);
    write_all(a, "depfs@4@2@4k:/u", model, sizeof model);
    layout lay;
    uint64_t ino = layout_4_2(a, "/u", &lay);

    /* stripe 1: data unit 0 on position 1 (S), data unit 1 on position 2 (T) */
    const unsigned s_pos = 1, t_pos = 2;
    const uint32_t s_id = lay.servers[s_pos], t_id = lay.servers[t_pos];
    td_bg_write aw = {.fs = a, .path = "/u", .buf = a_bytes, .len = sizeof a_bytes,
                      .off = STRIPE + 100};
    fill(a_bytes, sizeof a_bytes, 33);
    start_write_around(&aw, adm, &lay, ino, s_pos);
    memcpy(model + STRIPE + 100, a_bytes, sizeof a_bytes);

    /* the scrub leaves S's units of the file alone: they are untrusted */
    depfs_t *fresh = mount_fs();
    depfs_scrub_report rep;
    ck_assert_int_eq(depfs_scrub_ino(fresh, ino, false, &rep), 0);
    ck_assert_msg(rep.stripes_bad == 0, "scrub found %llu stripes inconsistent (a unit of the "
                  "untrusted server %u checked against the others)",
                  (unsigned long long)rep.stripes_bad, s_id);
    ck_assert_uint_gt(rep.units_unreachable, 0);

    /* T fails: unit 1 of stripe 1 is decoded, never from S's stale unit 0 */
    td_ios_kill(&g_cl, t_id);
    depfs_fh_t *rfh = NULL;
    ck_assert_int_eq(depfs_open(fresh, "/u", O_RDONLY, 0, &rfh), 0);
    ck_assert_int_eq(depfs_read(rfh, got, SU, STRIPE + SU), (ssize_t)SU);
    ck_assert_int_eq(depfs_close(rfh), 0);
    ck_assert_msg(memcmp(got, model + STRIPE + SU, SU) == 0,
                  "a degraded read decoded unit 1 from the untrusted unit 0");
    depfs_unmount(fresh);

    /* depfs-recovery's answers: rejoin S, then T once it is back */
    int rc = depfs_server_rejoin(adm, s_id, NULL, NULL);
    ck_assert_msg(rc == 0, "rejoin of %u: %s (%s)", s_id, strerror(-rc), depfs_last_error());
    rc = td_bg_write_join(&aw);
    ck_assert_msg(rc == 0, "write around, and its fsync: %s", strerror(-rc));
    ck_assert(td_ios_start(&g_cl, t_id, "--rebuild"));
    rc = depfs_server_rejoin(adm, t_id, NULL, NULL);
    ck_assert_msg(rc == 0, "rejoin of %u: %s (%s)", t_id, strerror(-rc), depfs_last_error());

    fresh = mount_fs();
    read_check(fresh, "/u", model, sizeof model);
    scrub_clean(fresh, ino);
    depfs_unmount(fresh);
    depfs_unmount(adm);
    depfs_unmount(a);
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
    tcase_add_test(tc, test_write_around_up_server_stays_untrusted);
    tcase_add_test(tc, test_untrusted_unit_never_decoded_from);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
