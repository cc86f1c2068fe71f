/* test_rpc_limits.c - what one hostile or slow peer may cost an RPC server
 * (rpc_server.c), over real TCP on 127.0.0.1: request buffers grow only as
 * bytes arrive, a frame must arrive whole within the frame timeout however
 * it trickles, silent connections are closed (new ones after the frame
 * timeout, established ones after the idle timeout), unproven connections
 * are capped per address and pushed out by newcomers, replies made by
 * another thread never wait for a peer that reads nothing, and a
 * connection with too many replies pending stops being read. */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "crc32c.h"
#include "log.h"
#include "rpc.h"
#include "transport.h"

enum { T_ECHO = 1, T_DEFER = 2 };

#define CONNECT_TIMEOUT_MS 2000
#define WAIT_MS 10000
#define HEADER_MAX_BYTES 4096u
#define BIG_BULK_BYTES (64u << 20)       /* what a hostile frame declares */
#define SMALL_SENT_BYTES 1000u           /* what it then sends */
#define SMALL_HELD_MAX_BYTES (64u << 10) /* what the server may hold for that */
#define MORE_SENT_BYTES (3u << 20)
#define POLL_STEP_MS 20                  /* bounded polls in the waits below */
#define SHORT_TIMEOUT_MS 300u            /* frame / idle timeouts of these servers */
#define SLACK_MS 700u                    /* scheduling allowance over a timeout */
#define TRICKLE_GAP_MS 100               /* < SHORT_TIMEOUT_MS: a per-recv timeout never fires */
#define TRICKLE_MAX_BYTES 40             /* 4 s of trickling at most */
#define PEER_CAP 4u
#define SILENT_CONNS 10
#define PROVEN_CONNS 8
#define SMALL_MAX_CONNECTIONS 4u
#define DEFER_LIMIT 8u
#define DEFER_PIPELINED 50
#define HOSTILE_FRAMES 200
#define HOSTILE_REPLY_BULK_BYTES (256u << 10) /* 200 of them: far over the socket buffers */
#define GOOD_CALLS 20
#define GOOD_CALL_MS 2000
#define SEND_TIMEOUT_MS 1000u

/* -------------------------------------------------- deferred replies
 * T_DEFER: hdr = u32 reply bulk bytes. The handler holds the replier and
 * queues the request; one deferral thread (like the MDS's group commit)
 * answers every connection's requests in order, once the gate is open. */
typedef struct deferred {
    struct deferred *next;
    rpc_replier *r;
    rpc_msg req;
    uint32_t bulk_bytes;
} deferred;

static struct {
    pthread_mutex_t m;
    pthread_cond_t cv;
    deferred *head, **tail;
    bool open, stop;
    pthread_t thr;
} dq = {.m = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static atomic_int deferred_handled;
static uint8_t reply_bulk[HOSTILE_REPLY_BULK_BYTES];

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void *defer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&dq.m);
    for (;;) {
        while (!dq.stop && !(dq.open && dq.head))
            pthread_cond_wait(&dq.cv, &dq.m);
        if (dq.stop && !dq.head)
            break;
        deferred *d = dq.head;
        dq.head = d->next;
        if (!dq.head)
            dq.tail = &dq.head;
        pthread_mutex_unlock(&dq.m);
        struct iovec iov = {.iov_base = reply_bulk, .iov_len = d->bulk_bytes};
        rpc_reply(d->r, &d->req, "d", 1, &iov, 1); /* may fail: the peer is gone */
        rpc_replier_release(d->r);
        free(d);
        pthread_mutex_lock(&dq.m);
    }
    pthread_mutex_unlock(&dq.m);
    return NULL;
}

static void defer_start(bool open)
{
    dq.head = NULL;
    dq.tail = &dq.head;
    dq.open = open;
    dq.stop = false;
    atomic_store(&deferred_handled, 0);
    ck_assert_int_eq(pthread_create(&dq.thr, NULL, defer_main, NULL), 0);
}

static void defer_gate(bool open)
{
    pthread_mutex_lock(&dq.m);
    dq.open = open;
    pthread_cond_broadcast(&dq.cv);
    pthread_mutex_unlock(&dq.m);
}

/* Answers what is queued (replies to closed connections fail) and joins. */
static void defer_stop(void)
{
    pthread_mutex_lock(&dq.m);
    dq.stop = true;
    pthread_cond_broadcast(&dq.cv);
    pthread_mutex_unlock(&dq.m);
    pthread_join(dq.thr, NULL);
}

