/* test_rpc.c - the RPC layer over real TCP on 127.0.0.1: pipelined calls
 * from several threads on one connection with scatter/gather bulk, time
 * outs and freeing pending calls, malformed input against the server,
 * connection loss, reply bulk too large, in-flight and connection limits,
 * and the protobuf (*_msg) variants. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"
#include "depfs.pb-c.h"
#include "log.h"
#include "rpc.h"
#include "transport.h"

enum { T_ECHO = 1, T_SLOW = 2, T_BIG = 3, T_MSG = 4 };

#define CONNECT_TIMEOUT_MS 2000
#define WAIT_MS 10000
#define PIPE_THREADS 4
#define PIPE_CALLS_PER_THREAD 250
#define PIPE_SMALL_MAX_BYTES (32u << 10)
#define PIPE_LARGE_BYTES (1u << 20)
#define PIPE_LARGE_EVERY 50
#define PIPE_MAX_PIECES 8
#define SLOW_REPLY_BULK_BYTES (256u << 10)
#define CANARY 0xAA
#define TEST_MAX_BULK_BYTES (4u << 20)
#define MAX_CONN_RETRIES 100
#define MAX_CONN_RETRY_PAUSE_MS 20

static atomic_int handled; /* requests that reached the handler */

/* ------------------------------------------------------------- server */

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void handle_msg(const rpc_msg *req, rpc_replier *r)
{
    Depfs__IoRequest *in = depfs__io_request__unpack(NULL, req->hdr_len, req->hdr);
    Depfs__IoReply out = DEPFS__IO_REPLY__INIT;
    struct iovec bulk = {.iov_base = req->bulk, .iov_len = req->bulk_len};

    if (!in) {
        out.err = EPROTO;
    } else {
        out.has_local_size = 1;
        out.local_size = in->file_id * 2 + in->n_extents;
        depfs__io_request__free_unpacked(in, NULL);
    }
    ck_assert_int_eq(rpc_reply_msg(r, req, &out.base, &bulk, 1), 0);
}

/* T_ECHO: header and bulk back. T_SLOW: hdr = u32 sleep_ms, replies after
 * it with a bulk. T_BIG: hdr = u32 reply bulk bytes. T_MSG: IoRequest in,
 * IoReply out (local_size = file_id*2 + n_extents), bulk echoed. */
static void handler(void *ctx, const rpc_msg *req, rpc_replier *r)
{
    (void)ctx;
    atomic_fetch_add(&handled, 1);
    switch (req->type) {
    case T_ECHO: {
        struct iovec bulk = {.iov_base = req->bulk, .iov_len = req->bulk_len};
        rpc_reply(r, req, req->hdr, req->hdr_len, &bulk, 1);
        break;
    }
    case T_SLOW: {
        static uint8_t payload[SLOW_REPLY_BULK_BYTES];
        struct iovec bulk = {.iov_base = payload, .iov_len = sizeof(payload)};
        ck_assert_uint_eq(req->hdr_len, 4);
        memset(payload, 0x5C, sizeof(payload));
        usleep(get_u32(req->hdr) * 1000u);
        rpc_reply(r, req, NULL, 0, &bulk, 1); /* may fail when the server stops */
        break;
    }
    case T_BIG: {
        uint32_t n = get_u32(req->hdr);
        uint8_t *p = malloc(n);
        struct iovec bulk = {.iov_base = p, .iov_len = n};
        memset(p, 0x77, n);
        ck_assert_int_eq(rpc_reply(r, req, "big", 3, &bulk, 1), 0);
        free(p);
        break;
    }
    case T_MSG:
        handle_msg(req, r);
        break;
    default:
        ck_abort_msg("unexpected type %u", req->type);
    }
}

#define TEST_FRAME_TIMEOUT_MS 300u

