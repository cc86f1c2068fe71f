/* test_frame.c - the frame header codec and the TCP transport under it:
 * round trips, every rejection reason, truncated streams on real sockets,
 * address parsing, and random headers that must never crash decode. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frame.h"
#include "log.h"
#include "transport.h"
#include "tests/lib/rng.h"

#define FUZZ_ROUNDS 200000
#define CONNECT_TIMEOUT_MS 2000
#define BIG_SEND_BYTES (8u << 20)

static frame_header sample_header(void)
{
    return (frame_header){
        .magic = FRAME_MAGIC,
        .version = FRAME_VERSION,
        .type = 7,
        .flags = FRAME_FLAG_REPLY,
        .hdr_len = 123,
        .bulk_len = 4096,
        .bulk_crc32c = 0xDEADBEEFu,
        .req_id = 0x0102030405060708ull,
    };
}

START_TEST(test_round_trip)
{
    frame_header h = sample_header(), g;
    frame_limits lim;
    uint8_t raw[FRAME_HEADER_BYTES];
    const char *why = "unset";

    frame_limits_default(&lim);
    ck_assert_uint_eq(lim.max_header_bytes, FRAME_DEFAULT_MAX_HEADER_BYTES);
    ck_assert_uint_eq(lim.max_bulk_bytes, FRAME_DEFAULT_MAX_BULK_BYTES);
    frame_encode(&h, raw);
    /* little-endian on the wire, whatever the host */
    ck_assert_uint_eq(raw[0], 0x44);
    ck_assert_uint_eq(raw[3], 0x46);
    ck_assert_uint_eq(raw[24], 0x08);
    ck_assert_uint_eq(raw[31], 0x01);
    ck_assert_int_eq(frame_decode(raw, &lim, &g, &why), 0);
    ck_assert_ptr_null(why);
    ck_assert_mem_eq(&h, &g, sizeof(h));
}
END_TEST

/* Mutates one field of a good header and expects `err` with a reason. */
static void expect_reject(void (*mutate)(frame_header *), int err, const char *reason_part)
{
    frame_header h = sample_header(), g;
    frame_limits lim = {.max_header_bytes = 1000, .max_bulk_bytes = 1u << 20};
    uint8_t raw[FRAME_HEADER_BYTES];
    const char *why = NULL;

    mutate(&h);
    frame_encode(&h, raw);
    ck_assert_int_eq(frame_decode(raw, &lim, &g, &why), err);
    ck_assert_ptr_nonnull(why);
    ck_assert_msg(strstr(why, reason_part), "reason '%s' lacks '%s'", why, reason_part);
}

static void bad_magic(frame_header *h) { h->magic ^= 1; }
static void bad_version(frame_header *h) { h->version = FRAME_VERSION + 1; }
static void bad_flags(frame_header *h) { h->flags |= 0x80; }
static void type_zero(frame_header *h) { h->type = 0; }
static void hdr_too_big(frame_header *h) { h->hdr_len = 1001; }
static void bulk_too_big(frame_header *h) { h->bulk_len = (1u << 20) + 1; }
static void bulk_huge(frame_header *h) { h->bulk_len = UINT32_MAX; }

START_TEST(test_rejections)
{
    expect_reject(bad_magic, -EPROTO, "magic");
    expect_reject(bad_version, -EPROTO, "version");
    expect_reject(bad_flags, -EPROTO, "flags");
    expect_reject(type_zero, -EPROTO, "type");
    expect_reject(hdr_too_big, -EMSGSIZE, "header length");
    expect_reject(bulk_too_big, -EMSGSIZE, "bulk length");
    expect_reject(bulk_huge, -EMSGSIZE, "bulk length");
}
END_TEST

START_TEST(test_limits_are_inclusive)
{
    frame_header h = sample_header(), g;
    frame_limits lim = {.max_header_bytes = 123, .max_bulk_bytes = 4096};
    uint8_t raw[FRAME_HEADER_BYTES];
    const char *why = NULL;

    frame_encode(&h, raw);
    ck_assert_int_eq(frame_decode(raw, &lim, &g, &why), 0);
}
END_TEST

/* A receiver that takes no bulk (the MDS) refuses any, and says so. */
START_TEST(test_no_bulk_at_all)
{
    frame_header h = sample_header(), g;
    frame_limits lim = {.max_header_bytes = 1u << 20, .max_bulk_bytes = 0};
    uint8_t raw[FRAME_HEADER_BYTES];
    const char *why = NULL;

    h.bulk_len = 1;
    frame_encode(&h, raw);
    ck_assert_int_eq(frame_decode(raw, &lim, &g, &why), -EMSGSIZE);
    ck_assert_ptr_nonnull(strstr(why, "never takes"));
    h.bulk_len = 0;
    h.bulk_crc32c = 0;
    frame_encode(&h, raw);
    ck_assert_int_eq(frame_decode(raw, &lim, &g, &why), 0);
}
END_TEST

