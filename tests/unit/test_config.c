/* test_config.c - the cluster config parser: a full file, defaults, the
 * layout clamp, and errors naming file:line for every kind of bad input. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "layout.h"

#define ERR_LEN 512

static char tmpdir[64];
static char conf_path[128];
static depfs_config cfg; /* big (PATH_MAX strings): keep off the stack */

static void setup(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/depfs-test-config-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    snprintf(conf_path, sizeof(conf_path), "%s/depfs.conf", tmpdir);
}

static void teardown(void)
{
    unlink(conf_path);
    rmdir(tmpdir);
}

static void write_conf(const char *text)
{
    FILE *f = fopen(conf_path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(fputs(text, f), 0);
    ck_assert_int_eq(fclose(f), 0);
}

static int load(const char *text, char *err)
{
    write_conf(text);
    err[0] = '\0';
    return config_load(conf_path, &cfg, err, ERR_LEN);
}

#define MDS_LINE "mds_address = 127.0.0.1:7000\n"
#define FOUR_SERVERS \
    "ioserver = 1 127.0.0.1:7101 /tmp/d1\n" \
    "ioserver = 2 127.0.0.1:7102 /tmp/d2\n" \
    "ioserver = 3 127.0.0.1:7103 /tmp/d3\n" \
    "ioserver = 4 127.0.0.1:7104 /tmp/d4\n"

START_TEST(test_defaults)
{
    config_defaults(&cfg);
    ck_assert_str_eq(cfg.transport, "tcp");
    ck_assert_uint_eq(cfg.default_n, 8);
    ck_assert_uint_eq(cfg.default_k, 6);
    ck_assert_uint_eq(cfg.default_su, 65536);
    ck_assert_uint_eq(cfg.request_timeout_ms, 2000);
    ck_assert_uint_eq(cfg.connect_timeout_ms, 1000);
    ck_assert_uint_eq(cfg.heartbeat_period_ms, 500);
    ck_assert_uint_eq(cfg.lock_lease_ms, 5000);
    ck_assert_uint_eq(cfg.server_down_expiry_ms, 5000);
    ck_assert_uint_eq(cfg.max_header_bytes, 1u << 20);
    ck_assert_uint_eq(cfg.max_bulk_bytes, 64u << 20);
    ck_assert_uint_eq(cfg.frame_timeout_ms, 30000);
    ck_assert_uint_eq(cfg.idle_timeout_ms, 600000);
    ck_assert_uint_eq(cfg.send_timeout_ms, 30000);
    ck_assert_uint_eq(cfg.max_connections, 1024);
    ck_assert_uint_eq(cfg.max_unproven_per_peer, 64);
    ck_assert_uint_eq(cfg.n_ioservers, 0);
    ck_assert(cfg.auth);
    ck_assert_str_eq(cfg.cluster_key, "/etc/depfs/cluster.key");
    ck_assert_str_eq(cfg.munge_socket, "");
    ck_assert_uint_eq(cfg.n_client_nodes, 0);
    ck_assert(cfg.root_squash);
    ck_assert_uint_eq(cfg.squash_uid, 65534);
    ck_assert_uint_eq(cfg.squash_gid, 65534);
}
END_TEST

START_TEST(test_full_file)
{
    char err[ERR_LEN];
    int rc = load("# a DePFS cluster\n"
                  "\n"
                  "  mds_address =  mds.example:7000   # the MDS\n"
                  "mds_data_dir=/var/lib/depfs/mds\n"
                  "recovery_data_dir = /var/lib/depfs/rec#1\n"
                  "transport = rdma\n"
                  "default_layout = 10@8@128k\n"
                  "request_timeout_ms = 3000\n"
                  "connect_timeout_ms = 250\n"
                  "heartbeat_period_ms = 100\n"
                  "lock_lease_ms = 7000\n"
                  "server_down_expiry_ms = 9000\n"
                  "max_header_bytes = 64k\n"
                  "max_bulk_bytes = 16m\n"
                  "frame_timeout_ms = 4000\n"
                  "idle_timeout_ms = 60000\n"
                  "send_timeout_ms = 5000\n"
                  "max_connections = 4096\n"
                  "max_unproven_per_peer = 16\n"
                  "auth = off\n"
                  "cluster_key = /etc/depfs/k\n"
                  "munge_socket = /run/m.sock\n"
                  "client_nodes = 10.1.0.0/16, 192.168.7.9 127.0.0.1\n"
                  "root_squash = off\n"
                  "squash_uid = 99\n"
                  "squash_gid = 98\n"
                  "\tioserver = 7  [::1]:7101   /data/with space/s7 \n"
                  "ioserver = 3 host3:7103 /data/s3\n",
                  err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_str_eq(cfg.path, conf_path);
    ck_assert_str_eq(cfg.mds_address, "mds.example:7000");
    ck_assert_str_eq(cfg.mds_data_dir, "/var/lib/depfs/mds");
    ck_assert_str_eq(cfg.recovery_data_dir, "/var/lib/depfs/rec#1");
    ck_assert_str_eq(cfg.transport, "rdma");
    ck_assert_uint_eq(cfg.request_timeout_ms, 3000);
    ck_assert_uint_eq(cfg.connect_timeout_ms, 250);
    ck_assert_uint_eq(cfg.heartbeat_period_ms, 100);
    ck_assert_uint_eq(cfg.lock_lease_ms, 7000);
    ck_assert_uint_eq(cfg.server_down_expiry_ms, 9000);
    ck_assert_uint_eq(cfg.max_header_bytes, 65536);
    ck_assert_uint_eq(cfg.max_bulk_bytes, 16u << 20);
    ck_assert_uint_eq(cfg.frame_timeout_ms, 4000);
    ck_assert_uint_eq(cfg.idle_timeout_ms, 60000);
    ck_assert_uint_eq(cfg.send_timeout_ms, 5000);
    ck_assert_uint_eq(cfg.max_connections, 4096);
    ck_assert_uint_eq(cfg.max_unproven_per_peer, 16);
    ck_assert(!cfg.auth);
    ck_assert_str_eq(cfg.cluster_key, "/etc/depfs/k");
    ck_assert_str_eq(cfg.munge_socket, "/run/m.sock");
    ck_assert_uint_eq(cfg.n_client_nodes, 3);
    ck_assert(!cfg.root_squash);
    ck_assert_uint_eq(cfg.squash_uid, 99);
    ck_assert_uint_eq(cfg.squash_gid, 98);
    ck_assert_uint_eq(cfg.n_ioservers, 2);
    /* only two servers: 10@8 is clamped to 2@1, the SU kept */
    ck_assert_uint_eq(cfg.default_n, 2);
    ck_assert_uint_eq(cfg.default_k, 1);
    ck_assert_uint_eq(cfg.default_su, 131072);

    const ioserver_conf *s = config_ioserver(&cfg, 7);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s->address, "[::1]:7101");
    ck_assert_str_eq(s->data_dir, "/data/with space/s7");
    s = config_ioserver(&cfg, 3);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s->address, "host3:7103");
    ck_assert_ptr_null(config_ioserver(&cfg, 4));
}
END_TEST