static rpc_server *server_start(unsigned max_connections)
{
    rpc_server_opts o = {
        .transport = "tcp",
        .address = "127.0.0.1:0",
        .limits = {.max_header_bytes = 4096, .max_bulk_bytes = TEST_MAX_BULK_BYTES},
        .handler = handler,
        .max_connections = max_connections,
        .frame_timeout_ms = TEST_FRAME_TIMEOUT_MS,
    };
    rpc_server *s = NULL;

    ck_assert_int_eq(rpc_server_start(&o, &s), 0);
    ck_assert_int_gt(rpc_server_port(s), 0);
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
    frame_limits lim = {.max_header_bytes = 4096, .max_bulk_bytes = TEST_MAX_BULK_BYTES};

    server_addr(s, addr, sizeof(addr));
    ck_assert_int_eq(rpc_conn_open("tcp", addr, &lim, CONNECT_TIMEOUT_MS, NULL, &c), 0);
    return c;
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* one synchronous echo with a small bulk; asserts the round trip */
static void echo_ok(rpc_conn *c)
{
    char data[100], back[100];
    struct iovec b = {.iov_base = data, .iov_len = sizeof(data)};
    struct iovec rb = {.iov_base = back, .iov_len = sizeof(back)};
    rpc_call *call = NULL;
    size_t hl = 0;

    memset(data, 'e', sizeof(data));
    ck_assert_int_eq(rpc_call_start(c, T_ECHO, "hi", 2, &b, 1, &rb, 1, &call), 0);
    ck_assert_int_eq(rpc_call_wait(call, WAIT_MS), 0);
    ck_assert_mem_eq(rpc_call_reply_hdr(call, &hl), "hi", 2);
    ck_assert_uint_eq(hl, 2);
    ck_assert_uint_eq(rpc_call_reply_bulk_len(call), sizeof(data));
    ck_assert_mem_eq(back, data, sizeof(data));
    rpc_call_free(call);
}

/* --------------------------------------------------------- pipelining */

typedef struct pipe_call {
    char hdr[32];
    uint8_t *out, *in;
    size_t len;
    struct iovec req_iov[PIPE_MAX_PIECES], resp_iov[PIPE_MAX_PIECES];
    int req_cnt, resp_cnt;
    rpc_call *call;
} pipe_call;

typedef struct pipe_thread {
    rpc_conn *c;
    int id;
    uint64_t seed;
} pipe_thread;

static uint32_t rnd_r(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (uint32_t)(*s >> 16);
}

/* Splits [buf, buf+len) into 1..PIPE_MAX_PIECES random pieces. */
static int split_iov(uint8_t *buf, size_t len, struct iovec *iov, uint64_t *seed)
{
    int want = 1 + (int)(rnd_r(seed) % PIPE_MAX_PIECES), n = 0;
    size_t off = 0;

    while (off < len && n < want - 1) {
        size_t piece = rnd_r(seed) % (len - off + 1);
        iov[n++] = (struct iovec){.iov_base = buf + off, .iov_len = piece};
        off += piece;
    }
    iov[n++] = (struct iovec){.iov_base = buf + off, .iov_len = len - off};
    return n;
}

static void *pipe_main(void *arg)
{
    pipe_thread *t = arg;
    pipe_call *calls = calloc(PIPE_CALLS_PER_THREAD, sizeof(*calls));

    for (int i = 0; i < PIPE_CALLS_PER_THREAD; i++) {
        pipe_call *pc = &calls[i];
        pc->len = i % PIPE_LARGE_EVERY == 7 ? PIPE_LARGE_BYTES
                                            : rnd_r(&t->seed) % (PIPE_SMALL_MAX_BYTES + 1);
        pc->out = malloc(pc->len + 1);
        pc->in = malloc(pc->len + 1 + 64); /* resp space a little larger than needed */
        for (size_t b = 0; b < pc->len; b++)
            pc->out[b] = (uint8_t)rnd_r(&t->seed);
        snprintf(pc->hdr, sizeof(pc->hdr), "t%d-c%d", t->id, i);
        pc->req_cnt = split_iov(pc->out, pc->len, pc->req_iov, &t->seed);
        pc->resp_cnt = split_iov(pc->in, pc->len + 64, pc->resp_iov, &t->seed);
        ck_assert_int_eq(rpc_call_start(t->c, T_ECHO, pc->hdr, strlen(pc->hdr), pc->req_iov,
                                        pc->req_cnt, pc->resp_iov, pc->resp_cnt, &pc->call),
                         0);
    }
    for (int i = 0; i < PIPE_CALLS_PER_THREAD; i++) {
        pipe_call *pc = &calls[i];
        size_t hl = 0;
        const uint8_t *h;

        ck_assert_int_eq(rpc_call_wait(pc->call, WAIT_MS), 0);
        h = rpc_call_reply_hdr(pc->call, &hl);
        ck_assert_uint_eq(hl, strlen(pc->hdr));
        ck_assert_mem_eq(h, pc->hdr, hl);
        ck_assert_uint_eq(rpc_call_reply_bulk_len(pc->call), pc->len);
        ck_assert_mem_eq(pc->in, pc->out, pc->len);
        rpc_call_free(pc->call);
        free(pc->out);
        free(pc->in);
    }
    free(calls);
    return NULL;
}

START_TEST(test_pipelined_many_threads)
{
    rpc_server *s = server_start(0);
    rpc_conn *c = conn_open(s);
    pthread_t thr[PIPE_THREADS];
    pipe_thread args[PIPE_THREADS];

    for (int i = 0; i < PIPE_THREADS; i++) {
        args[i] = (pipe_thread){.c = c, .id = i, .seed = 0x1234567ull * (uint64_t)(i + 1)};
        pthread_create(&thr[i], NULL, pipe_main, &args[i]);
    }
    for (int i = 0; i < PIPE_THREADS; i++)
        pthread_join(thr[i], NULL);
    ck_assert(!rpc_conn_broken(c));
    rpc_conn_close(c);
    rpc_server_stop(s);
}
END_TEST

/* ------------------------------------------------- timeouts and freeing */

static rpc_call *start_slow(rpc_conn *c, uint32_t sleep_ms, uint8_t *resp, size_t resp_len)
{
    uint8_t hdr[4];
    struct iovec rv = {.iov_base = resp, .iov_len = resp_len};
    rpc_call *call = NULL;

    put_u32(hdr, sleep_ms);
    ck_assert_int_eq(rpc_call_start(c, T_SLOW, hdr, sizeof(hdr), NULL, 0, &rv, 1, &call), 0);
    return call;
}

START_TEST(test_timeout_then_free_drains_late_reply)
{
    rpc_server *s = server_start(0);
    rpc_conn *c = conn_open(s);
    uint8_t *resp = malloc(SLOW_REPLY_BULK_BYTES);
    rpc_call *call;

    memset(resp, CANARY, SLOW_REPLY_BULK_BYTES);
    call = start_slow(c, 400, resp, SLOW_REPLY_BULK_BYTES);
    ck_assert_int_eq(rpc_call_wait(call, 50), -ETIMEDOUT);
    ck_assert_int_eq(rpc_call_wait(call, 0), -ETIMEDOUT);
    rpc_call_free(call); /* still pending: the late reply must be drained */
    echo_ok(c);          /* queued behind the slow one, so its reply came first */
    for (size_t i = 0; i < SLOW_REPLY_BULK_BYTES; i++)
        ck_assert_uint_eq(resp[i], CANARY);
    ck_assert(!rpc_conn_broken(c));

    /* waiting again after a time out does get the reply */
    call = start_slow(c, 200, resp, SLOW_REPLY_BULK_BYTES);
    ck_assert_int_eq(rpc_call_wait(call, 20), -ETIMEDOUT);
    ck_assert_int_eq(rpc_call_wait(call, WAIT_MS), 0);
    ck_assert_uint_eq(rpc_call_reply_bulk_len(call), SLOW_REPLY_BULK_BYTES);
    ck_assert_uint_eq(resp[0], 0x5C);
    ck_assert_uint_eq(resp[SLOW_REPLY_BULK_BYTES - 1], 0x5C);
    rpc_call_free(call);
    free(resp);
    rpc_conn_close(c);
    rpc_server_stop(s);
}
END_TEST

/* A client that gives up on a server aborts the connection; requests it
 * had queued behind a request the server is stuck on (a frozen server)
 * must not take effect when the server gets to them. */
START_TEST(test_requests_queued_before_abort_are_dropped)
{
    rpc_server *s = server_start(0);
    rpc_conn *c = conn_open(s);
    uint8_t *resp = malloc(SLOW_REPLY_BULK_BYTES);
    atomic_store(&handled, 0);
    rpc_call *slow = start_slow(c, 300, resp, SLOW_REPLY_BULK_BYTES);
    char data[16] = "late";
    struct iovec b = {.iov_base = data, .iov_len = sizeof(data)};
    rpc_call *late[3];
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(rpc_call_start(c, T_ECHO, "x", 1, &b, 1, NULL, 0, &late[i]), 0);
    usleep(50000); /* they are in the server's socket, behind the slow one */
    rpc_conn_abort(c);
    ck_assert_int_lt(rpc_call_wait(slow, WAIT_MS), 0);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_lt(rpc_call_wait(late[i], WAIT_MS), 0);
        rpc_call_free(late[i]);
    }
    rpc_call_free(slow);
    usleep(500000); /* the slow handler returns; the server reads the rest */
    ck_assert_int_eq(atomic_load(&handled), 1);
    ck_assert(rpc_conn_broken(c));
    rpc_conn_close(c);
    c = conn_open(s); /* the server goes on serving */
    echo_ok(c);
    rpc_conn_close(c);
    rpc_server_stop(s);
    free(resp);
}
END_TEST

