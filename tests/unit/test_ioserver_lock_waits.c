/* test_ioserver_lock_waits.c - lock requests that wait at the I/O server
 * (ioserver/lock_waits.c, LockSpec.wait_ms), through the server's own
 * handler (ioserver/handlers.c ios_handle) behind a real rpc server on
 * 127.0.0.1, with real protobuf-c requests from two client connections:
 * a waiting lock is counted by IO_STAT and granted once the holder
 * releases it (a waiting LOCK+READ then reads what the holder wrote),
 * NACKed when its time is up while the server serves others, never
 * granted to a client that has gone, refused over the wire bound, NACKed
 * at once when the waits are full, and answered when the waits stop. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ioserver/handlers.h"
#include "ioserver/lock_waits.h"
#include "tests/lib/ios_fixture.h"
#include "wire.h"

#define FILE_A 0x1234ull
#define MAX_BULK_BYTES (1u << 20)
#define CONNECT_TIMEOUT_MS 2000
#define REPLY_WAIT_MS 10000      /* any reply this test expects comes long before */
#define PARKED_PROBE_MS 100      /* a parked request is still unanswered this long after */
#define LONG_WAIT_MS 1000u       /* a wait that only a release ends */
#define SHORT_WAIT_MS 200u       /* a wait that runs out */
#define UNIT_BYTES 64u
#define POLL_PAUSE_MS 5u
#define POLL_ROUNDS 2000u        /* x POLL_PAUSE_MS: 10 s */
#define FULL_MAX_PARKED 1u

static const ios_lock_owner HOLDER = {.client = 1, .op = 1};
static const ios_lock_owner WAITER = {.client = 2, .op = 1};
static const ios_lock_owner WAITER2 = {.client = 3, .op = 1};

static ios_fixture fx;
static rpc_server *srv;

static void start(unsigned max_parked)
{
    ios_fixture_open(&fx, "depfs-ioswait-test", 1, MAX_BULK_BYTES);
    ck_assert_int_eq(ios_lock_waits_start(max_parked, ios_retry_parked, &fx.ctx, &fx.ctx.waits), 0);
    rpc_server_opts o = {.transport = "tcp", .address = "127.0.0.1:0",
                         .limits = {.max_header_bytes = 1u << 16, .max_bulk_bytes = MAX_BULK_BYTES},
                         .handler = ios_handle, .ctx = &fx.ctx};
    ck_assert_int_eq(rpc_server_start(&o, &srv), 0);
}

static void setup(void) { start(0); }
static void setup_full(void) { start(FULL_MAX_PARKED); }

static void teardown(void)
{
    rpc_server_stop(srv);
    ios_lock_waits_stop(fx.ctx.waits);
    fx.ctx.waits = NULL;
    ios_fixture_close(&fx);
}

static rpc_conn *conn_open(void)
{
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", rpc_server_port(srv));
    frame_limits lim = {.max_header_bytes = 1u << 16, .max_bulk_bytes = MAX_BULK_BYTES};
    rpc_conn *c = NULL;
    ck_assert_int_eq(rpc_conn_open("tcp", addr, &lim, CONNECT_TIMEOUT_MS, NULL, &c), 0);
    return c;
}

typedef struct req {
    Depfs__IoRequest q;
    Depfs__Extent ext;
    Depfs__Extent *extp;
    Depfs__LockSpec lock;
} req;

/* A request on FILE_A holding owner's lock of stripes [first, first+count)
 * that waits up to wait_ms (0: NACK at once). */
static void req_init(req *r, ios_lock_owner owner, uint64_t first, uint64_t count,
                     unsigned wait_ms)
{
    depfs__io_request__init(&r->q);
    r->q.file_id = FILE_A;
    depfs__lock_spec__init(&r->lock);
    r->lock.first_stripe = first;
    r->lock.stripe_count = count;
    r->lock.owner_client = owner.client;
    r->lock.owner_op = owner.op;
    r->lock.has_wait_ms = wait_ms > 0;
    r->lock.wait_ms = wait_ms;
    r->q.lock = &r->lock;
    depfs__extent__init(&r->ext);
    r->extp = &r->ext;
}

static void req_extent(req *r, uint64_t off, uint64_t len)
{
    r->ext.offset = off;
    r->ext.length = len;
    r->q.extents = &r->extp;
    r->q.n_extents = 1;
}