START_TEST(test_layout_defaults_and_clamp)
{
    char err[ERR_LEN];

    /* nothing given, 4 servers: 8@6 -> 4@3 */
    ck_assert_int_eq(load(MDS_LINE FOUR_SERVERS, err), 0);
    ck_assert_str_eq(cfg.transport, "tcp");
    ck_assert_uint_eq(cfg.default_n, 4);
    ck_assert_uint_eq(cfg.default_k, 3);
    ck_assert_uint_eq(cfg.default_su, LAYOUT_DEFAULT_SU);
    ck_assert_uint_eq(cfg.request_timeout_ms, 2000);

    /* fits: kept as is, default SU */
    ck_assert_int_eq(load(MDS_LINE FOUR_SERVERS "default_layout = 3@2\n", err), 0);
    ck_assert_uint_eq(cfg.default_n, 3);
    ck_assert_uint_eq(cfg.default_k, 2);
    ck_assert_uint_eq(cfg.default_su, LAYOUT_DEFAULT_SU);

    /* too wide, small k: n clamped, k kept */
    ck_assert_int_eq(load(MDS_LINE FOUR_SERVERS "default_layout = 6@2@1m\n", err), 0);
    ck_assert_uint_eq(cfg.default_n, 4);
    ck_assert_uint_eq(cfg.default_k, 2);
    ck_assert_uint_eq(cfg.default_su, 1u << 20);

    /* one server: 1@1 */
    ck_assert_int_eq(load(MDS_LINE "ioserver = 1 127.0.0.1:7101 /tmp/d1\n", err), 0);
    ck_assert_uint_eq(cfg.default_n, 1);
    ck_assert_uint_eq(cfg.default_k, 1);

    /* no servers at all (client-only config): no clamp */
    ck_assert_int_eq(load(MDS_LINE, err), 0);
    ck_assert_uint_eq(cfg.default_n, 8);
    ck_assert_uint_eq(cfg.default_k, 6);
}
END_TEST