/* ------------------------------------------------ hostile input, server */

/* Sends raw bytes on a fresh connection; expects the server to close it. */
static void expect_server_closes(rpc_server *s, const void *bytes, size_t len)
{
    char addr[64];
    xport *x = NULL;
    struct iovec iov = {.iov_base = (void *)bytes, .iov_len = len};
    uint8_t got[FRAME_HEADER_BYTES];

    server_addr(s, addr, sizeof(addr));
    ck_assert_int_eq(xport_connect("tcp", addr, CONNECT_TIMEOUT_MS, &x), 0);
    if (len)
        ck_assert_int_eq(x->ops->sendv(x, &iov, 1), 0);
    ck_assert_int_eq(x->ops->recv_all(x, got, sizeof(got)), -ECONNRESET);
    x->ops->close(x);
}

static size_t make_frame(uint8_t *out, uint32_t bulk_len, uint32_t crc, const uint8_t *bulk)
{
    frame_header fh = {.magic = FRAME_MAGIC, .version = FRAME_VERSION, .type = T_ECHO,
                       .bulk_len = bulk_len, .bulk_crc32c = crc, .req_id = 1};

    frame_encode(&fh, out);
    if (bulk)
        memcpy(out + FRAME_HEADER_BYTES, bulk, bulk_len);
    return FRAME_HEADER_BYTES + (bulk ? bulk_len : 0);
}

