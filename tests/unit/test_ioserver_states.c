/* test_ioserver_states.c - the ioserver's server states and cluster epochs
 * (ioserver/state.c on a real LevelDB, ioserver/handlers.c driven through
 * ios_process with real protobuf-c headers): UP / REBUILDING /
 * RECONSTRUCTING and the epoch survive a reopen; IO_SET_STATE; which ops a
 * rebuilding server refuses; the "client behind" / "server behind" ESTALE
 * rules; every reply carrying state and epoch; heartbeat counters. */
#include <check.h>
#include <errno.h>
#include <dirent.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "layout.h"
#include "clock.h"
#include "ioserver/client_io.h"
#include "ioserver/handlers.h"
#include "ioserver/lock_intents.h"
#include "ioserver/state.h"
#include "ioserver/strips.h"

#define FILE_A 0x1234ull
#define MAX_BULK_BYTES (1u << 20)
#define KNOWN_EPOCH 5u
#define UNIT_BYTES 64u
#define EXTENTS_GRANULE LAYOUT_MIN_SU
#define BACKGROUND_GAP_MS 50u

enum { UP = DEPFS__SERVER_STATE__SERVER_UP,
       DOWN = DEPFS__SERVER_STATE__SERVER_DOWN,
       REBUILDING = DEPFS__SERVER_STATE__SERVER_REBUILDING,
       RECONSTRUCTING = DEPFS__SERVER_STATE__SERVER_RECONSTRUCTING };

static char tmpdir[64];
static ios_ctx hctx;

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

static void hsetup(void)
{
    char err[256];
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/depfs-iosst-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    memset(&hctx, 0, sizeof(hctx));
    hctx.server_id = 3;
    hctx.max_bulk_bytes = MAX_BULK_BYTES;
    hctx.lock_lease_ms = 0; /* every held lock is "stale" at once */
    ck_assert_int_eq(ios_strips_open(tmpdir, 0, &hctx.strips), 0);
    ck_assert_int_eq(ios_locks_create(0, &hctx.locks), 0);
    ck_assert_int_eq(ios_state_open(tmpdir, &hctx.state, err, sizeof(err)), 0);
}