/* Bad files: -EINVAL and an error containing "<file>:<line>" and `needle`. */
static const struct { const char *text; unsigned line; const char *needle; } bad[] = {
    { MDS_LINE "colour = blue\n", 2, "unknown key 'colour'" },
    { MDS_LINE "just words\n", 2, "key = value" },
    { MDS_LINE " = 5\n", 2, "missing key" },
    { MDS_LINE "mds_data_dir =\n", 2, "missing value" },
    { "mds_address = nohostport\n", 1, "HOST:PORT" },
    { "mds_address = host:99999\n", 1, "bad port" },
    { "mds_address = host:0\n", 1, "bad port" },
    { "mds_address = :7000\n", 1, "HOST:PORT" },
    { MDS_LINE "mds_address = 127.0.0.1:7001\n", 2, "set twice (first on line 1)" },
    { MDS_LINE "transport = udp\n", 2, "'udp'" },
    { MDS_LINE "auth = maybe\n", 2, "auth: bad value 'maybe' (expected on or off)" },
    { MDS_LINE "default_layout = 8@9\n", 2, "k (9) > n (8)" },
    { MDS_LINE "default_layout = 8@6@1000\n", 2, "multiple of 512" },
    { MDS_LINE "default_layout = eight\n", 2, "default_layout" },
    { MDS_LINE "request_timeout_ms = soon\n", 2, "request_timeout_ms: bad value 'soon'" },
    { MDS_LINE "lock_lease_ms = 0\n", 2, "lock_lease_ms" },
    { MDS_LINE "heartbeat_period_ms = 99999999999999999999999\n", 2, "heartbeat_period_ms" },
    { MDS_LINE "connect_timeout_ms = -5\n", 2, "connect_timeout_ms" },
    { MDS_LINE "max_bulk_bytes = 8g\n", 2, "max_bulk_bytes" },
    { MDS_LINE "max_header_bytes = 12\n", 2, "max_header_bytes" },
    { MDS_LINE "max_connections = 0\n", 2, "max_connections: bad value '0'" },
    { MDS_LINE "max_unproven_per_peer = 2000000\n", 2, "max_unproven_per_peer" },
    { MDS_LINE "idle_timeout_ms = 0\n", 2, "idle_timeout_ms" },
    { MDS_LINE "ioserver = 1 127.0.0.1:7101\n", 2, "ID HOST:PORT DATADIR" },
    { MDS_LINE "client_nodes = node7\n", 2, "client_nodes: bad address 'node7'" },
    { MDS_LINE "client_nodes = 10.0.0.0/33\n", 2, "bad prefix length" },
    { MDS_LINE "client_nodes = 10.0.0.1/x\n", 2, "bad prefix length" },
    { MDS_LINE "root_squash = yes\n", 2, "root_squash: bad value 'yes'" },
    { MDS_LINE "squash_uid = 4294967295\n", 2, "squash_uid: bad value" },
    { MDS_LINE "squash_gid = -1\n", 2, "squash_gid: bad value" },
    { MDS_LINE "ioserver = x 127.0.0.1:7101 /d\n", 2, "bad id 'x'" },
    { MDS_LINE "ioserver = 4294967296 127.0.0.1:7101 /d\n", 2, "bad id" },
    { MDS_LINE "ioserver = 1 127.0.0.1 /d\n", 2, "HOST:PORT" },
    { MDS_LINE "ioserver = 1 h:1 /a\n# c\nioserver = 1 h:2 /b\n", 4, "duplicate id 1 (first on line 2)" },
    { MDS_LINE "ioserver = 1 h:1 /a\nioserver = 2 h:1 /b\n", 3, "duplicate address h:1" },
};