START_TEST(test_server_survives_garbage)
{
    rpc_server *s = server_start(0);
    uint8_t frame[FRAME_HEADER_BYTES + 64], bulk[64];
    const char *garbage = "GET / HTTP/1.0\r\n\r\n.....................";
    size_t n;
    int before;

    memset(bulk, 'b', sizeof(bulk));
    before = atomic_load(&handled);
    expect_server_closes(s, garbage, strlen(garbage));
    n = make_frame(frame, TEST_MAX_BULK_BYTES + 1, 0, NULL); /* oversized length */
    expect_server_closes(s, frame, n);
    n = make_frame(frame, sizeof(bulk), crc32c(0, bulk, sizeof(bulk)) ^ 1, bulk); /* bad CRC */
    expect_server_closes(s, frame, n);
    ck_assert_int_eq(atomic_load(&handled), before); /* none reached the handler */

    /* a correct raw frame is answered (the CRC check is not rejecting all) */
    n = make_frame(frame, sizeof(bulk), crc32c(0, bulk, sizeof(bulk)), bulk);
    {
        char addr[64];
        xport *x = NULL;
        struct iovec iov = {.iov_base = frame, .iov_len = n};
        uint8_t got[FRAME_HEADER_BYTES + sizeof(bulk)];
        frame_header rh;
        const char *why;
        server_addr(s, addr, sizeof(addr));
        ck_assert_int_eq(xport_connect("tcp", addr, CONNECT_TIMEOUT_MS, &x), 0);
        ck_assert_int_eq(x->ops->sendv(x, &iov, 1), 0);
        ck_assert_int_eq(x->ops->recv_all(x, got, sizeof(got)), 0);
        ck_assert_int_eq(frame_decode(got, NULL, &rh, &why), 0);
        ck_assert_uint_eq(rh.flags, FRAME_FLAG_REPLY);
        ck_assert_uint_eq(rh.req_id, 1);
        ck_assert_uint_eq(rh.bulk_len, sizeof(bulk));
        ck_assert_mem_eq(got + FRAME_HEADER_BYTES, bulk, sizeof(bulk));
        x->ops->close(x);
    }

    /* and a real client still gets served */
    rpc_conn *c = conn_open(s);
    echo_ok(c);
    rpc_conn_close(c);
    rpc_server_stop(s);
}
END_TEST