static void hteardown(void)
{
    ios_locks_free(hctx.locks);
    ios_state_close(hctx.state);
    ios_strips_close(hctx.strips);
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

typedef struct req {
    Depfs__IoRequest q;
    Depfs__Extent ext;
    Depfs__Extent *extp;
    Depfs__LockSpec lock;
} req;

static void req_init(req *r, uint64_t file_id)
{
    depfs__io_request__init(&r->q);
    r->q.file_id = file_id;
    depfs__extent__init(&r->ext);
    r->extp = &r->ext;
    depfs__lock_spec__init(&r->lock);
}

static void req_extent(req *r, uint64_t off, uint64_t len)
{
    r->ext.offset = off;
    r->ext.length = len;
    r->q.extents = &r->extp;
    r->q.n_extents = 1;
}

static void req_lock(req *r, uint64_t client, uint64_t op)
{
    r->lock.first_stripe = 0;
    r->lock.stripe_count = 1;
    r->lock.owner_client = client;
    r->lock.owner_op = op;
    r->q.lock = &r->lock;
}

static void req_epoch(req *r, uint64_t e)
{
    r->q.has_cluster_epoch = 1;
    r->q.cluster_epoch = e;
}

/* Packs and processes; checks what every reply must carry; returns err. */
static int run(req *r, uint16_t type, const uint8_t *bulk, size_t bulk_len, ios_result *res)
{
    size_t len = depfs__io_request__get_packed_size(&r->q);
    uint8_t *buf = malloc(len + 1);
    ck_assert_ptr_nonnull(buf);
    depfs__io_request__pack(&r->q, buf);
    ios_process(&hctx, type, buf, len, bulk, bulk_len, "test", NULL, res);
    free(buf);
    ck_assert(res->reply.has_state);
    ck_assert(res->reply.has_cluster_epoch);
    ck_assert_uint_eq(res->reply.cluster_epoch, ios_state_epoch(hctx.state));
    if (res->reply.err)
        ck_assert_ptr_nonnull(res->reply.message);
    return res->reply.err;
}

static int run_free(req *r, uint16_t type, const uint8_t *bulk, size_t bulk_len)
{
    ios_result res;
    int err = run(r, type, bulk, bulk_len, &res);
    ios_result_free(&res);
    return err;
}

/* IO_SET_STATE with an optional state (< 0: none) and epoch (0: none). */
static int set_state(int state, uint64_t epoch, ios_result *res)
{
    req r;
    req_init(&r, 0);
    if (state >= 0) {
        r.q.has_server_state = 1;
        r.q.server_state = (uint32_t)state;
    }
    if (epoch)
        req_epoch(&r, epoch);
    return run(&r, DEPFS__IO_OP__IO_SET_STATE, NULL, 0, res);
}

static int set_state_free(int state, uint64_t epoch)
{
    ios_result res;
    int err = set_state(state, epoch, &res);
    ios_result_free(&res);
    return err;
}

static int write_unit(uint64_t file_id, uint8_t seed, int epoch_or_neg)
{
    uint8_t w[UNIT_BYTES];
    memset(w, seed, sizeof(w));
    req r;
    req_init(&r, file_id);
    req_extent(&r, 0, sizeof(w));
    if (epoch_or_neg >= 0)
        req_epoch(&r, (uint64_t)epoch_or_neg);
    return run_free(&r, DEPFS__IO_OP__IO_WRITE, w, sizeof(w));
}

/* ------------------------------------------------------------ durable */
START_TEST(state_and_epoch_persist)
{
    char err[256];
    ck_assert_uint_eq(ios_state_get(hctx.state), UP);
    ck_assert_uint_eq(ios_state_epoch(hctx.state), 0);
    uint64_t now = 0;
    ck_assert_int_eq(ios_state_raise_epoch(hctx.state, 7, &now), 0);
    ck_assert_uint_eq(now, 7);
    ck_assert_int_eq(ios_state_raise_epoch(hctx.state, 4, &now), 0); /* never lowered */
    ck_assert_uint_eq(now, 7);
    ck_assert_int_eq(ios_state_set(hctx.state, RECONSTRUCTING), 0);
    ios_state_close(hctx.state);
    ck_assert_int_eq(ios_state_open(tmpdir, &hctx.state, err, sizeof(err)), 0);
    ck_assert_uint_eq(ios_state_get(hctx.state), RECONSTRUCTING);
    ck_assert_uint_eq(ios_state_epoch(hctx.state), 7);
    ck_assert(ios_state_refuses_reads(RECONSTRUCTING));
    ck_assert(ios_state_refuses_reads(REBUILDING));
    ck_assert(!ios_state_refuses_reads(UP));
    /* a large epoch survives intact (all 8 bytes) */
    ck_assert_int_eq(ios_state_raise_epoch(hctx.state, 0x0102030405060708ull, NULL), 0);
    ios_state_close(hctx.state);
    ck_assert_int_eq(ios_state_open(tmpdir, &hctx.state, err, sizeof(err)), 0);
    ck_assert_uint_eq(ios_state_epoch(hctx.state), 0x0102030405060708ull);
}
END_TEST

/* Bytes of the state store's biggest LevelDB log. */
static off_t state_log_bytes(void)
{
    char dir[sizeof(tmpdir) + sizeof(IOS_STATE_SUBDIR) + 1];
    snprintf(dir, sizeof(dir), "%s/%s", tmpdir, IOS_STATE_SUBDIR);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    off_t biggest = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        struct stat sb;
        if (len < 4 || strcmp(e->d_name + len - 4, ".log") != 0 ||
            fstatat(dirfd(d), e->d_name, &sb, 0) != 0)
            continue;
        if (sb.st_size > biggest)
            biggest = sb.st_size;
    }
    closedir(d);
    return biggest;
}