START_TEST(test_bad_files)
{
    char err[ERR_LEN], where[256];
    int rc = load(bad[_i].text, err);
    ck_assert_msg(rc == -EINVAL, "case %d loaded (rc %d)", _i, rc);
    snprintf(where, sizeof(where), "%s:%u: ", conf_path, bad[_i].line);
    ck_assert_msg(strncmp(err, where, strlen(where)) == 0, "case %d: '%s' does not start with '%s'",
                  _i, err, where);
    ck_assert_msg(strstr(err, bad[_i].needle) != NULL, "case %d: '%s' lacks '%s'", _i, err,
                  bad[_i].needle);
}
END_TEST

/* client_nodes: single addresses and networks, as MUNGE reports origins
 * (network byte order). */
START_TEST(test_client_nodes)
{
    char err[ERR_LEN];
    ck_assert_int_eq(load(MDS_LINE "client_nodes = 10.1.0.0/16,192.168.7.9 0.0.0.0/0\n", err), 0);
    ck_assert_uint_eq(cfg.n_client_nodes, 3);
    ck_assert(config_is_client_node(&cfg, htonl(0x0a010203)));  /* 10.1.2.3 */
    ck_assert_int_eq(load(MDS_LINE "client_nodes = 10.1.0.0/16,192.168.7.9\n", err), 0);
    ck_assert(config_is_client_node(&cfg, htonl(0x0a01fffe)));
    ck_assert(!config_is_client_node(&cfg, htonl(0x0a020001)));  /* 10.2.0.1 */
    ck_assert(config_is_client_node(&cfg, htonl(0xc0a80709)));
    ck_assert(!config_is_client_node(&cfg, htonl(0xc0a8070a)));
    ck_assert(!config_is_client_node(&cfg, 0));
    ck_assert_int_eq(load(MDS_LINE, err), 0);
    ck_assert(!config_is_client_node(&cfg, htonl(0x7f000001)));
}
END_TEST

START_TEST(test_missing_mds_and_file)
{
    char err[ERR_LEN];
    ck_assert_int_eq(load(FOUR_SERVERS, err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "mds_address is required"));

    char missing[200];
    snprintf(missing, sizeof(missing), "%s/nope.conf", tmpdir);
    ck_assert_int_eq(config_load(missing, &cfg, err, sizeof(err)), -ENOENT);
    ck_assert_ptr_nonnull(strstr(err, missing));

    /* a NULL error buffer is allowed */
    write_conf("bogus\n");
    ck_assert_int_eq(config_load(conf_path, &cfg, NULL, 0), -EINVAL);
}
END_TEST

START_TEST(test_env_path)
{
    char err[ERR_LEN];
    write_conf(MDS_LINE);
    ck_assert_int_eq(setenv(CONFIG_ENV, conf_path, 1), 0);
    ck_assert_int_eq(config_load(NULL, &cfg, err, sizeof(err)), 0);
    ck_assert_str_eq(cfg.path, conf_path);
    ck_assert_str_eq(cfg.mds_address, "127.0.0.1:7000");
    unsetenv(CONFIG_ENV);
}
END_TEST

START_TEST(test_many_servers)
{
    char err[ERR_LEN];
    size_t cap = 64 * (CONFIG_MAX_IOSERVERS + 2);
    char *text = malloc(cap);
    ck_assert_ptr_nonnull(text);
    size_t used = (size_t)snprintf(text, cap, MDS_LINE);
    for (unsigned i = 0; i < CONFIG_MAX_IOSERVERS; i++)
        used += (size_t)snprintf(text + used, cap - used, "ioserver = %u 10.0.0.1:%u /d%u\n", i,
                                 8000 + i, i);
    ck_assert_int_eq(load(text, err), 0);
    ck_assert_uint_eq(cfg.n_ioservers, CONFIG_MAX_IOSERVERS);
    ck_assert_uint_eq(cfg.default_n, 8);
    ck_assert_str_eq(config_ioserver(&cfg, 255)->data_dir, "/d255");
    snprintf(text + used, cap - used, "ioserver = 9999 10.0.0.2:1 /x\n");
    ck_assert_int_eq(load(text, err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "more than"));
    free(text);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_full_file);
    tcase_add_test(tc, test_layout_defaults_and_clamp);
    tcase_add_loop_test(tc, test_bad_files, 0, (int)(sizeof(bad) / sizeof(bad[0])));
    tcase_add_test(tc, test_client_nodes);
    tcase_add_test(tc, test_missing_mds_and_file);
    tcase_add_test(tc, test_env_path);
    tcase_add_test(tc, test_many_servers);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