/* A peer that sends part of a frame and stalls loses its connection after
 * the frame timeout instead of holding a server thread forever, and so
 * does one that connects and sends nothing; an established connection
 * between requests is kept (until the much longer idle timeout). */
START_TEST(test_server_drops_stalled_frames)
{
    rpc_server *s = server_start(0);
    uint8_t frame[FRAME_HEADER_BYTES];
    size_t n = make_frame(frame, 0, 0, NULL);

    expect_server_closes(s, frame, 10);                /* stalls inside the header */
    n = make_frame(frame, 4096, 0, NULL);
    expect_server_closes(s, frame, n);                 /* stalls before the bulk */
    expect_server_closes(s, frame, 0);                 /* never says anything */

    rpc_conn *c = conn_open(s);
    echo_ok(c);
    usleep(3 * TEST_FRAME_TIMEOUT_MS * 1000u);         /* idle longer than the frame timeout */
    echo_ok(c);
    ck_assert(!rpc_conn_broken(c));
    rpc_conn_close(c);
    rpc_server_stop(s);
}
END_TEST

/* ------------------------------------------------------ connection loss */

typedef struct stop_args {
    rpc_server *s;
} stop_args;

static void *stop_main(void *arg)
{
    rpc_server_stop(((stop_args *)arg)->s);
    return NULL;
}

START_TEST(test_server_stop_resets_calls)
{
    rpc_server *s = server_start(0);
    rpc_conn *c = conn_open(s);
    uint8_t *resp = malloc(SLOW_REPLY_BULK_BYTES);
    rpc_call *call, *late = NULL;
    stop_args a = {.s = s};
    pthread_t t;

    echo_ok(c);
    call = start_slow(c, 300, resp, SLOW_REPLY_BULK_BYTES);
    usleep(50 * 1000); /* the handler is now sleeping */
    pthread_create(&t, NULL, stop_main, &a);
    ck_assert_int_eq(rpc_call_wait(call, WAIT_MS), -ECONNRESET);
    ck_assert(rpc_conn_broken(c));
    ck_assert_int_eq(rpc_call_start(c, T_ECHO, "x", 1, NULL, 0, NULL, 0, &late), -ECONNRESET);
    pthread_join(t, NULL);
    rpc_call_free(call);
    rpc_conn_close(c);
    free(resp);
}
END_TEST

START_TEST(test_conn_close_aborts_pending)
{
    rpc_server *s = server_start(0);
    rpc_conn *c = conn_open(s);
    uint8_t *resp = malloc(SLOW_REPLY_BULK_BYTES);
    rpc_call *call = start_slow(c, 300, resp, SLOW_REPLY_BULK_BYTES);

    rpc_conn_close(c);
    ck_assert_int_eq(rpc_call_wait(call, WAIT_MS), -ECONNABORTED);
    rpc_call_free(call); /* after close: still safe */
    free(resp);
    rpc_server_stop(s);
}
END_TEST

/* ------------------------------------------------------- size and limits */