/* A server that must demote itself while its store cannot write (a full
 * disk: here RLIMIT_FSIZE) stops serving at once, and a restart comes
 * back REBUILDING (campaign seed 104: the demotion was dropped with the
 * failed write, the server stayed UP and served units it had failed to
 * store: acknowledged bytes read back as zeros). */
START_TEST(demotion_holds_when_the_store_fails)
{
    char err[256];
    ck_assert_uint_eq(ios_state_get(hctx.state), UP);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = { .rlim_cur = (rlim_t)state_log_bytes(), .rlim_max = RLIM_INFINITY };
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    ck_assert_int_eq(ios_state_demote_self(hctx.state), 1);
    rl.rlim_cur = RLIM_INFINITY;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    ck_assert_uint_eq(ios_state_get(hctx.state), REBUILDING);
    ck_assert(ios_state_stalled(hctx.state));
    ios_state_close(hctx.state);
    ck_assert_int_eq(ios_state_open(tmpdir, &hctx.state, err, sizeof(err)), 0);
    ck_assert_uint_eq(ios_state_get(hctx.state), REBUILDING);
    /* recovery sets it UP once rebuilt: that sticks, the marker goes */
    ck_assert_int_eq(ios_state_set(hctx.state, UP), 0);
    ios_state_close(hctx.state);
    ck_assert_int_eq(ios_state_open(tmpdir, &hctx.state, err, sizeof(err)), 0);
    ck_assert_uint_eq(ios_state_get(hctx.state), UP);
}
END_TEST

/* Recovery's IO_SET_STATE(REBUILDING) while the store cannot write (a
 * full disk: RLIMIT_FSIZE here) is refused, but the server stops serving
 * all the same and a restart comes back REBUILDING (campaign seed 1204:
 * the demotion failed, the server stayed UP with units a client could not
 * write to it, and a migrate read and copied them). */
START_TEST(recovery_demotion_holds_when_the_store_fails)
{
    char err[256];
    ios_result res;
    ck_assert_uint_eq(ios_state_get(hctx.state), UP);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = { .rlim_cur = (rlim_t)state_log_bytes(), .rlim_max = RLIM_INFINITY };
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    ck_assert_int_ne(set_state(REBUILDING, 0, &res), 0);
    ios_result_free(&res);
    rl.rlim_cur = RLIM_INFINITY;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    ck_assert_uint_eq(ios_state_get(hctx.state), REBUILDING);
    ios_state_close(hctx.state);
    ck_assert_int_eq(ios_state_open(tmpdir, &hctx.state, err, sizeof(err)), 0);
    ck_assert_uint_eq(ios_state_get(hctx.state), REBUILDING);
}
END_TEST

/* A lock (or the write under it) refused because its intent cannot be
 * stored (a full disk: RLIMIT_FSIZE here) demotes the server: the writer
 * goes on degraded without it, so its units of that stripe go stale
 * (campaign seed 1204: the refusal left the server UP, and a migrate on the
 * same client read the stale units as current). */
START_TEST(refused_lock_intent_demotes)
{
    req r;
    ios_lock_intents_attach(hctx.locks, hctx.state);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = { .rlim_cur = (rlim_t)state_log_bytes(), .rlim_max = RLIM_INFINITY };
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    req_init(&r, FILE_A);
    req_extent(&r, 0, UNIT_BYTES);
    req_lock(&r, 7, 1);
    int err = run_free(&r, DEPFS__IO_OP__IO_READ, NULL, 0);
    rl.rlim_cur = RLIM_INFINITY;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    ck_assert_int_ne(err, 0);
    ck_assert_uint_eq(ios_state_get(hctx.state), REBUILDING);
    /* and the refused lock was not left behind */
    ios_lock_owner owner = { .client = 7, .op = 1 };
    ck_assert(!ios_locks_held_by(hctx.locks, FILE_A, 0, 1, owner));
}
END_TEST