START_TEST(test_garbage_bytes)
{
    uint8_t raw[FRAME_HEADER_BYTES];
    frame_header g;
    const char *why = NULL;

    memcpy(raw, "GET / HTTP/1.1\r\nHost: x\r\n\r\nabcde", FRAME_HEADER_BYTES);
    ck_assert_int_eq(frame_decode(raw, NULL, &g, &why), -EPROTO);
    ck_assert_str_eq(why, "bad frame magic");
    memset(raw, 0, sizeof(raw));
    ck_assert_int_eq(frame_decode(raw, NULL, &g, &why), -EPROTO);
    memset(raw, 0xFF, sizeof(raw));
    ck_assert_int_eq(frame_decode(raw, NULL, &g, &why), -EPROTO);
}
END_TEST

START_TEST(test_fuzz_random_headers)
{
    frame_limits lim;
    unsigned accepted = 0;

    frame_limits_default(&lim);
    for (int i = 0; i < FUZZ_ROUNDS; i++) {
        uint8_t raw[FRAME_HEADER_BYTES];
        frame_header g;
        const char *why = NULL;
        int rc;

        rnd_fill(raw, sizeof raw);
        if (i % 2) { /* half the time keep a valid prefix so later checks run */
            frame_header h = sample_header();
            uint8_t good[FRAME_HEADER_BYTES];
            frame_encode(&h, good);
            memcpy(raw, good, 8);
            raw[8] &= 1;
            raw[9] = raw[10] = raw[11] = 0;
        }
        rc = frame_decode(raw, &lim, &g, &why);
        if (rc == 0) {
            accepted++;
            ck_assert_uint_le(g.hdr_len, lim.max_header_bytes);
            ck_assert_uint_le(g.bulk_len, lim.max_bulk_bytes);
            ck_assert_uint_ne(g.type, 0);
        } else {
            ck_assert(rc == -EPROTO || rc == -EMSGSIZE);
            ck_assert_ptr_nonnull(why);
        }
    }
    ck_assert_uint_gt(accepted, 0); /* the valid-prefix half does get through */
}
END_TEST

START_TEST(test_split_addr)
{
    char host[64];
    unsigned port = 0;

    ck_assert_int_eq(xport_split_addr("127.0.0.1:7000", host, sizeof(host), &port), 0);
    ck_assert_str_eq(host, "127.0.0.1");
    ck_assert_uint_eq(port, 7000);
    ck_assert_int_eq(xport_split_addr("[::1]:65535", host, sizeof(host), &port), 0);
    ck_assert_str_eq(host, "::1");
    ck_assert_uint_eq(port, 65535);
    ck_assert_int_eq(xport_split_addr("node-1.example:0", host, sizeof(host), &port), 0);
    ck_assert_str_eq(host, "node-1.example");

    strcpy(host, "untouched");
    port = 42;
    const char *bad[] = {"", ":7000", "host", "host:", "host:65536", "host:12a", "::1:7000",
                         "[::1]7000", "[::1", "host:-1", "ho st:1", "host:123456"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(xport_split_addr(bad[i], host, sizeof(host), &port) == -EINVAL,
                      "accepted '%s'", bad[i]);
        ck_assert_str_eq(host, "untouched");
        ck_assert_uint_eq(port, 42);
    }
    ck_assert_int_eq(xport_split_addr("averyveryverylonghostname:1", host, 8, &port), -EINVAL);
}
END_TEST

/* ---------------------------------------------- transport-level framing */

typedef struct peer_args {
    xport_listener *l;
    const uint8_t *send;
    size_t send_len;
} peer_args;

/* Accepts one connection, sends send_len bytes, then closes. */
static void *send_and_close(void *arg)
{
    peer_args *a = arg;
    xport *x = NULL;

    ck_assert_int_eq(xport_accept(a->l, &x), 0);
    if (a->send_len) {
        struct iovec iov = {.iov_base = (void *)a->send, .iov_len = a->send_len};
        ck_assert_int_eq(x->ops->sendv(x, &iov, 1), 0);
    }
    x->ops->close(x);
    return NULL;
}

static void connect_to(xport_listener *l, const char *host_fmt, xport **out)
{
    char addr[64];

    snprintf(addr, sizeof(addr), host_fmt, xport_listener_port(l));
    ck_assert_int_eq(xport_connect("tcp", addr, CONNECT_TIMEOUT_MS, out), 0);
}

