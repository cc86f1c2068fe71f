/* test_recovery.c - depfs-recovery's decision rounds (recovery/) against a
 * real MDS and three real I/O servers, all in this process on 127.0.0.1
 * (real LevelDB stores in a temp dir, real RPC): a stopped server goes
 * DOWN at the MDS with a new epoch pushed to the others; when it answers
 * again it is set REBUILDING (itself first, then the MDS) and rejoined up
 * by depfs_server_rejoin; dirty records naming a serving server demote and
 * rejoin it; a RECONSTRUCTING server is reported and left alone; a damage
 * repair waiting for an orphan's stripes does not hold up that orphan's
 * repair; a purge removes strip files on a REBUILDING server too. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "depfs.pb-c.h"
#include "ioserver/handlers.h"
#include "ioserver/strips.h"
#include "kvstore.h"
#include "log.h"
#include "mds/handlers.h"
#include "recovery/rec.h"

#define N_IOS 3u
#define MAX_BULK_BYTES (1u << 20)
#define BIND_TRIES 20u

enum { UP = DEPFS__SERVER_STATE__SERVER_UP,
       DOWN = DEPFS__SERVER_STATE__SERVER_DOWN,
       REBUILDING = DEPFS__SERVER_STATE__SERVER_REBUILDING,
       RECONSTRUCTING = DEPFS__SERVER_STATE__SERVER_RECONSTRUCTING };

typedef struct ios_inst {
    char dir[256];
    char address[64];
    ios_ctx ctx;
    rpc_server *srv;
} ios_inst;

static char tmpdir[64], conf_path[256];
static ios_inst ios[N_IOS];
static kvstore *mkv;
static mds_ns *mns;
static mds_cluster *mcl;
static mds_ctx mctx;
static rpc_server *msrv;
static depfs_config cfg;

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

/* Starts I/O server i on its address (port 0 the first time). */
static void ios_start(unsigned i)
{
    ios_inst *s = &ios[i];
    rpc_server_opts o = { .transport = "tcp", .address = s->address,
                          .limits = { .max_header_bytes = 1u << 20,
                                      .max_bulk_bytes = MAX_BULK_BYTES },
                          .handler = ios_handle, .ctx = &s->ctx };
    int rc = -1;
    for (unsigned t = 0; t < BIND_TRIES && rc; t++) { /* the old socket may linger */
        rc = rpc_server_start(&o, &s->srv);
        if (rc)
            usleep(100000);
    }
    ck_assert_int_eq(rc, 0);
    snprintf(s->address, sizeof(s->address), "127.0.0.1:%d", rpc_server_port(s->srv));
}

static void ios_stop(unsigned i)
{
    rpc_server_stop(ios[i].srv);
    ios[i].srv = NULL;
}

static void ios_open(unsigned i)
{
    ios_inst *s = &ios[i];
    char err[256];
    snprintf(s->dir, sizeof(s->dir), "%s/io%u", tmpdir, i);
    ck_assert_int_eq(mkdir(s->dir, 0700), 0);
    s->ctx = (ios_ctx){ .server_id = i, .max_bulk_bytes = MAX_BULK_BYTES,
                        .lock_lease_ms = 60000 };
    ck_assert_int_eq(ios_strips_open(s->dir, 0, &s->ctx.strips), 0);
    ck_assert_int_eq(ios_locks_create(0, &s->ctx.locks), 0);
    ck_assert_int_eq(ios_state_open(s->dir, &s->ctx.state, err, sizeof(err)), 0);
    snprintf(s->address, sizeof(s->address), "127.0.0.1:0");
    ios_start(i);
}

static void write_config(void)
{
    char mds_dir[256];
    snprintf(conf_path, sizeof(conf_path), "%s/depfs.conf", tmpdir);
    snprintf(mds_dir, sizeof(mds_dir), "%s/mds", tmpdir);
    FILE *f = fopen(conf_path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "mds_address = 127.0.0.1:%d\nmds_data_dir = %s\n", rpc_server_port(msrv), mds_dir);
    for (unsigned i = 0; i < N_IOS; i++)
        fprintf(f, "ioserver = %u %s %s\n", i, ios[i].address, ios[i].dir);
    fprintf(f, "default_layout = 3@2@4k\nheartbeat_period_ms = 100\n"
               "request_timeout_ms = 300\nconnect_timeout_ms = 300\n"
               "auth = off\n"); /* in-process servers here take no keys */
    fclose(f);
    char err[512];
    ck_assert_int_eq(config_load(conf_path, &cfg, err, sizeof(err)), 0);
}