/* A write whose dirty record (the servers it goes on without) cannot be
 * stored is refused, and the server demotes itself for the same reason. */
START_TEST(refused_dirty_record_demotes)
{
    req r;
    uint8_t unit[UNIT_BYTES];
    uint32_t down = 5;
    memset(unit, 0x5a, sizeof(unit));
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = { .rlim_cur = (rlim_t)state_log_bytes(), .rlim_max = RLIM_INFINITY };
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    req_init(&r, FILE_A);
    req_extent(&r, 0, UNIT_BYTES);
    r.q.down_servers = &down;
    r.q.n_down_servers = 1;
    int err = run_free(&r, DEPFS__IO_OP__IO_WRITE, unit, sizeof(unit));
    rl.rlim_cur = RLIM_INFINITY;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    ck_assert_int_ne(err, 0);
    ck_assert_uint_eq(ios_state_get(hctx.state), REBUILDING);
}
END_TEST

/* A background request (recovery's rebuild) is told how long ago the
 * server last began client I/O; its own READs and WRITEs do not count. */
START_TEST(background_requests_hear_of_client_io)
{
    ios_client_io io;
    ios_client_io_init(&io);
    hctx.client_io = &io;
    ios_result res;
    req r;
    req_init(&r, FILE_A);
    req_extent(&r, 0, UNIT_BYTES);
    r.q.has_background = r.q.background = 1;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_READ, NULL, 0, &res), 0);
    ck_assert(res.reply.has_client_io_idle_ms);
    ck_assert_uint_eq(res.reply.client_io_idle_ms, UINT32_MAX); /* none yet */
    ios_result_free(&res);
    ck_assert_int_eq(write_unit(FILE_A, 0x33, -1), 0); /* a client's WRITE */
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_READ, NULL, 0, &res), 0);
    ck_assert_uint_lt(res.reply.client_io_idle_ms, UINT32_MAX);
    ios_result_free(&res);
    clock_sleep_ms(BACKGROUND_GAP_MS);
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_READ, NULL, 0, &res), 0);
    ck_assert_uint_ge(res.reply.client_io_idle_ms, BACKGROUND_GAP_MS); /* ours did not count */
    ios_result_free(&res);
    /* a plain request is told nothing */
    r.q.has_background = r.q.background = 0;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_READ, NULL, 0, &res), 0);
    ck_assert(!res.reply.has_client_io_idle_ms);
    ios_result_free(&res);
    hctx.client_io = NULL;
}
END_TEST

/* ------------------------------------------------------- IO_SET_STATE */
START_TEST(set_state_op)
{
    ios_result res;
    ck_assert_int_eq(set_state(REBUILDING, 3, &res), 0);
    ck_assert_uint_eq(res.reply.state, REBUILDING);
    ck_assert_uint_eq(res.reply.cluster_epoch, 3);
    ios_result_free(&res);
    /* epoch only: state kept, epoch raised; a lower one changes nothing */
    ck_assert_int_eq(set_state(-1, 9, &res), 0);
    ck_assert_uint_eq(res.reply.state, REBUILDING);
    ck_assert_uint_eq(res.reply.cluster_epoch, 9);
    ios_result_free(&res);
    ck_assert_int_eq(set_state(-1, 2, &res), 0);
    ck_assert_uint_eq(res.reply.cluster_epoch, 9);
    ios_result_free(&res);
    /* DOWN and unknown states cannot be set, and change nothing */
    ck_assert_int_eq(set_state_free(DOWN, 0), EINVAL);
    ck_assert_int_eq(set_state_free(99, 0), EINVAL);
    ck_assert_uint_eq(ios_state_get(hctx.state), REBUILDING);
    /* neither field: a no-op that still reports */
    ck_assert_int_eq(set_state(-1, 0, &res), 0);
    ck_assert_uint_eq(res.reply.state, REBUILDING);
    ios_result_free(&res);
    ck_assert_int_eq(set_state_free(RECONSTRUCTING, 0), 0);
    ck_assert_int_eq(set_state_free(UP, 0), 0);
    ck_assert_uint_eq(ios_state_get(hctx.state), UP);
    /* the older rejoin form still works */
    ck_assert_int_eq(set_state_free(REBUILDING, 0), 0);
    req r;
    req_init(&r, 0);
    r.q.has_sync = r.q.sync = 1;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_DIRTY, NULL, 0, &res), 0);
    ck_assert_uint_eq(res.reply.state, UP);
    ios_result_free(&res);
}
END_TEST