START_TEST(test_reply_bulk_too_big)
{
    rpc_server *s = server_start(0);
    rpc_conn *c = conn_open(s);
    uint8_t hdr[4], small[4096], *big = malloc(10000);
    struct iovec rv = {.iov_base = small, .iov_len = sizeof(small)};
    struct iovec rb[2] = {{.iov_base = big, .iov_len = 6000}, {.iov_base = big + 6000, .iov_len = 4000}};
    rpc_call *call = NULL;

    put_u32(hdr, 10000);
    memset(small, 0, sizeof(small));
    ck_assert_int_eq(rpc_call_start(c, T_BIG, hdr, 4, NULL, 0, &rv, 1, &call), 0);
    ck_assert_int_eq(rpc_call_wait(call, WAIT_MS), -EMSGSIZE);
    rpc_call_free(call);
    for (size_t i = 0; i < sizeof(small); i++)
        ck_assert_uint_eq(small[i], 0);
    echo_ok(c); /* the connection keeps working */
    ck_assert(!rpc_conn_broken(c));
    /* exactly fitting, spread over two iovecs */
    ck_assert_int_eq(rpc_call_start(c, T_BIG, hdr, 4, NULL, 0, rb, 2, &call), 0);
    ck_assert_int_eq(rpc_call_wait(call, WAIT_MS), 0);
    ck_assert_uint_eq(rpc_call_reply_bulk_len(call), 10000);
    ck_assert_uint_eq(big[0], 0x77);
    ck_assert_uint_eq(big[9999], 0x77);
    rpc_call_free(call);
    /* client-side checks before anything is sent */
    ck_assert_int_eq(rpc_call_start(c, 0, NULL, 0, NULL, 0, NULL, 0, &call), -EINVAL);
    ck_assert_int_eq(rpc_call_start(c, T_ECHO, NULL, 0, rb, RPC_MAX_IOV + 1, NULL, 0, &call),
                     -EINVAL);
    free(big);
    rpc_conn_close(c);
    rpc_server_stop(s);
}
END_TEST

START_TEST(test_inflight_limit)
{
    rpc_server *s = server_start(0);
    rpc_conn *c = conn_open(s);
    rpc_call **calls = calloc(RPC_MAX_INFLIGHT, sizeof(*calls));
    rpc_call *extra = NULL;
    uint8_t hdr[4];

    put_u32(hdr, 300); /* the first call holds the server so the rest stay pending */
    ck_assert_int_eq(rpc_call_start(c, T_SLOW, hdr, 4, NULL, 0, NULL, 0, &calls[0]), 0);
    for (int i = 1; i < RPC_MAX_INFLIGHT; i++)
        ck_assert_int_eq(rpc_call_start(c, T_ECHO, "p", 1, NULL, 0, NULL, 0, &calls[i]), 0);
    ck_assert_int_eq(rpc_call_start(c, T_ECHO, "p", 1, NULL, 0, NULL, 0, &extra), -EBUSY);
    /* the slow reply's bulk does not fit (no resp_iov): -EMSGSIZE, stream intact */
    ck_assert_int_eq(rpc_call_wait(calls[0], WAIT_MS), -EMSGSIZE);
    for (int i = 1; i < RPC_MAX_INFLIGHT; i++) {
        ck_assert_int_eq(rpc_call_wait(calls[i], WAIT_MS), 0);
        rpc_call_free(calls[i]);
    }
    rpc_call_free(calls[0]);
    echo_ok(c); /* slots came back */
    free(calls);
    rpc_conn_close(c);
    rpc_server_stop(s);
}
END_TEST

/* With every slot taken by a connection at work a newcomer is refused; with
 * one idle, the newcomer takes its place (that client reconnects). */