static void handler(void *ctx, const rpc_msg *req, rpc_replier *r)
{
    (void)ctx;
    if (req->type == T_ECHO) {
        struct iovec bulk = {.iov_base = req->bulk, .iov_len = req->bulk_len};
        rpc_reply(r, req, req->hdr, req->hdr_len, &bulk, 1);
        return;
    }
    ck_assert_uint_eq(req->type, T_DEFER);
    ck_assert_uint_eq(req->hdr_len, 4);
    deferred *d = calloc(1, sizeof(*d));
    ck_assert_ptr_nonnull(d);
    d->r = r;
    d->req = (rpc_msg){.type = req->type, .req_id = req->req_id};
    d->bulk_bytes = get_u32(req->hdr);
    ck_assert_uint_le(d->bulk_bytes, sizeof(reply_bulk));
    rpc_replier_hold(r);
    atomic_fetch_add(&deferred_handled, 1);
    pthread_mutex_lock(&dq.m);
    *dq.tail = d;
    dq.tail = &d->next;
    pthread_cond_broadcast(&dq.cv);
    pthread_mutex_unlock(&dq.m);
}

/* ------------------------------------------------------------- helpers */

/* A server with the given limits (0: defaults) and the test handler. */
static rpc_server *server_with(rpc_server_opts o)
{
    rpc_server *s = NULL;

    o.transport = "tcp";
    o.address = "127.0.0.1:0";
    o.handler = handler;
    if (o.limits.max_bulk_bytes == 0)
        o.limits.max_bulk_bytes = BIG_BULK_BYTES;
    o.limits.max_header_bytes = HEADER_MAX_BYTES;
    ck_assert_int_eq(rpc_server_start(&o, &s), 0);
    return s;
}

static void server_addr(rpc_server *s, char *out, size_t len)
{
    snprintf(out, len, "127.0.0.1:%d", rpc_server_port(s));
}

static rpc_conn *conn_open(rpc_server *s)
{
    char addr[64];
    rpc_conn *c = NULL;
    frame_limits lim = {.max_header_bytes = HEADER_MAX_BYTES, .max_bulk_bytes = BIG_BULK_BYTES};

    server_addr(s, addr, sizeof(addr));
    ck_assert_int_eq(rpc_conn_open("tcp", addr, &lim, CONNECT_TIMEOUT_MS, NULL, &c), 0);
    return c;
}

/* A raw stream to the server, for peers that do not speak the protocol. */
static xport *raw_open(rpc_server *s)
{
    char addr[64];
    xport *x = NULL;

    server_addr(s, addr, sizeof(addr));
    ck_assert_int_eq(xport_connect("tcp", addr, CONNECT_TIMEOUT_MS, &x), 0);
    return x;
}

static void raw_send(xport *x, const void *bytes, size_t len)
{
    struct iovec iov = {.iov_base = (void *)bytes, .iov_len = len};
    ck_assert_int_eq(x->ops->sendv(x, &iov, 1), 0);
}

/* true once the server has closed x, waiting at most wait_ms for it. The
 * server never sends these peers anything, so readable means closed. */
static bool raw_closed(xport *x, int wait_ms)
{
    struct pollfd p = {.fd = x->ops->poll_fd(x), .events = POLLIN};
    uint8_t b;

    if (poll(&p, 1, wait_ms) <= 0)
        return false;
    return x->ops->recv_all(x, &b, 1) == -ECONNRESET;
}

static size_t frame_header_for(uint8_t out[FRAME_HEADER_BYTES], uint16_t type, uint32_t hdr_len,
                               uint32_t bulk_len, uint32_t crc, uint64_t req_id)
{
    frame_header fh = {.magic = FRAME_MAGIC, .version = FRAME_VERSION, .type = type,
                       .hdr_len = hdr_len, .bulk_len = bulk_len, .bulk_crc32c = crc,
                       .req_id = req_id};
    frame_encode(&fh, out);
    return FRAME_HEADER_BYTES;
}

static void echo_ok(rpc_conn *c)
{
    char data[64], back[64];
    struct iovec b = {.iov_base = data, .iov_len = sizeof(data)};
    struct iovec rb = {.iov_base = back, .iov_len = sizeof(back)};
    rpc_call *call = NULL;

    memset(data, 'e', sizeof(data));
    ck_assert_int_eq(rpc_call_start(c, T_ECHO, "hi", 2, &b, 1, &rb, 1, &call), 0);
    ck_assert_int_eq(rpc_call_wait(call, WAIT_MS), 0);
    ck_assert_mem_eq(back, data, sizeof(data));
    rpc_call_free(call);
}

