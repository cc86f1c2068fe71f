/* test_rdma.c - the RDMA verbs transport. Without an RDMA device (the usual
 * case on a dev box or CI) it checks that the transport says so: available
 * is false, listen/connect and the RPC layer fail -ENODEV; the data-path
 * test then prints SKIPPED and tests nothing. With a device it runs real
 * RPC traffic over RDMA at DEPFS_RDMA_TEST_ADDR (default 127.0.0.1:0). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "log.h"
#include "rpc.h"
#include "transport.h"

#define CONNECT_TIMEOUT_MS 5000
#define WAIT_MS 10000
#define T_ECHO 1
#define DATA_CALLS 64
#define DATA_MAX_BYTES (3u << 20) /* larger than one send ring */
#define DEFAULT_TEST_ADDR "127.0.0.1:0"

static int rdma_devices(void)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);

    if (list)
        ibv_free_device_list(list);
    return list ? n : 0;
}

static void echo_handler(void *ctx, const rpc_msg *req, rpc_replier *r)
{
    struct iovec bulk = {.iov_base = req->bulk, .iov_len = req->bulk_len};

    (void)ctx;
    rpc_reply(r, req, req->hdr, req->hdr_len, &bulk, 1);
}

START_TEST(test_available_matches_devices)
{
    ck_assert_int_eq(xport_available("rdma"), rdma_devices() > 0);
    ck_assert_int_eq(xport_available("tcp"), 1);
}
END_TEST

START_TEST(test_no_device_gives_enodev)
{
    xport_listener *l = NULL;
    xport *x = NULL;
    rpc_server *s = NULL;
    rpc_conn *c = NULL;
    rpc_server_opts o = {.transport = "rdma", .address = "127.0.0.1:0", .handler = echo_handler};

    if (rdma_devices() > 0) {
        printf("SKIPPED: an RDMA device exists, the no-device path is not exercised\n");
        return;
    }
    ck_assert_int_eq(xport_listen("rdma", "127.0.0.1:0", &l), -ENODEV);
    ck_assert_ptr_null(l);
    ck_assert_int_eq(xport_connect("rdma", "127.0.0.1:7000", CONNECT_TIMEOUT_MS, &x), -ENODEV);
    ck_assert_ptr_null(x);
    ck_assert_int_eq(rpc_server_start(&o, &s), -ENODEV);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(rpc_conn_open("rdma", "127.0.0.1:7000", NULL, CONNECT_TIMEOUT_MS, NULL, &c),
                     -ENODEV);
    ck_assert_ptr_null(c);
}
END_TEST

/* Pipelined echo calls of growing sizes over RDMA, contents checked. */
static void run_data_path(const char *listen_addr)
{
    rpc_server_opts o = {.transport = "rdma", .address = listen_addr, .handler = echo_handler};
    rpc_server *s = NULL;
    rpc_conn *c = NULL;
    rpc_call *calls[DATA_CALLS];
    uint8_t *out[DATA_CALLS], *in[DATA_CALLS];
    char host[64], addr[96];
    unsigned port;
    int rc;

    frame_limits_default(&o.limits);
    rc = rpc_server_start(&o, &s);
    if (rc < 0) {
        printf("SKIPPED: RDMA device present but cannot listen on %s (%s); "
               "set DEPFS_RDMA_TEST_ADDR to an address of the RDMA interface\n",
               listen_addr, strerror(-rc));
        return;
    }
    ck_assert_int_eq(xport_split_addr(listen_addr, host, sizeof(host), &port), 0);
    snprintf(addr, sizeof(addr), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host,
             rpc_server_port(s));
    ck_assert_int_eq(rpc_conn_open("rdma", addr, NULL, CONNECT_TIMEOUT_MS, NULL, &c), 0);
    for (int i = 0; i < DATA_CALLS; i++) {
        size_t len = (size_t)i * (DATA_MAX_BYTES / DATA_CALLS) + (size_t)i;
        struct iovec b = {.iov_base = NULL, .iov_len = len};
        struct iovec rb;
        out[i] = malloc(len + 1);
        in[i] = malloc(len + 1);
        for (size_t k = 0; k < len; k++)
            out[i][k] = (uint8_t)(k * 7 + (size_t)i);
        b.iov_base = out[i];
        rb = (struct iovec){.iov_base = in[i], .iov_len = len};
        ck_assert_int_eq(rpc_call_start(c, T_ECHO, &i, sizeof(i), &b, 1, &rb, 1, &calls[i]), 0);
    }
    for (int i = 0; i < DATA_CALLS; i++) {
        size_t len = (size_t)i * (DATA_MAX_BYTES / DATA_CALLS) + (size_t)i, hl = 0;
        ck_assert_int_eq(rpc_call_wait(calls[i], WAIT_MS), 0);
        ck_assert_mem_eq(rpc_call_reply_hdr(calls[i], &hl), &i, sizeof(i));
        ck_assert_uint_eq(rpc_call_reply_bulk_len(calls[i]), len);
        ck_assert_mem_eq(in[i], out[i], len);
        rpc_call_free(calls[i]);
        free(out[i]);
        free(in[i]);
    }
    rpc_conn_close(c);
    rpc_server_stop(s);
    printf("RDMA data path: %d pipelined echo calls up to %u bytes verified\n", DATA_CALLS,
           DATA_MAX_BYTES);
}

START_TEST(test_data_path)
{
    const char *addr = getenv("DEPFS_RDMA_TEST_ADDR");

    if (rdma_devices() == 0) {
        printf("SKIPPED: no RDMA device (ibv_get_device_list found none); "
               "RDMA data transfer NOT tested\n");
        return;
    }
    run_data_path(addr ? addr : DEFAULT_TEST_ADDR);
}
END_TEST

int main(void)
{
    dlog_init("test_rdma", DLOG_WARN);
    setvbuf(stdout, NULL, _IONBF, 0);
    Suite *s = suite_create("rdma");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 25);
    tcase_add_test(tc, test_available_matches_devices);
    tcase_add_test(tc, test_no_device_gives_enodev);
    tcase_add_test(tc, test_data_path);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