/* What a REBUILDING or RECONSTRUCTING server refuses and accepts. */
static void check_not_serving(uint32_t state)
{
    ios_result res;
    req r;
    ck_assert_int_eq(write_unit(FILE_A, 0x11, -1), 0);
    ck_assert_int_eq(set_state_free((int)state, 0), 0);
    /* a plain client read */
    req_init(&r, FILE_A);
    req_extent(&r, 0, UNIT_BYTES);
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_READ, NULL, 0, &res), EIO);
    ck_assert_uint_eq(res.reply.state, state);
    ck_assert_uint_eq(res.bulk_len, 0);
    ios_result_free(&res);
    /* a write's pre-read carrying the lock: refused, and no lock is left */
    req_lock(&r, 7, 1);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_READ, NULL, 0), EIO);
    req other;
    req_init(&other, FILE_A);
    req_lock(&other, 8, 1);
    ck_assert_int_eq(run_free(&other, DEPFS__IO_OP__IO_LOCK, NULL, 0), 0);
    ck_assert_int_eq(run_free(&other, DEPFS__IO_OP__IO_UNLOCK, NULL, 0), 0);
    /* recovery reads pass */
    req_init(&r, FILE_A);
    req_extent(&r, 0, UNIT_BYTES);
    r.q.has_ignore_locks = r.q.ignore_locks = 1;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_READ, NULL, 0, &res), 0);
    ck_assert_uint_eq(res.bulk_len, UNIT_BYTES);
    ck_assert_uint_eq(res.bulk[0], 0x11);
    ios_result_free(&res);
    /* its data extents: refused to clients (its holes mean nothing to
     * them), told to recovery (a rebuild filling it asks where it has data) */
    req_init(&r, FILE_A);
    req_extent(&r, 0, EXTENTS_GRANULE);
    r.q.has_stripe_unit = 1;
    r.q.stripe_unit = EXTENTS_GRANULE;
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_EXTENTS, NULL, 0), EIO);
    r.q.has_ignore_locks = r.q.ignore_locks = 1;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_EXTENTS, NULL, 0, &res), 0);
    ck_assert_uint_eq(res.reply.n_data_extents, 1);
    ck_assert_uint_eq(res.reply.data_extents[0]->offset, 0);
    ck_assert_uint_eq(res.reply.data_extents[0]->length, EXTENTS_GRANULE);
    ios_result_free(&res);
    /* locks, writes, truncate, fsync, stat, heartbeat, remove accepted */
    ck_assert_int_eq(write_unit(FILE_A, 0x22, -1), 0);
    req_init(&r, FILE_A);
    req_lock(&r, 9, 1);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_LOCK, NULL, 0), 0);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_UNLOCK, NULL, 0), 0);
    req_init(&r, FILE_A);
    r.q.has_local_size = 1;
    r.q.local_size = UNIT_BYTES / 2;
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_TRUNCATE, NULL, 0), 0);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_FSYNC, NULL, 0), 0);
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_STAT, NULL, 0, &res), 0);
    ck_assert_uint_eq(res.reply.state, state);
    ck_assert_uint_eq(res.reply.local_size, UNIT_BYTES / 2);
    ios_result_free(&res);
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_HEARTBEAT, NULL, 0, &res), 0);
    ck_assert_uint_eq(res.reply.state, state);
    ios_result_free(&res);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_REMOVE, NULL, 0), 0);
    /* back UP: reads served again */
    ck_assert_int_eq(set_state_free(UP, 0), 0);
    req_init(&r, FILE_A);
    req_extent(&r, 0, UNIT_BYTES);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_READ, NULL, 0), 0);
}

