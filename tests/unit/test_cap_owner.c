/* test_cap_owner.c - whom the MDS makes a capability out to
 * (mds/cap_owner.c): a key holder for the client id it names, a MUNGE
 * user only for the client of a ticket the MDS gave that uid (tag,
 * expiry, uid, and the request's client id all checked). */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "auth.h"
#include "mds/cap_owner.h"

#define ALICE 1001u
#define BOB 1002u
#define ALICE_CLIENT 7u
#define BOB_CLIENT 8u
#define NOW_S 1000000u
#define LIFE_S AUTH_TICKET_TTL_S

static uint8_t ticket_key[AUTH_KEY_BYTES], other_key[AUTH_KEY_BYTES];
static char why[256];

static void setup(void)
{
    ck_assert_int_eq(auth_init(), 0);
    memset(ticket_key, 0x11, sizeof(ticket_key));
    memset(other_key, 0x22, sizeof(other_key));
}

/* A ticket as MDS_REGISTER issues it, into t (kept alive by the caller). */
static void ticket_of(const uint8_t key[AUTH_KEY_BYTES], uint64_t client, uint32_t uid,
                      uint64_t expires_s, uint8_t t[AUTH_TICKET_BYTES])
{
    uint8_t secret[AUTH_KEY_BYTES];
    auth_ticket tk = { .client_id = client, .uid = uid, .gid = uid, .expires_s = expires_s };
    auth_ticket_issue(key, &tk, t, secret);
}

static void with_ticket(Depfs__MdsRequest *q, uint8_t t[AUTH_TICKET_BYTES])
{
    q->has_ticket = true;
    q->ticket = (ProtobufCBinaryData){ AUTH_TICKET_BYTES, t };
}

static void naming(Depfs__MdsRequest *q, uint64_t client)
{
    q->has_client_id = true;
    q->client_id = client;
}

static const auth_identity alice = { .role = AUTH_ROLE_USER, .uid = ALICE, .gid = ALICE };

/* A request of alice's carrying a fresh ticket of her client, in t. */
static Depfs__MdsRequest alice_with_ticket(uint8_t t[AUTH_TICKET_BYTES])
{
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    ticket_of(ticket_key, ALICE_CLIENT, ALICE, NOW_S + LIFE_S, t);
    with_ticket(&q, t);
    return q;
}

static int owner(const auth_identity *who, const Depfs__MdsRequest *q, mds_cap_owner *o)
{
    why[0] = 0;
    return mds_cap_owner_of(ticket_key, who, q, NOW_S, o, why, sizeof(why));
}

START_TEST(test_key_holder_trusted)
{
    auth_identity key = { .role = AUTH_ROLE_CLUSTER };
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    mds_cap_owner o;
    naming(&q, BOB_CLIENT);
    ck_assert_int_eq(owner(&key, &q, &o), 0);
    ck_assert(o.issue);
    ck_assert_uint_eq(o.client_id, BOB_CLIENT);
}
END_TEST

START_TEST(test_user_own_ticket)
{
    uint8_t t[AUTH_TICKET_BYTES];
    Depfs__MdsRequest q = alice_with_ticket(t);
    mds_cap_owner o;
    ck_assert_int_eq(owner(&alice, &q, &o), 0); /* no client id named: the ticket's */
    ck_assert(o.issue);
    ck_assert_uint_eq(o.client_id, ALICE_CLIENT);
    naming(&q, ALICE_CLIENT);
    ck_assert_int_eq(owner(&alice, &q, &o), 0);
    ck_assert_uint_eq(o.client_id, ALICE_CLIENT);
}
END_TEST

START_TEST(test_user_other_client_refused)
{
    uint8_t t[AUTH_TICKET_BYTES];
    Depfs__MdsRequest q = alice_with_ticket(t);
    mds_cap_owner o;
    /* another client id named with its own ticket */
    naming(&q, BOB_CLIENT);
    ck_assert_int_eq(owner(&alice, &q, &o), -EACCES);
    ck_assert(!o.issue);
    ck_assert_ptr_nonnull(strstr(why, "client 8 asked with the ticket of client 7"));
    /* another client id named with no ticket */
    Depfs__MdsRequest bare = DEPFS__MDS_REQUEST__INIT;
    naming(&bare, BOB_CLIENT);
    ck_assert_int_eq(owner(&alice, &bare, &o), -EACCES);
    ck_assert_ptr_nonnull(strstr(why, "needs that client's ticket"));
    /* bob's ticket (seen on the wire) shown by alice */
    uint8_t tb[AUTH_TICKET_BYTES];
    ticket_of(ticket_key, BOB_CLIENT, BOB, NOW_S + LIFE_S, tb);
    Depfs__MdsRequest stolen = DEPFS__MDS_REQUEST__INIT;
    with_ticket(&stolen, tb);
    ck_assert_int_eq(owner(&alice, &stolen, &o), -EACCES);
    ck_assert_ptr_nonnull(strstr(why, "uid 1002's, not uid 1001's"));
}
END_TEST

START_TEST(test_user_bad_tickets_refused)
{
    uint8_t t[AUTH_TICKET_BYTES];
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    mds_cap_owner o;
    with_ticket(&q, t);
    ticket_of(other_key, ALICE_CLIENT, ALICE, NOW_S + LIFE_S, t); /* not this cluster's */
    ck_assert_int_eq(owner(&alice, &q, &o), -EACCES);
    ck_assert_ptr_nonnull(strstr(why, "forged"));
    ticket_of(ticket_key, ALICE_CLIENT, ALICE, NOW_S + LIFE_S, t);
    t[0] ^= 1; /* its client id rewritten */
    ck_assert_int_eq(owner(&alice, &q, &o), -EACCES);
    ck_assert_ptr_nonnull(strstr(why, "forged"));
    ticket_of(ticket_key, ALICE_CLIENT, ALICE, NOW_S, t); /* expired */
    ck_assert_int_eq(owner(&alice, &q, &o), -EACCES);
    ck_assert_ptr_nonnull(strstr(why, "expired"));
    ck_assert(!o.issue);
}
END_TEST

START_TEST(test_user_without_ticket_gets_none)
{
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    mds_cap_owner o;
    ck_assert_int_eq(owner(&alice, &q, &o), 0);
    ck_assert(!o.issue);
    auth_identity ticket_holder = { .role = AUTH_ROLE_CLIENT, .uid = ALICE };
    ck_assert_int_eq(owner(&ticket_holder, &q, &o), -EACCES);
    ck_assert(!o.issue);
}
END_TEST

static Suite *cap_owner_suite(void)
{
    Suite *s = suite_create("cap_owner");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_key_holder_trusted);
    tcase_add_test(tc, test_user_own_ticket);
    tcase_add_test(tc, test_user_other_client_refused);
    tcase_add_test(tc, test_user_bad_tickets_refused);
    tcase_add_test(tc, test_user_without_ticket_gets_none);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cap_owner_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