static rpc_server_stats stats_of(rpc_server *s)
{
    rpc_server_stats st;
    rpc_server_get_stats(s, &st);
    return st;
}

/* Waits (bounded) until the server holds at least / at most `bytes` of
 * request buffers; returns what it holds then. */
static uint64_t rx_bytes_settle(rpc_server *s, uint64_t lo, uint64_t hi)
{
    uint64_t held = 0;
    for (int i = 0; i < WAIT_MS / POLL_STEP_MS; i++) {
        held = stats_of(s).rx_buffer_bytes;
        if (held >= lo && held <= hi)
            break;
        usleep(POLL_STEP_MS * 1000);
    }
    return held;
}

/* ---------------------------------------------------------------- tests */

/* A frame that declares 64 MiB of bulk and sends 1000 bytes costs the
 * server about those bytes, not 64 MiB; what it holds grows with what
 * arrives, and is given back when the peer goes. */
START_TEST(test_bulk_grows_with_bytes_received)
{
    rpc_server *s = server_with((rpc_server_opts){0});
    xport *x = raw_open(s);
    uint8_t hdr[FRAME_HEADER_BYTES], *data = calloc(1, MORE_SENT_BYTES);
    uint64_t held;

    frame_header_for(hdr, T_ECHO, 0, BIG_BULK_BYTES, 0, 1);
    raw_send(x, hdr, sizeof(hdr));
    raw_send(x, data, SMALL_SENT_BYTES);
    held = rx_bytes_settle(s, SMALL_SENT_BYTES, SMALL_HELD_MAX_BYTES);
    printf("a frame declaring %u bytes, %u sent: the server holds %llu\n", BIG_BULK_BYTES,
           SMALL_SENT_BYTES, (unsigned long long)held);
    ck_assert_uint_ge(held, SMALL_SENT_BYTES);
    ck_assert_uint_le(held, SMALL_HELD_MAX_BYTES);

    raw_send(x, data, MORE_SENT_BYTES);
    held = rx_bytes_settle(s, SMALL_SENT_BYTES + MORE_SENT_BYTES,
                           2 * (SMALL_SENT_BYTES + MORE_SENT_BYTES));
    printf("after %u bytes more: %llu\n", MORE_SENT_BYTES, (unsigned long long)held);
    ck_assert_uint_ge(held, SMALL_SENT_BYTES + MORE_SENT_BYTES);
    ck_assert_uint_le(held, 2 * (SMALL_SENT_BYTES + MORE_SENT_BYTES));

    x->ops->close(x);
    ck_assert_uint_eq(rx_bytes_settle(s, 0, 0), 0);
    free(data);
    rpc_server_stop(s);
}
END_TEST

/* One byte every 100 ms never lets a 300 ms per-recv timeout fire, but the
 * frame as a whole must be in within 300 ms of its first byte. */
START_TEST(test_frame_deadline_is_whole_frame)
{
    rpc_server *s = server_with((rpc_server_opts){.frame_timeout_ms = SHORT_TIMEOUT_MS});
    rpc_conn *c = conn_open(s);
    xport *x = raw_open(s);
    uint8_t frame[FRAME_HEADER_BYTES + 8] = {0}, reply[FRAME_HEADER_BYTES];
    uint64_t start_ms, closed_ms = 0;

    echo_ok(c); /* established: outlives the frame timeout */
    /* first a whole request: the connection is established */
    frame_header_for(frame, T_ECHO, 0, 0, 0, 1);
    raw_send(x, frame, FRAME_HEADER_BYTES);
    ck_assert_int_eq(x->ops->recv_all(x, reply, sizeof(reply)), 0);
    frame_header_for(frame, T_ECHO, 8, 0, 0, 2);
    start_ms = clock_now_ms();
    for (int i = 0; i < TRICKLE_MAX_BYTES && i < (int)sizeof(frame); i++) {
        raw_send(x, frame + i, 1);
        if (raw_closed(x, TRICKLE_GAP_MS)) {
            closed_ms = clock_now_ms();
            break;
        }
    }
    printf("a trickled frame was closed after %llu ms (frame_timeout_ms %u)\n",
           (unsigned long long)(closed_ms ? closed_ms - start_ms : 0), SHORT_TIMEOUT_MS);
    ck_assert_msg(closed_ms, "a frame trickled one byte per %d ms was never cut off",
                  TRICKLE_GAP_MS);
    ck_assert_uint_le(closed_ms - start_ms, SHORT_TIMEOUT_MS + SLACK_MS);
    ck_assert_uint_ge(stats_of(s).timed_out, 1);
    x->ops->close(x);
    echo_ok(c); /* others are served throughout */
    rpc_conn_close(c);
    rpc_server_stop(s);
}
END_TEST

