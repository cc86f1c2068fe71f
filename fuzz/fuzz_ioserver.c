/* fuzz_ioserver.c - libFuzzer target for the I/O server's request
 * handling: a sequence of requests with bulk (fuzz_input.h) through
 * ios_process - decode, boundary checks (ioserver/req_check.c), strip
 * files and checksums, the lock table, the state store and dirty log - on
 * a real data dir that is emptied before every input, so each input
 * replays on its own. Every reply must carry err >= 0, a message with
 * every error, a bulk only for a READ that succeeded, and pack. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "depfs.pb-c.h"
#include "fuzz/fuzz_dir.h"
#include "fuzz/fuzz_input.h"
#include "ioserver/handlers.h"
#include "log.h"

#define FUZZ_SERVERS 4u
#define FUZZ_SELF 1u
#define FUZZ_MAX_BULK_BYTES (1u << 20) /* READ replies: small, so runs stay fast */
#define FUZZ_LOCK_LEASE_MS 0u          /* every held lock is stale: heartbeats list them */
#define FUZZ_ERR_BYTES 256u

static depfs_config cfg;
static ios_ctx ctx;
static char data_dir[PATH_MAX];

static void die(const char *what, const char *why)
{
    fprintf(stderr, "fuzz_ioserver: %s: %s\n", what, why);
    abort();
}

static void open_server(void)
{
    char err[FUZZ_ERR_BYTES];
    if (ios_strips_open(data_dir, 0, &ctx.strips) < 0)
        die("ios_strips_open", data_dir);
    if (ios_state_open(data_dir, &ctx.state, err, sizeof(err)) < 0)
        die("ios_state_open", err);
    if (ios_locks_create(0, &ctx.locks) < 0)
        die("ios_locks_create", "failed");
}

/* Closes everything and empties the data dir: the next input starts UP,
 * at epoch 0, with no strip files, locks or dirty records. */
static void close_server(void)
{
    ios_locks_free(ctx.locks);
    ios_state_close(ctx.state);
    ios_strips_close(ctx.strips);
    fuzz_dir_empty(data_dir);
}

static void check_reply(uint16_t type, const ios_result *res)
{
    const Depfs__IoReply *rep = &res->reply;
    if (rep->err < 0)
        die("reply", "negative err");
    if (rep->err && (!rep->message || !rep->message[0]))
        die("reply", "an error without a message");
    if (res->bulk_len && (rep->err || type != DEPFS__IO_OP__IO_READ))
        die("reply", "bulk with an error or on a non-READ");
    size_t len = depfs__io_reply__get_packed_size(rep);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        die("reply", "out of memory");
    if (depfs__io_reply__pack(rep, buf) != len)
        die("reply", "packed size differs");
    Depfs__IoReply *back = depfs__io_reply__unpack(NULL, len, buf);
    if (!back || back->err != rep->err)
        die("reply", "does not decode to itself");
    depfs__io_reply__free_unpacked(back, NULL);
    free(buf);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    dlog_init("fuzz_ioserver", DLOG_ERR);
    config_defaults(&cfg);
    cfg.n_ioservers = FUZZ_SERVERS;
    for (unsigned i = 0; i < FUZZ_SERVERS; i++)
        cfg.ioservers[i].id = i;
    snprintf(data_dir, sizeof(data_dir), "%s", fuzz_dir_make("ioserver"));
    ctx.server_id = FUZZ_SELF;
    ctx.cfg = &cfg;
    ctx.max_bulk_bytes = FUZZ_MAX_BULK_BYTES;
    ctx.lock_lease_ms = FUZZ_LOCK_LEASE_MS;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_req r;
    open_server();
    for (unsigned i = 0; i < FUZZ_MAX_REQUESTS && fuzz_next(&data, &size, &r); i++) {
        ios_result res;
        ios_process(&ctx, r.type, r.hdr, r.hdr_len, r.bulk, r.bulk_len, "fuzz", NULL, &res);
        check_reply(r.type, &res);
        ios_result_free(&res);
    }
    close_server();
    return 0;
}
