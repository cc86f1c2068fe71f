/* test_authz.c - who may ask what (ioserver/authz.c, mds/authz.c): the
 * cluster key's holders anything; a ticket holder no admin operation and
 * no lock in another client's name; a MUNGE user no server states; with
 * auth off everything. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ioserver/authz.h"
#include "mds/authz.h"

#define WHY_LEN 256
#define ME 7u
#define OTHER 8u

static const auth_identity cluster = { .role = AUTH_ROLE_CLUSTER };
static const auth_identity client = { .role = AUTH_ROLE_CLIENT, .uid = 1001, .client_id = ME };
static const auth_identity user = { .role = AUTH_ROLE_USER, .uid = 1001 };

static int io(const auth_identity *who, uint16_t type, const Depfs__IoRequest *q)
{
    char why[WHY_LEN] = "";
    int rc = ios_authorize(who, type, q, why, sizeof(why));
    ck_assert(rc == 0 || (rc == -EPERM && why[0]));
    return rc;
}

START_TEST(test_ioserver_rules)
{
    Depfs__IoRequest q = DEPFS__IO_REQUEST__INIT;
    Depfs__LockSpec l = DEPFS__LOCK_SPEC__INIT;
    static const uint16_t admin_ops[] = { DEPFS__IO_OP__IO_SET_STATE, DEPFS__IO_OP__IO_DIRTY,
                                          DEPFS__IO_OP__IO_HEARTBEAT };
    for (size_t i = 0; i < sizeof(admin_ops) / sizeof(admin_ops[0]); i++) {
        ck_assert_int_eq(io(&client, admin_ops[i], &q), -EPERM);
        ck_assert_int_eq(io(&cluster, admin_ops[i], &q), 0);
        ck_assert_int_eq(io(NULL, admin_ops[i], &q), 0);
    }
    ck_assert_int_eq(io(&client, DEPFS__IO_OP__IO_READ, &q), 0);
    ck_assert_int_eq(io(&client, DEPFS__IO_OP__IO_REMOVE, &q), 0);
    q.has_dirty_action = true; /* a writer's probe after a cluster change */
    q.dirty_action = DEPFS__DIRTY_ACTION__DIRTY_PROBE;
    ck_assert_int_eq(io(&client, DEPFS__IO_OP__IO_DIRTY, &q), 0);
    q.dirty_action = DEPFS__DIRTY_ACTION__DIRTY_CLEAR;
    ck_assert_int_eq(io(&client, DEPFS__IO_OP__IO_DIRTY, &q), -EPERM);
    q.has_dirty_action = false;
    q.has_ignore_locks = q.ignore_locks = true;
    ck_assert_int_eq(io(&client, DEPFS__IO_OP__IO_WRITE, &q), -EPERM);
    ck_assert_int_eq(io(&cluster, DEPFS__IO_OP__IO_WRITE, &q), 0);
    q.has_ignore_locks = q.ignore_locks = false;
    q.has_take_over_stale = q.take_over_stale = true;
    ck_assert_int_eq(io(&client, DEPFS__IO_OP__IO_LOCK, &q), -EPERM);
    q.has_take_over_stale = q.take_over_stale = false;
    q.has_unverified = q.unverified = true; /* blocks unchecked: recovery's */
    ck_assert_int_eq(io(&client, DEPFS__IO_OP__IO_READ, &q), -EPERM);
    ck_assert_int_eq(io(&cluster, DEPFS__IO_OP__IO_READ, &q), 0);
    q.has_unverified = q.unverified = false;
    /* locks in one's own name only; the cluster key may name anyone (repair) */
    q.lock = &l;
    l.owner_client = ME;
    ck_assert_int_eq(io(&client, DEPFS__IO_OP__IO_LOCK, &q), 0);
    ck_assert_int_eq(io(&client, DEPFS__IO_OP__IO_UNLOCK, &q), 0);
    l.owner_client = OTHER;
    ck_assert_int_eq(io(&client, DEPFS__IO_OP__IO_UNLOCK, &q), -EPERM);
    ck_assert_int_eq(io(&client, DEPFS__IO_OP__IO_WRITE, &q), -EPERM);
    ck_assert_int_eq(io(&client, DEPFS__IO_OP__IO_READ, &q), -EPERM);
    ck_assert_int_eq(io(&cluster, DEPFS__IO_OP__IO_UNLOCK, &q), 0);
    /* a MUNGE user has no business at an I/O server without a ticket */
    q.lock = NULL;
    ck_assert_int_eq(io(&user, DEPFS__IO_OP__IO_READ, &q), -EPERM);
}
END_TEST

START_TEST(test_mds_rules)
{
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    char why[WHY_LEN] = "";
    ck_assert_int_eq(mds_authorize(&user, DEPFS__MDS_OP__MDS_SET_SERVER_STATE, &q, why,
                                   sizeof(why)), -EPERM);
    ck_assert_msg(strstr(why, "admin operation"), "%s", why);
    ck_assert_int_eq(mds_authorize(&cluster, DEPFS__MDS_OP__MDS_SET_SERVER_STATE, &q, why,
                                   sizeof(why)), 0);
    ck_assert_int_eq(mds_authorize(NULL, DEPFS__MDS_OP__MDS_SET_SERVER_STATE, &q, why,
                                   sizeof(why)), 0);
    ck_assert_int_eq(mds_authorize(&user, DEPFS__MDS_OP__MDS_CREATE, &q, why, sizeof(why)), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("authz");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_ioserver_rules);
    tcase_add_test(tc, test_mds_rules);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
