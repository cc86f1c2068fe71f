/* mds_store.c - the MDS unit tests' namespace store (mds_store.h). */
#include "tests/lib/mds_store.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TMS_ERR_MAX 256u
#define TMS_FIRST_SERVER_ID 10u

void tms_open(tms_store *s)
{
    char err[TMS_ERR_MAX], why[MDS_WHY_MAX];
    ck_assert_int_eq(kv_open(s->dir, true, &s->kv, err, sizeof(err)), 0);
    ck_assert_msg(mds_ns_open(s->kv, &s->params, &s->ns, why) == 0, "mds_ns_open: %s", why);
}

void tms_close(tms_store *s)
{
    mds_ns_close(s->ns);
    kv_close(s->kv);
    s->ns = NULL;
    s->kv = NULL;
}

void tms_reopen(tms_store *s)
{
    tms_close(s);
    tms_open(s);
}

void tms_setup(tms_store *s, unsigned n_servers, unsigned def_n, unsigned def_k, uint32_t def_su)
{
    memset(s, 0, sizeof(*s));
    ck_assert_uint_le(n_servers, CONFIG_MAX_IOSERVERS);
    s->params.n_servers = n_servers;
    for (unsigned i = 0; i < n_servers; i++)
        s->params.server_ids[i] = TMS_FIRST_SERVER_ID + i;
    s->params.default_n = def_n;
    s->params.default_k = def_k;
    s->params.default_su = def_su;
    snprintf(s->dir, sizeof(s->dir), "/tmp/test_mds.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(s->dir));
    tms_open(s);
}

void tms_teardown(tms_store *s)
{
    char cmd[PATH_MAX + 16];
    if (s->ns)
        tms_close(s);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", s->dir);
    ck_assert_int_eq(system(cmd), 0);
}