static void setup(void)
{
    char err[256], why[MDS_WHY_MAX], mds_dir[256];
    dlog_init("test_recovery", DLOG_WARN);
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/depfs-rec-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    for (unsigned i = 0; i < N_IOS; i++)
        ios_open(i);
    /* the MDS: its config needs the servers' ports */
    snprintf(mds_dir, sizeof(mds_dir), "%s/mds", tmpdir);
    ck_assert_int_eq(mkdir(mds_dir, 0700), 0);
    ck_assert_int_eq(kv_open(mds_dir, true, &mkv, err, sizeof(err)), 0);
    depfs_config mcfg;
    config_defaults(&mcfg);
    mcfg.n_ioservers = N_IOS;
    for (unsigned i = 0; i < N_IOS; i++) {
        mcfg.ioservers[i].id = i;
        snprintf(mcfg.ioservers[i].address, sizeof(mcfg.ioservers[i].address), "%s",
                 ios[i].address);
    }
    mcfg.default_n = 3;
    mcfg.default_k = 2;
    mcfg.default_su = 4096;
    mds_ns_params p;
    mds_ns_params_from_config(&mcfg, &p);
    ck_assert_int_eq(mds_ns_open(mkv, &p, &mns, why), 0);
    ck_assert_int_eq(mds_cluster_open(mkv, &mcfg, &mcl), 0);
    mctx = (mds_ctx){ .ns = mns, .cluster = mcl };
    rpc_server_opts o = { .transport = "tcp", .address = "127.0.0.1:0",
                          .limits = { .max_header_bytes = 1u << 20,
                                      .max_bulk_bytes = MAX_BULK_BYTES },
                          .handler = mds_handle, .ctx = &mctx };
    ck_assert_int_eq(rpc_server_start(&o, &msrv), 0);
    write_config();
}