START_TEST(rebuilding_refuses_reads)
{
    check_not_serving(REBUILDING);
}
END_TEST

START_TEST(reconstructing_refuses_reads)
{
    check_not_serving(RECONSTRUCTING);
}
END_TEST

/* ------------------------------------------------------------- epochs */
START_TEST(client_behind_is_refused_on_the_write_path)
{
    req r;
    ios_result res;
    ck_assert_int_eq(set_state_free(-1, KNOWN_EPOCH), 0);
    ck_assert_int_eq(write_unit(FILE_A, 0x33, KNOWN_EPOCH), 0);
    /* an older epoch: writes, locks, locked reads, truncates refused */
    ck_assert_int_eq(write_unit(FILE_A, 0x44, KNOWN_EPOCH - 1), ESTALE);
    req_init(&r, FILE_A);
    req_epoch(&r, KNOWN_EPOCH - 1);
    req_lock(&r, 1, 1);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_LOCK, NULL, 0), ESTALE);
    req_extent(&r, 0, UNIT_BYTES);
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_READ, NULL, 0, &res), ESTALE);
    ck_assert_uint_eq(res.reply.cluster_epoch, KNOWN_EPOCH);
    ck_assert_uint_eq(res.bulk_len, 0);
    ios_result_free(&res);
    req_init(&r, FILE_A);
    req_epoch(&r, KNOWN_EPOCH - 1);
    r.q.has_local_size = 1;
    r.q.local_size = 0;
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_TRUNCATE, NULL, 0), ESTALE);
    /* nothing of it took effect: the data is intact, no lock is held */
    req_init(&r, FILE_A);
    req_extent(&r, 0, UNIT_BYTES);
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_READ, NULL, 0, &res), 0);
    ck_assert_uint_eq(res.bulk[0], 0x33);
    ios_result_free(&res);
    req_init(&r, FILE_A);
    req_lock(&r, 2, 2);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_LOCK, NULL, 0), 0);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_UNLOCK, NULL, 0), 0);
    /* an older epoch is fine off the write path: plain reads, unlock,
     * stat, fsync, heartbeat, and recovery's ignore_locks reads */
    req_init(&r, FILE_A);
    req_epoch(&r, KNOWN_EPOCH - 1);
    req_extent(&r, 0, UNIT_BYTES);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_READ, NULL, 0), 0);
    req_lock(&r, 1, 1);
    r.q.has_ignore_locks = r.q.ignore_locks = 1;
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_READ, NULL, 0), 0);
    req_init(&r, FILE_A);
    req_epoch(&r, KNOWN_EPOCH - 1);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_STAT, NULL, 0), 0);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_FSYNC, NULL, 0), 0);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_HEARTBEAT, NULL, 0), 0);
    req_lock(&r, 1, 1);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_UNLOCK, NULL, 0), 0);
    /* no epoch at all: never refused for it */
    ck_assert_int_eq(write_unit(FILE_A, 0x55, -1), 0);
}
END_TEST

