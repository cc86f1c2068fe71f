/* test_ioserver_bounds.c - the I/O server's boundary (ioserver/req_check.c)
 * through ios_process on a real data dir: extents and truncates past what
 * the data dir's file system holds are refused (EFBIG) and leave the server
 * UP (they used to demote it), lock ranges, stripe units, locked writes
 * outside their stripes, epochs, file id 0 and unknown server ids are
 * refused, block CRCs of the wrong size or count or on other ops than
 * WRITE are refused, and the values at the edge of each bound are served. */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "block_crc.h"
#include "config.h"
#include "crc32c.h"
#include "depfs.pb-c.h"
#include "ioserver/handlers.h"
#include "ioserver/req_check.h"
#include "log.h"
#include "wire_check.h"
#include "tests/lib/ios_fixture.h"

#define N_SERVERS 4u
#define SELF 1u
#define FILE_ID 0x7e57ull
#define SU 65536u
#define MAX_BULK_BYTES (1u << 20)
#define MAX_EXT 4

static depfs_config cfg;
static ios_fixture fx;
#define hctx (fx.ctx)
#define tmpdir (fx.dir)

static void setup(void)
{
    config_defaults(&cfg);
    cfg.n_ioservers = N_SERVERS;
    for (unsigned i = 0; i < N_SERVERS; i++)
        cfg.ioservers[i].id = i;
    ios_fixture_open(&fx, "test_ioserver_bounds", SELF, MAX_BULK_BYTES);
    hctx.cfg = &cfg;
}

static void teardown(void) { ios_fixture_close(&fx); }

typedef struct req {
    Depfs__IoRequest q;
    Depfs__Extent ext[MAX_EXT];
    Depfs__Extent *extp[MAX_EXT];
    Depfs__LockSpec lock;
} req;

static void req_init(req *r, uint64_t file_id)
{
    depfs__io_request__init(&r->q);
    r->q.file_id = file_id;
    r->q.extents = r->extp;
    for (int i = 0; i < MAX_EXT; i++) {
        depfs__extent__init(&r->ext[i]);
        r->extp[i] = &r->ext[i];
    }
    depfs__lock_spec__init(&r->lock);
}

static void req_extent(req *r, uint64_t off, uint64_t len)
{
    ck_assert_uint_lt(r->q.n_extents, MAX_EXT);
    r->ext[r->q.n_extents].offset = off;
    r->ext[r->q.n_extents].length = len;
    r->q.n_extents++;
}

static void req_lock(req *r, uint64_t first, uint64_t count)
{
    r->lock.first_stripe = first;
    r->lock.stripe_count = count;
    r->lock.owner_client = 1;
    r->lock.owner_op = 1;
    r->q.lock = &r->lock;
}

/* Processes; returns reply.err (with a message when non-zero). */
static int run(req *r, uint16_t type, const uint8_t *bulk, size_t bulk_len)
{
    ios_result res;
    size_t len = depfs__io_request__get_packed_size(&r->q);
    uint8_t *buf = malloc(len + 1);
    ck_assert_ptr_nonnull(buf);
    depfs__io_request__pack(&r->q, buf);
    ios_process(&hctx, type, buf, len, bulk, bulk_len, "test", NULL, &res);
    free(buf);
    int err = res.reply.err;
    if (err)
        ck_assert_msg(res.reply.message && res.reply.message[0], "err %d without a message", err);
    ios_result_free(&res);
    return err;
}

static uint32_t state(void)
{
    return ios_state_get(hctx.state);
}

START_TEST(test_probe)
{
    uint64_t max = ios_strips_max_local_bytes(hctx.strips);
    ck_assert_uint_gt(max, 0);
    ck_assert_uint_le(max, IOS_MAX_LOCAL_BYTES);
    ck_assert_uint_eq(max % LAYOUT_MAX_SU, 0);
    printf("strip files in %s hold up to %llu bytes\n", tmpdir, (unsigned long long)max);
}
END_TEST