static rpc_call *send_req(rpc_conn *c, uint16_t type, req *r, const void *bulk, size_t bulk_len,
                          void *resp, size_t resp_len)
{
    struct iovec b = {.iov_base = (void *)bulk, .iov_len = bulk_len};
    struct iovec rv = {.iov_base = resp, .iov_len = resp_len};
    rpc_call *call = NULL;
    ck_assert_int_eq(rpc_call_start_msg(c, type, &r->q.base, bulk_len ? &b : NULL,
                                        bulk_len ? 1 : 0, resp_len ? &rv : NULL,
                                        resp_len ? 1 : 0, &call), 0);
    return call;
}

/* The call's reply, unpacked (free with depfs__io_reply__free_unpacked);
 * frees the call. */
static Depfs__IoReply *reply_of(rpc_call *call)
{
    ck_assert_int_eq(rpc_call_wait(call, REPLY_WAIT_MS), 0);
    Depfs__IoReply *rep = NULL;
    ck_assert_int_eq(rpc_call_unpack(call, &depfs__io_reply__descriptor, (ProtobufCMessage **)&rep),
                     0);
    rpc_call_free(call);
    return rep;
}

/* The reply's err (0 or a positive errno); frees the call. */
static int reply_err(rpc_call *call)
{
    Depfs__IoReply *rep = reply_of(call);
    int err = (int)rep->err;
    depfs__io_reply__free_unpacked(rep, NULL);
    return err;
}

static int call_err(rpc_conn *c, uint16_t type, req *r)
{
    return reply_err(send_req(c, type, r, NULL, 0, NULL, 0));
}

/* owner's IO_LOCK (or IO_UNLOCK) of stripes [first, first+count) on c,
 * NACKed at once: the reply's err. */
static int lock_op(rpc_conn *c, uint16_t type, ios_lock_owner owner, uint64_t first,
                   uint64_t count)
{
    req r;
    req_init(&r, owner, first, count, 0);
    return call_err(c, type, &r);
}

/* Waits (bounded) until exactly n requests are parked. */
static void wait_parked(unsigned n)
{
    for (unsigned i = 0; i < POLL_ROUNDS && ios_lock_waits_parked(fx.ctx.waits) != n; i++)
        clock_sleep_ms(POLL_PAUSE_MS);
    ck_assert_uint_eq(ios_lock_waits_parked(fx.ctx.waits), n);
}

/* Sends want (a request that may wait) on c and checks that it waits:
 * parked at the server (however slowly the server got to it), and no
 * answer for PARKED_PROBE_MS after. */
static rpc_call *park(rpc_conn *c, uint16_t type, req *want, void *resp, size_t resp_len)
{
    unsigned before = ios_lock_waits_parked(fx.ctx.waits);
    rpc_call *call = send_req(c, type, want, NULL, 0, resp, resp_len);
    wait_parked(before + 1);
    ck_assert_int_eq(rpc_call_wait(call, PARKED_PROBE_MS), -ETIMEDOUT);
    return call;
}

/* IO_STAT's locks_waiting, asked on c. */
static uint64_t stat_waiting(rpc_conn *c)
{
    req r;
    depfs__io_request__init(&r.q);
    Depfs__IoReply *rep = reply_of(send_req(c, DEPFS__IO_OP__IO_STAT, &r, NULL, 0, NULL, 0));
    ck_assert_int_eq(rep->err, 0);
    ck_assert(rep->has_locks_waiting);
    uint64_t n = rep->locks_waiting;
    depfs__io_reply__free_unpacked(rep, NULL);
    return n;
}

START_TEST(waiting_lock_granted_when_released)
{
    rpc_conn *a = conn_open(), *b = conn_open();
    ck_assert_int_eq(lock_op(a, DEPFS__IO_OP__IO_LOCK, HOLDER, 0, 4), 0);
    req want;
    req_init(&want, WAITER, 2, 4, LONG_WAIT_MS);
    rpc_call *w = park(b, DEPFS__IO_OP__IO_LOCK, &want, NULL, 0);
    ck_assert_uint_eq(stat_waiting(a), 1); /* what depfs status shows */
    ck_assert_int_eq(lock_op(a, DEPFS__IO_OP__IO_UNLOCK, HOLDER, 0, 4), 0);
    ck_assert_int_eq(reply_err(w), 0);
    ck_assert_int_eq(ios_locks_held_by(fx.ctx.locks, FILE_A, 2, 4, WAITER), 1);
    wait_parked(0); /* the waits thread lets go of it just after answering */
    ck_assert_uint_eq(stat_waiting(a), 0);
    rpc_conn_close(a);
    rpc_conn_close(b);
}
END_TEST