START_TEST(test_truncated_header)
{
    xport_listener *l = NULL;
    xport *x = NULL;
    pthread_t t;
    frame_header h = sample_header();
    uint8_t raw[FRAME_HEADER_BYTES], got[FRAME_HEADER_BYTES];
    peer_args a;

    frame_encode(&h, raw);
    a = (peer_args){.send = raw, .send_len = FRAME_HEADER_BYTES / 2};
    ck_assert_int_eq(xport_listen("tcp", "127.0.0.1:0", &l), 0);
    ck_assert_int_gt(xport_listener_port(l), 0);
    a.l = l;
    pthread_create(&t, NULL, send_and_close, &a);
    connect_to(l, "127.0.0.1:%d", &x);
    ck_assert_int_eq(x->ops->recv_all(x, got, sizeof(got)), -ECONNRESET);
    pthread_join(t, NULL);
    x->ops->close(x);
    xport_listener_close(l);
}
END_TEST

/* A big scatter/gather send arrives intact over IPv6 loopback. */
START_TEST(test_large_sendv_ipv6)
{
    xport_listener *l = NULL;
    xport *x = NULL;
    pthread_t t;
    uint8_t *buf = malloc(BIG_SEND_BYTES), *got = malloc(BIG_SEND_BYTES);
    peer_args a = {.send = buf, .send_len = BIG_SEND_BYTES};
    int rc;

    for (size_t i = 0; i < BIG_SEND_BYTES; i++)
        buf[i] = (uint8_t)(i * 31 + (i >> 12));
    rc = xport_listen("tcp", "[::1]:0", &l);
    if (rc < 0) {
        printf("SKIPPED: IPv6 loopback unavailable (%s)\n", strerror(-rc));
        goto out;
    }
    a.l = l;
    pthread_create(&t, NULL, send_and_close, &a);
    connect_to(l, "[::1]:%d", &x);
    ck_assert_str_eq(strncmp(x->peer, "[::1]:", 6) == 0 ? "ok" : x->peer, "ok");
    ck_assert_int_eq(x->ops->recv_all(x, got, BIG_SEND_BYTES), 0);
    ck_assert_mem_eq(got, buf, BIG_SEND_BYTES);
    ck_assert_int_eq(x->ops->recv_all(x, got, 1), -ECONNRESET);
    pthread_join(t, NULL);
    x->ops->close(x);
    xport_listener_close(l);
out:
    free(buf);
    free(got);
}
END_TEST

static void *accept_expect_cancel(void *arg)
{
    xport *x = NULL;

    ck_assert_int_eq(xport_accept(arg, &x), -ECANCELED);
    return NULL;
}

START_TEST(test_listener_shutdown_wakes_accept)
{
    xport_listener *l = NULL;
    pthread_t t;

    ck_assert_int_eq(xport_listen("tcp", "127.0.0.1:0", &l), 0);
    pthread_create(&t, NULL, accept_expect_cancel, l);
    usleep(50 * 1000);
    xport_listener_shutdown(l);
    pthread_join(t, NULL);
    xport_listener_close(l);
}
END_TEST

START_TEST(test_connect_refused_and_bad)
{
    xport_listener *l = NULL;
    xport *x = NULL;
    char addr[64];
    int port;

    /* a port that was just free: nothing listens there any more */
    ck_assert_int_eq(xport_listen("tcp", "127.0.0.1:0", &l), 0);
    port = xport_listener_port(l);
    xport_listener_close(l);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    ck_assert_int_eq(xport_connect("tcp", addr, CONNECT_TIMEOUT_MS, &x), -ECONNREFUSED);
    ck_assert_int_eq(xport_connect("tcp", "nonsense", CONNECT_TIMEOUT_MS, &x), -EINVAL);
    ck_assert_int_eq(xport_connect("carrier-pigeon", addr, CONNECT_TIMEOUT_MS, &x), -EINVAL);
    ck_assert_int_eq(xport_available("tcp"), 1);
    ck_assert_int_eq(xport_available("carrier-pigeon"), 0);
}
END_TEST

int main(void)
{
    dlog_init("test_frame", DLOG_WARN);
    seed_rng_default(0x2545F4914F6CDD1Dull);
    Suite *s = suite_create("frame");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_rejections);
    tcase_add_test(tc, test_limits_are_inclusive);
    tcase_add_test(tc, test_no_bulk_at_all);
    tcase_add_test(tc, test_garbage_bytes);
    tcase_add_test(tc, test_fuzz_random_headers);
    tcase_add_test(tc, test_split_addr);
    tcase_add_test(tc, test_truncated_header);
    tcase_add_test(tc, test_large_sendv_ipv6);
    tcase_add_test(tc, test_listener_shutdown_wakes_accept);
    tcase_add_test(tc, test_connect_refused_and_bad);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