START_TEST(test_past_the_file_system)
{
    /* the last byte a strip file holds here is written; one past it is
     * refused before anything is stored, and the server stays UP */
    uint64_t max = ios_strips_max_local_bytes(hctx.strips);
    uint8_t b[8] = "12345678";
    req r;
    req_init(&r, FILE_ID);
    req_extent(&r, max - sizeof(b), sizeof(b));
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_WRITE, b, sizeof(b)), 0);
    req_init(&r, FILE_ID);
    req_extent(&r, max - sizeof(b) + 1, sizeof(b));
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_WRITE, b, sizeof(b)), EFBIG);
    ck_assert_uint_eq(state(), DEPFS__SERVER_STATE__SERVER_UP);
    req_init(&r, FILE_ID);
    r.q.has_local_size = true;
    r.q.local_size = max + 1;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_TRUNCATE, NULL, 0), EFBIG);
    r.q.local_size = max;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_TRUNCATE, NULL, 0), 0);
    ck_assert_uint_eq(state(), DEPFS__SERVER_STATE__SERVER_UP);
    req_init(&r, FILE_ID);
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_REMOVE, NULL, 0), 0);
}
END_TEST

START_TEST(test_locks)
{
    req r;
    req_init(&r, FILE_ID);
    req_lock(&r, IOS_MAX_STRIPES, 1);
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_LOCK, NULL, 0), EINVAL);
    req_lock(&r, UINT64_MAX, 1);
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_LOCK, NULL, 0), EINVAL);
    req_lock(&r, 2, UINT64_MAX - 1);
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_LOCK, NULL, 0), EINVAL);
    req_lock(&r, IOS_MAX_STRIPES - 1, 1);
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_LOCK, NULL, 0), 0);
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_UNLOCK, NULL, 0), 0);
    req_lock(&r, 7, UINT64_MAX / 4); /* depfs-recovery's "every stripe from here on" */
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_LOCK, NULL, 0), 0);
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_UNLOCK, NULL, 0), 0);
    /* a locked write inside its stripes, and outside */
    uint8_t b[16] = { 0 };
    req_init(&r, FILE_ID);
    req_lock(&r, 2, 1);
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_LOCK, NULL, 0), 0);
    r.q.has_stripe_unit = true;
    r.q.stripe_unit = SU;
    req_extent(&r, 2 * SU, sizeof(b));
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_WRITE, b, sizeof(b)), 0);
    r.ext[0].offset = 3 * SU - sizeof(b) / 2; /* runs into stripe 3 */
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_WRITE, b, sizeof(b)), EINVAL);
    r.ext[0].offset = 0;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_WRITE, b, sizeof(b)), EINVAL);
    /* ignore_locks (repairs) writes where it must */
    r.q.has_ignore_locks = r.q.ignore_locks = true;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_WRITE, b, sizeof(b)), 0);
    ck_assert_uint_eq(state(), DEPFS__SERVER_STATE__SERVER_UP);
}
END_TEST

START_TEST(test_stripe_unit_epoch_file_id)
{
    uint8_t b[4] = { 0 };
    req r;
    req_init(&r, FILE_ID);
    req_extent(&r, 0, sizeof(b));
    r.q.has_stripe_unit = true;
    r.q.stripe_unit = 1;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_WRITE, b, sizeof(b)), EINVAL);
    r.q.stripe_unit = UINT32_MAX;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_WRITE, b, sizeof(b)), EINVAL);
    r.q.stripe_unit = 0; /* unknown */
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_WRITE, b, sizeof(b)), 0);
    req_init(&r, 0);
    req_extent(&r, 0, sizeof(b));
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_READ, NULL, 0), EINVAL);
    /* an epoch no cluster reaches would wedge the server for good */
    req_init(&r, 0);
    r.q.has_cluster_epoch = true;
    r.q.cluster_epoch = UINT64_MAX;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_SET_STATE, NULL, 0), ERANGE);
    ck_assert_uint_eq(ios_state_epoch(hctx.state), 0);
    r.q.cluster_epoch = WIRE_EPOCH_MAX + 1;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_STAT, NULL, 0), ERANGE);
    r.q.cluster_epoch = 3;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_SET_STATE, NULL, 0), 0);
    ck_assert_uint_eq(ios_state_epoch(hctx.state), 3);
}
END_TEST