START_TEST(server_behind_is_refused_for_everything)
{
    req r;
    ios_result res;
    ck_assert_int_eq(set_state_free(-1, KNOWN_EPOCH), 0);
    ck_assert_int_eq(write_unit(FILE_A, 0x66, KNOWN_EPOCH + 1), ESTALE);
    static const uint16_t ops[] = { DEPFS__IO_OP__IO_READ, DEPFS__IO_OP__IO_STAT,
                                    DEPFS__IO_OP__IO_FSYNC, DEPFS__IO_OP__IO_HEARTBEAT,
                                    DEPFS__IO_OP__IO_REMOVE };
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        req_init(&r, FILE_A);
        req_epoch(&r, KNOWN_EPOCH + 1);
        if (ops[i] == DEPFS__IO_OP__IO_READ)
            req_extent(&r, 0, UNIT_BYTES);
        ck_assert_int_eq(run(&r, ops[i], NULL, 0, &res), ESTALE);
        ck_assert_uint_eq(res.reply.cluster_epoch, KNOWN_EPOCH);
        ck_assert_ptr_nonnull(strstr(res.reply.message, "server behind"));
        ios_result_free(&res);
    }
    /* a write with down servers refused before recording anything */
    uint8_t w[UNIT_BYTES] = { 0 };
    const uint32_t down[1] = { 4 };
    req_init(&r, FILE_A + 1);
    req_extent(&r, 0, sizeof(w));
    req_epoch(&r, KNOWN_EPOCH + 1);
    r.q.down_servers = (uint32_t *)down;
    r.q.n_down_servers = 1;
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_WRITE, w, sizeof(w)), ESTALE);
    uint64_t ids[4];
    size_t n;
    bool more;
    ck_assert_int_eq(ios_dirty_list(hctx.state, 4, 0, ids, 4, &n, &more), 0);
    ck_assert_uint_eq(n, 0);
    /* the push that raises the epoch is never refused; after it, all is fine */
    ck_assert_int_eq(set_state(-1, KNOWN_EPOCH + 1, &res), 0);
    ck_assert_uint_eq(res.reply.cluster_epoch, KNOWN_EPOCH + 1);
    ios_result_free(&res);
    ck_assert_int_eq(write_unit(FILE_A, 0x66, KNOWN_EPOCH + 1), 0);
}
END_TEST

START_TEST(heartbeat_reports_state_counters_and_stale_locks)
{
    req r;
    ios_result res;
    ck_assert_int_eq(set_state_free(REBUILDING, 2), 0);
    req_init(&r, FILE_A);
    req_lock(&r, 77, 5);
    ck_assert_int_eq(run_free(&r, DEPFS__IO_OP__IO_LOCK, NULL, 0), 0);
    req_init(&r, 0);
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_HEARTBEAT, NULL, 0, &res), 0);
    ck_assert_uint_eq(res.reply.state, REBUILDING);
    ck_assert_uint_eq(res.reply.cluster_epoch, 2);
    ck_assert(res.reply.has_locks_granted && res.reply.has_locks_held);
    ck_assert_uint_eq(res.reply.locks_granted, 1);
    ck_assert_uint_eq(res.reply.locks_held, 1);
    ck_assert_uint_eq(res.reply.n_stale_locks, 1); /* lease 0: stale at once */
    ck_assert_uint_eq(res.reply.stale_locks[0]->file_id, FILE_A);
    ck_assert_uint_eq(res.reply.stale_locks[0]->lock->owner_client, 77);
    ck_assert_uint_eq(res.reply.stale_locks[0]->lock->owner_op, 5);
    ios_result_free(&res);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ioserver_states");
    TCase *tc = tcase_create("states");
    tcase_add_checked_fixture(tc, hsetup, hteardown);
    tcase_add_test(tc, state_and_epoch_persist);
    tcase_add_test(tc, demotion_holds_when_the_store_fails);
    tcase_add_test(tc, recovery_demotion_holds_when_the_store_fails);
    tcase_add_test(tc, refused_lock_intent_demotes);
    tcase_add_test(tc, refused_dirty_record_demotes);
    tcase_add_test(tc, background_requests_hear_of_client_io);
    tcase_add_test(tc, set_state_op);
    tcase_add_test(tc, rebuilding_refuses_reads);
    tcase_add_test(tc, reconstructing_refuses_reads);
    tcase_add_test(tc, client_behind_is_refused_on_the_write_path);
    tcase_add_test(tc, server_behind_is_refused_for_everything);
    tcase_add_test(tc, heartbeat_reports_state_counters_and_stale_locks);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