/* An established connection silent for idle_timeout_ms is closed (its
 * client reconnects); one in use is not; a new one that says nothing is
 * closed after the frame timeout. */
START_TEST(test_idle_timeout)
{
    rpc_server *s = server_with((rpc_server_opts){.idle_timeout_ms = SHORT_TIMEOUT_MS,
                                                  .frame_timeout_ms = SHORT_TIMEOUT_MS});
    rpc_conn *idle = conn_open(s), *busy = conn_open(s);
    xport *silent = raw_open(s);
    uint64_t start_ms = clock_now_ms();

    echo_ok(idle);
    while (clock_now_ms() - start_ms < SHORT_TIMEOUT_MS + SLACK_MS && !rpc_conn_broken(idle)) {
        echo_ok(busy);
        usleep(POLL_STEP_MS * 1000);
    }
    ck_assert_msg(rpc_conn_broken(idle), "an idle connection outlived idle_timeout_ms");
    ck_assert(!rpc_conn_broken(busy));
    ck_assert(raw_closed(silent, (int)SLACK_MS));
    ck_assert_uint_ge(stats_of(s).timed_out, 2);
    silent->ops->close(silent);
    rpc_conn_close(idle);
    idle = conn_open(s); /* reconnecting is all it takes */
    echo_ok(idle);
    rpc_conn_close(idle);
    rpc_conn_close(busy);
    rpc_server_stop(s);
}
END_TEST

/* Ten silent connections from one address: only the newest PEER_CAP stay,
 * proven connections from the same address are never counted or pushed
 * out, and with the server full a newcomer takes an unproven one's place. */
START_TEST(test_unproven_cap_per_peer)
{
    rpc_server *s = server_with((rpc_server_opts){.max_unproven_per_peer = PEER_CAP,
                                                  .frame_timeout_ms = WAIT_MS});
    rpc_conn *proven[PROVEN_CONNS];
    xport *silent[SILENT_CONNS];
    rpc_server_stats st;

    for (int i = 0; i < PROVEN_CONNS; i++) {
        proven[i] = conn_open(s);
        echo_ok(proven[i]);
    }
    for (int i = 0; i < SILENT_CONNS; i++)
        silent[i] = raw_open(s);
    for (int i = 0; i < SILENT_CONNS - (int)PEER_CAP; i++)
        ck_assert_msg(raw_closed(silent[i], WAIT_MS), "silent connection %d was kept", i);
    for (int i = SILENT_CONNS - (int)PEER_CAP; i < SILENT_CONNS; i++)
        ck_assert_msg(!raw_closed(silent[i], POLL_STEP_MS), "silent connection %d was closed", i);
    st = stats_of(s);
    ck_assert_uint_eq(st.unproven, PEER_CAP);
    ck_assert_uint_eq(st.evicted, SILENT_CONNS - PEER_CAP);
    for (int i = 0; i < PROVEN_CONNS; i++) {
        echo_ok(proven[i]);
        ck_assert(!rpc_conn_broken(proven[i]));
        rpc_conn_close(proven[i]);
    }
    for (int i = 0; i < SILENT_CONNS; i++)
        silent[i]->ops->close(silent[i]);
    rpc_server_stop(s);

    /* a full server: the newcomer pushes out the oldest silent connection */
    s = server_with((rpc_server_opts){.max_connections = SMALL_MAX_CONNECTIONS,
                                      .frame_timeout_ms = WAIT_MS});
    for (unsigned i = 0; i < SMALL_MAX_CONNECTIONS; i++)
        silent[i] = raw_open(s);
    for (int i = 0; i < WAIT_MS / POLL_STEP_MS && stats_of(s).connections < SMALL_MAX_CONNECTIONS; i++)
        usleep(POLL_STEP_MS * 1000);
    rpc_conn *c = conn_open(s);
    echo_ok(c);
    ck_assert(raw_closed(silent[0], WAIT_MS));
    ck_assert_uint_eq(stats_of(s).refused, 0);
    rpc_conn_close(c);
    for (unsigned i = 0; i < SMALL_MAX_CONNECTIONS; i++)
        silent[i]->ops->close(silent[i]);
    rpc_server_stop(s);
}
END_TEST