START_TEST(test_max_connections)
{
    rpc_server *s = server_start(1);
    rpc_conn *c1 = conn_open(s), *c2;
    uint8_t *resp = malloc(SLOW_REPLY_BULK_BYTES);
    rpc_call *call = NULL, *slow;
    rpc_server_stats st;
    int rc;

    echo_ok(c1);
    slow = start_slow(c1, 400, resp, SLOW_REPLY_BULK_BYTES); /* c1 is at work */
    usleep(50 * 1000);
    c2 = conn_open(s); /* TCP accepts; the server then closes it */
    rc = rpc_call_start(c2, T_ECHO, "x", 1, NULL, 0, NULL, 0, &call);
    if (rc == 0) {
        ck_assert_int_eq(rpc_call_wait(call, WAIT_MS), -ECONNRESET);
        rpc_call_free(call);
    } else {
        ck_assert_int_eq(rc, -ECONNRESET);
    }
    ck_assert(rpc_conn_broken(c2));
    rpc_conn_close(c2);
    rpc_server_get_stats(s, &st);
    ck_assert_uint_eq(st.refused, 1);
    ck_assert_int_eq(rpc_call_wait(slow, WAIT_MS), 0);
    rpc_call_free(slow);
    echo_ok(c1);
    /* c1 idle now: a newcomer is served in its place */
    for (int tries = 0;; tries++) {
        rpc_call *probe = NULL;
        c2 = conn_open(s);
        if (rpc_call_start(c2, T_ECHO, "x", 1, NULL, 0, NULL, 0, &probe) == 0) {
            rc = rpc_call_wait(probe, WAIT_MS);
            rpc_call_free(probe);
            if (rc == 0)
                break;
        }
        rpc_conn_close(c2);
        ck_assert_int_lt(tries, MAX_CONN_RETRIES);
        usleep(MAX_CONN_RETRY_PAUSE_MS * 1000);
    }
    echo_ok(c2);
    for (int i = 0; i < MAX_CONN_RETRIES && !rpc_conn_broken(c1); i++)
        usleep(MAX_CONN_RETRY_PAUSE_MS * 1000);
    ck_assert(rpc_conn_broken(c1));
    rpc_server_get_stats(s, &st);
    ck_assert_uint_ge(st.evicted, 1);
    rpc_conn_close(c1);
    rpc_conn_close(c2);
    free(resp);
    rpc_server_stop(s);
}
END_TEST

/* ------------------------------------------------------- protobuf variants */

START_TEST(test_msg_variants)
{
    rpc_server *s = server_start(0);
    rpc_conn *c = conn_open(s);
    Depfs__IoRequest req = DEPFS__IO_REQUEST__INIT;
    Depfs__IoReply *rep = NULL;
    uint8_t data[3000], back[3000];
    struct iovec b = {.iov_base = data, .iov_len = sizeof(data)};
    struct iovec rb = {.iov_base = back, .iov_len = sizeof(back)};
    size_t bulk_len = 0;
    rpc_call *call = NULL;

    memset(data, 0x3C, sizeof(data));
    req.file_id = 21;
    ck_assert_int_eq(rpc_call_msg(c, T_MSG, &req.base, &b, 1, &rb, 1, WAIT_MS,
                                  &depfs__io_reply__descriptor, (ProtobufCMessage **)&rep,
                                  &bulk_len),
                     0);
    ck_assert_ptr_nonnull(rep);
    ck_assert_int_eq(rep->err, 0);
    ck_assert(rep->has_local_size);
    ck_assert_uint_eq(rep->local_size, 42);
    ck_assert_uint_eq(bulk_len, sizeof(data));
    ck_assert_mem_eq(back, data, sizeof(data));
    protobuf_c_message_free_unpacked(&rep->base, NULL);

    /* start_msg + unpack by hand */
    req.file_id = 5;
    ck_assert_int_eq(rpc_call_start_msg(c, T_MSG, &req.base, NULL, 0, NULL, 0, &call), 0);
    ck_assert_int_eq(rpc_call_wait(call, WAIT_MS), 0);
    ck_assert_int_eq(rpc_call_unpack(call, &depfs__io_reply__descriptor,
                                     (ProtobufCMessage **)&rep),
                     0);
    ck_assert_uint_eq(rep->local_size, 10);
    protobuf_c_message_free_unpacked(&rep->base, NULL);
    /* an echo reply header "hi" is not an IoReply */
    rpc_call_free(call);
    rpc_conn_close(c);
    rpc_server_stop(s);
}
END_TEST

int main(void)
{
    dlog_init("test_rpc", DLOG_WARN);
    Suite *s = suite_create("rpc");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 25);
    tcase_add_test(tc, test_pipelined_many_threads);
    tcase_add_test(tc, test_timeout_then_free_drains_late_reply);
    tcase_add_test(tc, test_requests_queued_before_abort_are_dropped);
    tcase_add_test(tc, test_server_survives_garbage);
    tcase_add_test(tc, test_server_drops_stalled_frames);
    tcase_add_test(tc, test_server_stop_resets_calls);
    tcase_add_test(tc, test_conn_close_aborts_pending);
    tcase_add_test(tc, test_reply_bulk_too_big);
    tcase_add_test(tc, test_inflight_limit);
    tcase_add_test(tc, test_max_connections);
    tcase_add_test(tc, test_msg_variants);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