static void teardown(void)
{
    rpc_server_stop(msrv);
    mds_cluster_close(mcl);
    mds_ns_close(mns);
    kv_close(mkv);
    for (unsigned i = 0; i < N_IOS; i++) {
        if (ios[i].srv)
            ios_stop(i);
        ios_locks_free(ios[i].ctx.locks);
        ios_state_close(ios[i].ctx.state);
        ios_strips_close(ios[i].ctx.strips);
    }
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* One heartbeat of every server, one decision round, its work finished. */
static void round_once(rec_ctx *c)
{
    ck_assert_int_eq(rec_probers_start(c), 0);
    for (unsigned i = 0; i < c->nservers; i++) {
        pthread_join(c->servers[i].prober, NULL);
        c->servers[i].prober_started = false;
    }
    rec_decide_round(c);
    rec_workers_drain(c);
}

static uint32_t mds_state(unsigned id, uint64_t *epoch)
{
    mds_server v[N_IOS];
    ck_assert_uint_eq(mds_cluster_servers(mcl, v, N_IOS, epoch), N_IOS);
    return v[id].state;
}

START_TEST(down_then_back_is_rebuilt_and_up)
{
    static rec_ctx c;
    uint64_t e0, e;
    ck_assert_int_eq(rec_init(&c, &cfg, true), 0);
    ck_assert_int_eq(rec_workers_start(&c), 0);
    round_once(&c); /* everything up: nothing changes */
    ck_assert_uint_eq(mds_state(2, &e0), UP);
    ck_assert_uint_eq(e0, 0);

    ios_stop(2);
    round_once(&c);
    ck_assert_uint_eq(mds_state(2, &e), DOWN);
    ck_assert_uint_eq(e, e0 + 1);
    /* the survivors got the new epoch */
    ck_assert_uint_eq(ios_state_epoch(ios[0].ctx.state), e);
    ck_assert_uint_eq(ios_state_epoch(ios[1].ctx.state), e);
    ck_assert_uint_eq(ios_state_epoch(ios[2].ctx.state), e0);

    /* back, claiming UP: set REBUILDING, rejoined, UP with the newest epoch */
    ios_start(2);
    round_once(&c);
    ck_assert_uint_eq(mds_state(2, &e), UP);
    ck_assert_uint_ge(e, e0 + 3); /* down, rebuilding, up */
    ck_assert_uint_eq(ios_state_get(ios[2].ctx.state), UP);
    ck_assert_uint_eq(ios_state_epoch(ios[2].ctx.state), e);
    ck_assert_uint_eq(ios_state_epoch(ios[0].ctx.state), e);
    rec_fini(&c);
}
END_TEST

START_TEST(dirty_records_demote_a_serving_server)
{
    static rec_ctx c;
    uint64_t e0, e;
    const uint32_t suspect[1] = { 1 };
    ck_assert_uint_eq(mds_state(1, &e0), UP);
    /* a client could not reach 1 and wrote (nonexistent) file 77 without it */
    ck_assert_int_eq(ios_dirty_add(ios[0].ctx.state, suspect, 1, 77), 0);
    ck_assert_int_eq(rec_init(&c, &cfg, true), 0);
    ck_assert_int_eq(rec_workers_start(&c), 0);
    round_once(&c);
    ck_assert_uint_eq(mds_state(1, &e), UP);
    ck_assert_uint_ge(e, e0 + 2); /* it went REBUILDING and back UP */
    ck_assert_uint_eq(ios_state_get(ios[1].ctx.state), UP);
    uint64_t ids[4];
    size_t n;
    bool more;
    ck_assert_int_eq(ios_dirty_list(ios[0].ctx.state, 1, 0, ids, 4, &n, &more), 0);
    ck_assert_uint_eq(n, 0); /* the rejoin cleared the record */
    /* a clean round changes nothing */
    round_once(&c);
    uint64_t e2;
    ck_assert_uint_eq(mds_state(1, &e2), UP);
    ck_assert_uint_eq(e2, e);
    rec_fini(&c);
}
END_TEST

START_TEST(reconstructing_is_reported_and_left_alone)
{
    static rec_ctx c;
    uint64_t e0, e;
    ck_assert_uint_eq(mds_state(0, &e0), UP);
    ck_assert_int_eq(ios_state_set(ios[0].ctx.state, RECONSTRUCTING), 0);
    ck_assert_int_eq(rec_init(&c, &cfg, true), 0);
    ck_assert_int_eq(rec_workers_start(&c), 0);
    round_once(&c); /* epoch 0 store: a fresh node, no grace */
    ck_assert_uint_eq(mds_state(0, &e), RECONSTRUCTING);
    ck_assert_uint_eq(e, e0 + 1);
    round_once(&c);
    ck_assert_uint_eq(mds_state(0, &e), RECONSTRUCTING);
    ck_assert_uint_eq(e, e0 + 1);
    ck_assert_uint_eq(ios_state_get(ios[0].ctx.state), RECONSTRUCTING);
    /* the others know the epoch */
    ck_assert_uint_eq(ios_state_epoch(ios[1].ctx.state), e);
    rec_fini(&c);
}
END_TEST

/* A writer died holding stripe 1 of a file on every server (an orphan,
 * older than the lease), and a background scrub reported damage in that
 * stripe. The damage job is queued first, and its repair waits for the
 * stripe lock, which only the orphan's repair releases (the CI run of
 * c41d700: test_fault_interrupted_write's scrub stayed unclean while one
 * repairer thread waited ~30 s in a damage repair for the lock of the
 * orphan queued behind it). The orphan must be repaired while the damage
 * repair waits, then the damage repair gets the stripe, and the file reads
 * back as written with parity consistent. */
#define T_ORPHAN_CLIENT 424242u
#define T_ORPHAN_OP 7u
#define T_LEASE_MS 50u
#define T_ORPHAN_BOUND_MS 10000u /* a damage repair waits ~30 s for a lock */
#define T_STRIPES 4u
#define T_SU 4096u               /* default_layout 3@2@4k */
START_TEST(damage_repair_does_not_hold_up_an_orphan)
{
    static rec_ctx c;
    const size_t size = T_STRIPES * 2 * T_SU;
    uint8_t *data = malloc(size), *back = malloc(size);
    ck_assert_ptr_nonnull(data);
    ck_assert_ptr_nonnull(back);
    for (size_t i = 0; i < size; i++)
        data[i] = (uint8_t)(i * 131u + 7u);
    ck_assert_int_eq(rec_init(&c, &cfg, true), 0);
    ck_assert_int_eq(rec_fs_ensure(&c), 0);
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(c.fs, "/f", O_CREAT | O_RDWR, 0644, &fh), 0);
    ck_assert_int_eq(depfs_write(fh, data, size, 0), (ssize_t)size);
    ck_assert_int_eq(depfs_fsync(fh), 0);
    uint64_t ino = depfs_fh_ino(fh);
    depfs_layout_info li;
    ck_assert_int_eq(depfs_fh_layout(fh, &li), 0);
    ck_assert_int_eq(depfs_close(fh), 0);

    /* the dead writer's lock of stripe 1, everywhere, stale at once */
    const ios_lock_owner dead = { .client = T_ORPHAN_CLIENT, .op = T_ORPHAN_OP };
    for (unsigned i = 0; i < N_IOS; i++) {
        ios[i].ctx.lock_lease_ms = T_LEASE_MS;
        ck_assert_int_eq(ios_locks_try(ios[i].ctx.locks, ino, 1, 1, dead, IOS_LOCK_WRITE,
                                       clock_now_ms()), 0);
    }
    usleep(2 * T_LEASE_MS * 1000);
    rec_orphan_queue(&c, &(rec_orphan){ .kind = REC_JOB_DAMAGE, .server = li.servers[0],
                                         .file_id = ino, .first = T_SU, .count = T_SU });
    rec_orphan_queue(&c, &(rec_orphan){ .kind = REC_JOB_ORPHAN, .file_id = ino, .first = 1,
                                         .count = 1, .client = dead.client, .op = dead.op });
    uint64_t t0 = clock_now_ms();
    ck_assert_int_eq(rec_workers_start(&c), 0);
    bool held = true;
    while (held && clock_now_ms() - t0 < T_ORPHAN_BOUND_MS) {
        held = false;
        for (unsigned i = 0; i < N_IOS; i++)
            held |= ios_locks_holds_any(ios[i].ctx.locks, ino, 1, 1, dead);
        if (held)
            usleep(10000);
    }
    ck_assert_msg(!held, "the orphan's lock was still held %u ms after its repair was queued "
                  "(behind a damage repair waiting for that lock)", T_ORPHAN_BOUND_MS);
    rec_workers_drain(&c); /* the damage repair, done once it got the stripe */

    ck_assert_int_eq(depfs_open(c.fs, "/f", O_RDONLY, 0, &fh), 0);
    ck_assert_int_eq(depfs_read(fh, back, size, 0), (ssize_t)size);
    ck_assert_int_eq(depfs_close(fh), 0);
    ck_assert_int_eq(memcmp(back, data, size), 0);
    depfs_scrub_report rep;
    ck_assert_int_eq(depfs_scrub_ino(c.fs, ino, false, &rep), 0);
    ck_assert_uint_eq(rep.stripes_checked, T_STRIPES);
    ck_assert_uint_eq(rep.stripes_bad, 0);
    ck_assert_uint_eq(rep.stripes_unreadable, 0);
    rec_fini(&c);
    free(data);
    free(back);
}
END_TEST