/* A connection with max_deferred_replies holds pending is read no further:
 * of 50 pipelined requests only 8 reach the handler until replies flow. */
START_TEST(test_deferred_replies_throttle_reading)
{
    rpc_server *s = server_with((rpc_server_opts){.max_deferred_replies = DEFER_LIMIT});
    rpc_conn *c = conn_open(s);
    rpc_call *calls[DEFER_PIPELINED];
    uint8_t hdr[4];

    defer_start(false);
    put_u32(hdr, 0);
    for (int i = 0; i < DEFER_PIPELINED; i++)
        ck_assert_int_eq(rpc_call_start(c, T_DEFER, hdr, 4, NULL, 0, NULL, 0, &calls[i]), 0);
    for (int i = 0; i < WAIT_MS / POLL_STEP_MS && atomic_load(&deferred_handled) < (int)DEFER_LIMIT; i++)
        usleep(POLL_STEP_MS * 1000);
    usleep(10 * POLL_STEP_MS * 1000); /* room for more to arrive, if the server read on */
    int handled = atomic_load(&deferred_handled);
    ck_assert_int_eq(handled, DEFER_LIMIT);
    defer_gate(true);
    for (int i = 0; i < DEFER_PIPELINED; i++) {
        ck_assert_int_eq(rpc_call_wait(calls[i], WAIT_MS), 0);
        rpc_call_free(calls[i]);
    }
    handled = atomic_load(&deferred_handled);
    ck_assert_int_eq(handled, DEFER_PIPELINED);
    rpc_conn_close(c);
    rpc_server_stop(s);
    defer_stop();
}
END_TEST

/* One peer pipelines requests with large replies and reads none. The one
 * thread that answers every connection's deferred requests must not wait
 * for it: a good client's calls keep completing, and the bad connection
 * is closed once its output stalls. */
START_TEST(test_deferred_replies_never_wait_for_a_peer)
{
    rpc_server *s = server_with((rpc_server_opts){.send_timeout_ms = SEND_TIMEOUT_MS});
    xport *bad = raw_open(s);
    rpc_conn *good = conn_open(s);
    uint8_t frame[FRAME_HEADER_BYTES + 4];
    uint64_t worst_ms = 0;

    defer_start(true);
    for (uint64_t i = 0; i < HOSTILE_FRAMES; i++) {
        put_u32(frame + FRAME_HEADER_BYTES, HOSTILE_REPLY_BULK_BYTES);
        frame_header_for(frame, T_DEFER, 4, 0, 0, i + 1);
        raw_send(bad, frame, sizeof(frame));
    }
    for (int i = 0; i < GOOD_CALLS; i++) {
        uint8_t hdr[4];
        rpc_call *call = NULL;
        uint64_t t0 = clock_now_ms();

        put_u32(hdr, 0);
        ck_assert_int_eq(rpc_call_start(good, T_DEFER, hdr, 4, NULL, 0, NULL, 0, &call), 0);
        ck_assert_int_eq(rpc_call_wait(call, GOOD_CALL_MS), 0);
        rpc_call_free(call);
        worst_ms = clock_now_ms() - t0 > worst_ms ? clock_now_ms() - t0 : worst_ms;
        usleep(POLL_STEP_MS * 1000);
    }
    printf("good client's slowest deferred call: %llu ms\n", (unsigned long long)worst_ms);
    for (int i = 0; i < WAIT_MS / POLL_STEP_MS && stats_of(s).output_stalled == 0; i++)
        usleep(POLL_STEP_MS * 1000);
    ck_assert_uint_ge(stats_of(s).output_stalled, 1);
    bad->ops->close(bad);
    rpc_conn_close(good);
    rpc_server_stop(s);
    defer_stop();
}
END_TEST

int main(void)
{
    dlog_init("test_rpc_limits", DLOG_WARN);
    Suite *s = suite_create("rpc_limits");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_bulk_grows_with_bytes_received);
    tcase_add_test(tc, test_frame_deadline_is_whole_frame);
    tcase_add_test(tc, test_idle_timeout);
    tcase_add_test(tc, test_unproven_cap_per_peer);
    tcase_add_test(tc, test_deferred_replies_throttle_reading);
    tcase_add_test(tc, test_deferred_replies_never_wait_for_a_peer);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