START_TEST(test_server_ids)
{
    uint8_t b[4] = { 0 };
    uint32_t down[2] = { 0, N_SERVERS + 7 };
    req r;
    req_init(&r, FILE_ID);
    req_extent(&r, 0, sizeof(b));
    r.q.down_servers = down;
    r.q.n_down_servers = 2;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_WRITE, b, sizeof(b)), EINVAL);
    r.q.n_down_servers = 1;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_WRITE, b, sizeof(b)), 0);
    req_init(&r, 0);
    r.q.has_local_size = true;
    r.q.local_size = N_SERVERS + 7;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_DIRTY, NULL, 0), EINVAL);
    r.q.local_size = (uint64_t)UINT32_MAX + 1;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_DIRTY, NULL, 0), EINVAL);
    r.q.local_size = 0;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_DIRTY, NULL, 0), 0);
}
END_TEST

/* A WRITE's block CRCs: a valid block size and one per piece, or refused;
 * right ones are served, and a wrong one is the server's -EIO (the bytes
 * "changed" before they were stored). */
START_TEST(test_block_crcs)
{
    enum { HEAD = 4096 - 100, BYTES = 10000 }; /* extents [100, 4096) and [4096, 10100) */
    static uint8_t b[BYTES];
    memset(b, 0x3c, sizeof b);
    uint32_t crcs[3] = {crc32c(0, b, HEAD), crc32c(0, b + HEAD, 4096),
                        crc32c(0, b + HEAD + 4096, BYTES - HEAD - 4096)};
    req r;
    req_init(&r, FILE_ID);
    req_extent(&r, 100, HEAD);             /* piece 0 */
    req_extent(&r, 4096, BYTES - HEAD);    /* pieces 1 and 2 */
    r.q.has_crc_block = true;
    r.q.crc_block = 3000;
    r.q.block_crcs = crcs;
    r.q.n_block_crcs = 3;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_WRITE, b, sizeof b), EINVAL);
    r.q.crc_block = 8192;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_WRITE, b, sizeof b), EINVAL);
    r.q.crc_block = 4096;
    r.q.n_block_crcs = 2;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_WRITE, b, sizeof b), EINVAL);
    r.q.n_block_crcs = 3;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_READ, NULL, 0), EINVAL);
    r.q.has_crc_block = false;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_WRITE, b, sizeof b), EINVAL);
    r.q.has_crc_block = true;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_WRITE, b, sizeof b), 0);
    crcs[2] ^= 1;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_WRITE, b, sizeof b), EIO);
}
END_TEST

/* An unverified read (blocks as stored) only with ignore_locks, and only a READ. */
START_TEST(test_unverified)
{
    uint8_t b[4] = {0};
    req r;
    req_init(&r, FILE_ID);
    req_extent(&r, 0, sizeof b);
    r.q.has_unverified = r.q.unverified = true;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_WRITE, b, sizeof b), EINVAL);
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_READ, NULL, 0), EINVAL);
    r.q.has_ignore_locks = r.q.ignore_locks = true;
    ck_assert_int_eq(run(&r, DEPFS__IO_OP__IO_READ, NULL, 0), 0);
}
END_TEST

int main(void)
{
    dlog_init("test_ioserver_bounds", DLOG_ERR);
    Suite *s = suite_create("ioserver_bounds");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_probe);
    tcase_add_test(tc, test_past_the_file_system);
    tcase_add_test(tc, test_locks);
    tcase_add_test(tc, test_stripe_unit_epoch_file_id);
    tcase_add_test(tc, test_server_ids);
    tcase_add_test(tc, test_block_crcs);
    tcase_add_test(tc, test_unverified);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
