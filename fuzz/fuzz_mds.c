/* fuzz_mds.c - libFuzzer target for the MDS's request handling: a sequence
 * of requests (fuzz_input.h) through mds_process - decode, boundary checks
 * (mds/req_check.c), namespace, xattrs, cluster - on a real LevelDB store
 * made afresh for every input, so each input replays on its own.
 * A request's bulk (the MDS reads none) picks its caller by its first byte
 * (fuzz_caller): none (auth off), the cluster key, or a MUNGE user, whose
 * requests meet the user-only rules: the role checks, the acting caller,
 * the permission checks and the inode handles (mds/handles.h).
 * Every reply must carry err >= 0, a message with every error, and pack. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "depfs.pb-c.h"
#include "fuzz/fuzz_dir.h"
#include "fuzz/fuzz_input.h"
#include "kvstore.h"
#include "log.h"
#include "mds/cluster.h"
#include "mds/handlers.h"
#include "mds/handles.h"
#include "mds/namespace.h"

#define FUZZ_SERVERS 4u
#define FUZZ_DEFAULT_K 2u
#define FUZZ_ERR_BYTES 256u
#define FUZZ_USER_ID 1000u /* the MUNGE user's uid and gid */
#define FUZZ_NAMESPACE_ID 1u /* the handles' (each input's namespace is new) */

static depfs_config cfg;
static mds_ns_params params;
static kvstore *kv;
static mds_ctx ctx;
static const char *store_dir;

/* The callers a request may come from, picked by its bulk's first byte. */
static const auth_identity fuzz_cluster = { .role = AUTH_ROLE_CLUSTER };
static const auth_identity fuzz_user = { .role = AUTH_ROLE_USER, .uid = FUZZ_USER_ID,
                                         .gid = FUZZ_USER_ID };
static const auth_identity *const fuzz_callers[] = { NULL, &fuzz_cluster, &fuzz_user };
#define FUZZ_CALLERS (sizeof(fuzz_callers) / sizeof(fuzz_callers[0]))

static const auth_identity *fuzz_caller(const fuzz_req *r)
{
    return r->bulk_len > 0 ? fuzz_callers[r->bulk[0] % FUZZ_CALLERS] : NULL;
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "fuzz_mds: %s: %s\n", what, why);
    abort();
}

/* A new, empty store in the scratch dir: the next mds_ns_open starts a
 * fresh namespace. (Deleting every key instead leaves tombstones that
 * every later iteration walks past: slower with each run.) */
static void fresh_store(void)
{
    char err[FUZZ_ERR_BYTES];
    if (kv)
        kv_close(kv);
    fuzz_dir_empty(store_dir);
    if (kv_open(store_dir, false, &kv, err, sizeof(err)) < 0)
        die("kv_open", err);
}

static void open_mds(void)
{
    char why[MDS_WHY_MAX];
    if (mds_ns_open(kv, &params, &ctx.ns, why) < 0)
        die("mds_ns_open", why);
    mds_ns_defer_sync(ctx.ns); /* no barriers: nothing here survives a crash */
    if (mds_cluster_open(kv, &cfg, &ctx.cluster) < 0)
        die("mds_cluster_open", "failed");
}

static void close_mds(void)
{
    mds_cluster_close(ctx.cluster);
    mds_ns_close(ctx.ns);
    ctx.cluster = NULL;
    ctx.ns = NULL;
}

/* The reply is one the rpc layer can send and a client can read. */
static void check_reply(const mds_result *res)
{
    const Depfs__MdsReply *rep = mds_result_reply(res);
    if (rep->err < 0)
        die("reply", "negative err");
    if (rep->err && (!rep->message || !rep->message[0]))
        die("reply", "an error without a message");
    size_t len = depfs__mds_reply__get_packed_size(rep);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        die("reply", "out of memory");
    if (depfs__mds_reply__pack(rep, buf) != len)
        die("reply", "packed size differs");
    Depfs__MdsReply *back = depfs__mds_reply__unpack(NULL, len, buf);
    if (!back || back->err != rep->err)
        die("reply", "does not decode to itself");
    depfs__mds_reply__free_unpacked(back, NULL);
    free(buf);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    dlog_init("fuzz_mds", DLOG_ERR);
    config_defaults(&cfg);
    cfg.n_ioservers = FUZZ_SERVERS;
    for (unsigned i = 0; i < FUZZ_SERVERS; i++)
        cfg.ioservers[i].id = i;
    cfg.default_n = FUZZ_SERVERS;
    cfg.default_k = FUZZ_DEFAULT_K;
    mds_ns_params_from_config(&cfg, &params);
    /* a fixed handle key: a tag seen in one input means the same in all */
    uint8_t handle_key[AUTH_KEY_BYTES];
    memset(handle_key, 0x5a, sizeof(handle_key));
    mds_handles_init(&ctx.handles, handle_key, FUZZ_NAMESPACE_ID);
    store_dir = fuzz_dir_make("mds");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_req r;
    fresh_store();
    open_mds();
    for (unsigned i = 0; i < FUZZ_MAX_REQUESTS && fuzz_next(&data, &size, &r); i++) {
        mds_result *res = mds_process(&ctx, r.type, r.hdr, r.hdr_len, "fuzz", fuzz_caller(&r),
                                      NULL);
        if (!res)
            die("mds_process", "out of memory");
        check_reply(res);
        mds_result_free(res);
    }
    close_mds();
    return 0;
}
