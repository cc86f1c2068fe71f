/* mds_handlers.c - the MDS request handlers for unit tests (mds_handlers.h). */
#include "tests/lib/mds_handlers.h"

#include <check.h>
#include <time.h>

#include "auth.h"
#include "config.h"
#include "mds/holds.h"
#include "mds/holds_journal.h"

#define TMH_FIRST_SERVER_ID 10u
#define TMH_REQ_MAX 4096u

/* The handlers' context over s with holds table holds. */
static void up_with(tmh *h, tms_store *s, unsigned n_servers, mds_holds *holds)
{
    depfs_config cfg;
    ck_assert_uint_le(n_servers, CONFIG_MAX_IOSERVERS);
    config_defaults(&cfg);
    cfg.n_ioservers = n_servers;
    for (unsigned i = 0; i < n_servers; i++)
        cfg.ioservers[i].id = TMH_FIRST_SERVER_ID + i;
    ck_assert_int_eq(mds_cluster_open(s->kv, &cfg, &h->cluster), 0);
    mds_ns_set_holds(s->ns, holds);
    h->ctx = (mds_ctx){ .ns = s->ns, .cluster = h->cluster, .holds = holds };
    h->store = s;
}

void tmh_up(tmh *h, tms_store *s, unsigned n_servers, uint64_t floor_s)
{
    mds_holds *holds;
    ck_assert_int_eq(mds_holds_new(MDS_HOLDS_MAX, AUTH_CAP_SKEW_S, floor_s, &holds), 0);
    up_with(h, s, n_servers, holds);
}

void tmh_up_journal(tmh *h, tms_store *s, unsigned n_servers, const char *boot_id)
{
    mds_holds *holds;
    char why[MDS_WHY_MAX];
    int rc = mds_holds_open(s->ns, boot_id, (uint64_t)time(NULL), &holds, why);
    ck_assert_msg(rc == 0, "mds_holds_open: %s", why);
    up_with(h, s, n_servers, holds);
}

void tmh_down(tmh *h)
{
    mds_ns_set_holds(h->store->ns, NULL);
    mds_holds_free(h->ctx.holds);
    mds_cluster_close(h->cluster);
    h->ctx.holds = NULL;
    h->cluster = NULL;
}

int tmh_req(tmh *h, Depfs__MdsOp op, Depfs__MdsRequest *q, mds_result **out)
{
    return tmh_req_as(h, NULL, op, q, out);
}

int tmh_req_as(tmh *h, const auth_identity *who, Depfs__MdsOp op, Depfs__MdsRequest *q,
               mds_result **out)
{
    uint8_t buf[TMH_REQ_MAX];
    size_t len = depfs__mds_request__get_packed_size(q);
    ck_assert_uint_le(len, sizeof(buf));
    depfs__mds_request__pack(q, buf);
    mds_result *r = mds_process(&h->ctx, (uint16_t)op, buf, len, "test", who, NULL);
    ck_assert_ptr_nonnull(r);
    int err = mds_result_reply(r)->err;
    if (out)
        *out = r;
    else
        mds_result_free(r);
    return err;
}