START_TEST(waiting_read_reads_what_the_holder_wrote)
{
    rpc_conn *a = conn_open(), *b = conn_open();
    ck_assert_int_eq(lock_op(a, DEPFS__IO_OP__IO_LOCK, HOLDER, 0, 1), 0);
    uint8_t got[UNIT_BYTES], unit[UNIT_BYTES];
    memset(got, 0, sizeof(got));
    memset(unit, 0xAB, sizeof(unit));
    req rd, wr;
    req_init(&rd, WAITER, 0, 1, LONG_WAIT_MS);
    req_extent(&rd, 0, sizeof(got));
    rpc_call *r = park(b, DEPFS__IO_OP__IO_READ, &rd, got, sizeof(got));
    /* the holder writes under its lock and releases it with the write */
    req_init(&wr, HOLDER, 0, 1, 0);
    req_extent(&wr, 0, sizeof(unit));
    wr.q.has_unlock = wr.q.unlock = 1;
    ck_assert_int_eq(reply_err(send_req(a, DEPFS__IO_OP__IO_WRITE, &wr, unit, sizeof(unit),
                                        NULL, 0)), 0);
    ck_assert_int_eq(reply_err(r), 0);
    ck_assert_mem_eq(got, unit, sizeof(unit)); /* read after the write, not before */
    ck_assert_int_eq(ios_locks_held_by(fx.ctx.locks, FILE_A, 0, 1, WAITER), 1);
    rpc_conn_close(a);
    rpc_conn_close(b);
}
END_TEST

START_TEST(nacked_when_the_wait_runs_out)
{
    rpc_conn *a = conn_open(), *b = conn_open();
    ck_assert_int_eq(lock_op(a, DEPFS__IO_OP__IO_LOCK, HOLDER, 0, 4), 0);
    uint64_t t0 = clock_now_ms();
    req want, stat;
    req_init(&want, WAITER, 0, 1, SHORT_WAIT_MS);
    rpc_call *w = send_req(b, DEPFS__IO_OP__IO_LOCK, &want, NULL, 0, NULL, 0);
    /* meanwhile the server answers everyone else, the waiter's own
     * connection included */
    depfs__io_request__init(&stat.q);
    ck_assert_int_eq(call_err(a, DEPFS__IO_OP__IO_STAT, &stat), 0);
    ck_assert_int_eq(call_err(b, DEPFS__IO_OP__IO_STAT, &stat), 0);
    ck_assert_int_eq(reply_err(w), EAGAIN);
    ck_assert_uint_ge(clock_now_ms() - t0, SHORT_WAIT_MS);
    ck_assert_int_eq(ios_locks_holds_any(fx.ctx.locks, FILE_A, 0, 4, WAITER), 0);
    wait_parked(0);
    rpc_conn_close(a);
    rpc_conn_close(b);
}
END_TEST

static ios_lock_stats lock_stats(void)
{
    ios_lock_stats ls;
    ios_locks_stats(fx.ctx.locks, &ls);
    return ls;
}

/* A waiting request is counted once, by the try that answers it: granted
 * after its wait, or NACKed when the wait runs out (a retry either way:
 * lock_attempt 1), never as a NACK for the refusal that parked it. */
START_TEST(a_waiting_request_counts_once)
{
    rpc_conn *a = conn_open(), *b = conn_open();
    ck_assert_int_eq(lock_op(a, DEPFS__IO_OP__IO_LOCK, HOLDER, 0, 4), 0);
    ios_lock_stats s0 = lock_stats();
    req want;
    req_init(&want, WAITER, 0, 4, LONG_WAIT_MS);
    want.q.has_lock_attempt = 1;
    want.q.lock_attempt = 1;
    rpc_call *w = park(b, DEPFS__IO_OP__IO_LOCK, &want, NULL, 0);
    ios_lock_stats s1 = lock_stats();
    ck_assert_uint_eq(s1.nacked, s0.nacked); /* waiting: nothing counted */
    ck_assert_uint_eq(s1.retried, s0.retried);
    ck_assert_int_eq(lock_op(a, DEPFS__IO_OP__IO_UNLOCK, HOLDER, 0, 4), 0);
    ck_assert_int_eq(reply_err(w), 0);
    ios_lock_stats s2 = lock_stats();
    ck_assert_uint_eq(s2.granted, s0.granted + 1);
    ck_assert_uint_eq(s2.nacked, s0.nacked);
    ck_assert_uint_eq(s2.retried, s0.retried + 1);

    /* WAITER holds them now: another's wait runs out */
    req other;
    req_init(&other, WAITER2, 0, 4, SHORT_WAIT_MS);
    other.q.has_lock_attempt = 1;
    other.q.lock_attempt = 1;
    ck_assert_int_eq(call_err(a, DEPFS__IO_OP__IO_LOCK, &other), EAGAIN);
    ios_lock_stats s3 = lock_stats();
    ck_assert_uint_eq(s3.granted, s2.granted);
    ck_assert_uint_eq(s3.nacked, s2.nacked + 1);
    ck_assert_uint_eq(s3.retried, s2.retried + 1);
    rpc_conn_close(a);
    rpc_conn_close(b);
}
END_TEST