/* Whether I/O server i holds a strip file of ino (named as the server
 * names it: ioserver/strips.h). */
static bool strip_on(unsigned i, uint64_t ino)
{
    char name[IOS_STRIP_NAME_LEN];
    char path[sizeof(ios[i].dir) + sizeof(IOS_STRIPS_SUBDIR) + IOS_STRIP_NAME_LEN];
    struct stat st;
    ios_strip_name(ino, name);
    int n = snprintf(path, sizeof(path), "%s/" IOS_STRIPS_SUBDIR "/%s", ios[i].dir, name);
    ck_assert(n > 0 && (size_t)n < sizeof(path));
    return stat(path, &st) == 0;
}

/* A file unlinked while one of its servers is REBUILDING loses its strip
 * files on that server too, not only on the UP ones. A server kept
 * REBUILDING by a full disk (its rejoin cannot write) is the one that most
 * needs its garbage gone: the campaign's seed 4901 round 4 had a 96 MiB
 * server stay REBUILDING for good, each purge skipping it as "down". A
 * DOWN server is still left for a later pass. */
#define T_PURGE_BYTES (3u * 2u * T_SU)
START_TEST(purge_reaches_a_rebuilding_server)
{
    static rec_ctx c;
    static uint8_t data[T_PURGE_BYTES];
    uint64_t e, now;
    memset(data, 0x5a, sizeof(data));
    ck_assert_int_eq(rec_init(&c, &cfg, true), 0);
    ck_assert_int_eq(rec_fs_ensure(&c), 0);
    uint64_t inos[2];
    for (unsigned f = 0; f < 2; f++) {
        char name[16];
        depfs_fh_t *fh = NULL;
        snprintf(name, sizeof(name), "/gone%u", f);
        ck_assert_int_eq(depfs_open(c.fs, name, O_CREAT | O_RDWR, 0644, &fh), 0);
        ck_assert_int_eq(depfs_write(fh, data, sizeof(data), 0), (ssize_t)sizeof(data));
        inos[f] = depfs_fh_ino(fh);
        ck_assert_int_eq(depfs_close(fh), 0);
        for (unsigned i = 0; i < N_IOS; i++)
            ck_assert(strip_on(i, inos[f]));
    }
    ck_assert_int_eq(depfs_unlink_path(c.fs, "/gone0"), 0);
    /* server 2 REBUILDING, itself and at the MDS, every server at the epoch */
    ck_assert_int_eq(ios_state_set(ios[2].ctx.state, REBUILDING), 0);
    ck_assert_int_eq(mds_cluster_set_state(mcl, 2, REBUILDING, &e), 0);
    for (unsigned i = 0; i < N_IOS; i++)
        ck_assert_int_eq(ios_state_raise_epoch(ios[i].ctx.state, e, &now), 0);
    depfs_t *fs = NULL;
    depfs_options o = { .config_path = conf_path };
    ck_assert_int_eq(depfs_mount(&o, &fs), 0);
    uint64_t cursor = 0;
    depfs_purge_report rep;
    ck_assert_int_eq(depfs_purge_pass(fs, 64, &cursor, &rep), 0);
    ck_assert_uint_eq(rep.listed, 1);
    ck_assert_msg(rep.purged == 1 && rep.failed == 0, "purged %u, left %u: %s", rep.purged,
                  rep.failed, depfs_last_error());
    for (unsigned i = 0; i < N_IOS; i++)
        ck_assert_msg(!strip_on(i, inos[0]), "server %u kept the strip file", i);

    /* server 2 DOWN (stopped): the next unlinked file waits for it */
    ck_assert_int_eq(depfs_unlink_path(c.fs, "/gone1"), 0);
    ios_stop(2);
    ck_assert_int_eq(mds_cluster_set_state(mcl, 2, DOWN, &e), 0);
    for (unsigned i = 0; i < 2; i++)
        ck_assert_int_eq(ios_state_raise_epoch(ios[i].ctx.state, e, &now), 0);
    depfs_unmount(fs);
    ck_assert_int_eq(depfs_mount(&o, &fs), 0);
    ck_assert_int_eq(depfs_purge_pass(fs, 64, &cursor, &rep), 0);
    ck_assert_uint_eq(rep.listed, 1);
    ck_assert_uint_eq(rep.purged, 0);
    ck_assert_uint_eq(rep.failed, 1);
    ck_assert(strip_on(2, inos[1]));
    depfs_unmount(fs);
    rec_fini(&c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("recovery");
    TCase *tc = tcase_create("decide");
    tcase_set_timeout(tc, 25);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, down_then_back_is_rebuilt_and_up);
    tcase_add_test(tc, dirty_records_demote_a_serving_server);
    tcase_add_test(tc, reconstructing_is_reported_and_left_alone);
    tcase_add_test(tc, damage_repair_does_not_hold_up_an_orphan);
    tcase_add_test(tc, purge_reaches_a_rebuilding_server);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