START_TEST(never_granted_to_a_client_that_has_gone)
{
    rpc_conn *a = conn_open(), *b = conn_open();
    ck_assert_int_eq(lock_op(a, DEPFS__IO_OP__IO_LOCK, HOLDER, 0, 4), 0);
    req want;
    req_init(&want, WAITER, 0, 4, LONG_WAIT_MS);
    rpc_call_free(park(b, DEPFS__IO_OP__IO_LOCK, &want, NULL, 0));
    rpc_conn_close(b); /* the waiter's client goes away */
    ck_assert_int_eq(lock_op(a, DEPFS__IO_OP__IO_UNLOCK, HOLDER, 0, 4), 0);
    wait_parked(0);
    ck_assert_int_eq(ios_locks_holds_any(fx.ctx.locks, FILE_A, 0, 4, WAITER), 0);
    rpc_conn_close(a);
}
END_TEST

START_TEST(wait_over_the_wire_bound_refused)
{
    rpc_conn *a = conn_open();
    req want;
    req_init(&want, WAITER, 0, 1, WIRE_LOCK_WAIT_MAX_MS + 1);
    ck_assert_int_eq(call_err(a, DEPFS__IO_OP__IO_LOCK, &want), EINVAL);
    ck_assert_int_eq(ios_locks_holds_any(fx.ctx.locks, FILE_A, 0, 1, WAITER), 0);
    rpc_conn_close(a);
}
END_TEST

START_TEST(nacked_at_once_when_the_waits_are_full)
{
    rpc_conn *a = conn_open(), *b = conn_open(), *c = conn_open();
    ck_assert_int_eq(lock_op(a, DEPFS__IO_OP__IO_LOCK, HOLDER, 0, 4), 0);
    req want, want2;
    req_init(&want, WAITER, 0, 4, LONG_WAIT_MS);
    rpc_call *w = park(b, DEPFS__IO_OP__IO_LOCK, &want, NULL, 0);
    ck_assert_uint_eq(ios_lock_waits_parked(fx.ctx.waits), FULL_MAX_PARKED);
    req_init(&want2, WAITER2, 0, 4, LONG_WAIT_MS);
    ck_assert_int_eq(call_err(c, DEPFS__IO_OP__IO_LOCK, &want2), EAGAIN);
    ck_assert_int_eq(lock_op(a, DEPFS__IO_OP__IO_UNLOCK, HOLDER, 0, 4), 0);
    ck_assert_int_eq(reply_err(w), 0);
    rpc_conn_close(a);
    rpc_conn_close(b);
    rpc_conn_close(c);
}
END_TEST

START_TEST(stopping_answers_every_waiter)
{
    rpc_conn *a = conn_open(), *b = conn_open();
    ck_assert_int_eq(lock_op(a, DEPFS__IO_OP__IO_LOCK, HOLDER, 0, 4), 0);
    req want;
    req_init(&want, WAITER, 0, 4, LONG_WAIT_MS);
    rpc_call *w = park(b, DEPFS__IO_OP__IO_LOCK, &want, NULL, 0);
    ios_lock_waits_stop(fx.ctx.waits);
    fx.ctx.waits = NULL; /* NACKs at once from now on */
    ck_assert_int_eq(reply_err(w), EAGAIN);
    ck_assert_int_eq(call_err(b, DEPFS__IO_OP__IO_LOCK, &want), EAGAIN);
    rpc_conn_close(a);
    rpc_conn_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ioserver_lock_waits");
    TCase *tc = tcase_create("waits");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, waiting_lock_granted_when_released);
    tcase_add_test(tc, waiting_read_reads_what_the_holder_wrote);
    tcase_add_test(tc, nacked_when_the_wait_runs_out);
    tcase_add_test(tc, a_waiting_request_counts_once);
    tcase_add_test(tc, never_granted_to_a_client_that_has_gone);
    tcase_add_test(tc, wait_over_the_wire_bound_refused);
    tcase_add_test(tc, stopping_answers_every_waiter);
    suite_add_tcase(s, tc);
    TCase *full = tcase_create("full");
    tcase_add_checked_fixture(full, setup_full, teardown);
    tcase_add_test(full, nacked_at_once_when_the_waits_are_full);
    suite_add_tcase(s, full);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
