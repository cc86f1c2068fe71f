/* test_authz.c - who may ask what (ioserver/authz.c, mds/authz.c): the
 * cluster key's holders anything; a ticket holder no admin operation and
 * no lock in another client's name; a MUNGE user no server states; with
 * auth off everything. Capabilities at the I/O server: a ticket holder's
 * request on a file needs one that is tagged, unexpired (skew allowed),
 * for that file and that client, with the rights the op needs; the
 * cluster key's holders and auth off need none. */
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
    /* a "probe" that unlocks is a DIRTY_CLEAR, one that syncs a rejoin
     * (the server goes UP): admin work however it is labelled */
    q.has_unlock = q.unlock = true;
    ck_assert_int_eq(io(&client, DEPFS__IO_OP__IO_DIRTY, &q), -EPERM);
    q.has_unlock = q.unlock = false;
    q.has_sync = q.sync = true;
    ck_assert_int_eq(io(&client, DEPFS__IO_OP__IO_DIRTY, &q), -EPERM);
    q.has_sync = q.sync = false;
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
    q.has_background = q.background = true; /* told of other clients' I/O: recovery's */
    ck_assert_int_eq(io(&client, DEPFS__IO_OP__IO_READ, &q), -EPERM);
    ck_assert_int_eq(io(&cluster, DEPFS__IO_OP__IO_READ, &q), 0);
    q.has_background = q.background = false;
    /* the admin-only flags hold for every op, a writer's dirty probe too */
    q.has_dirty_action = true;
    q.dirty_action = DEPFS__DIRTY_ACTION__DIRTY_PROBE;
    ck_assert_int_eq(io(&client, DEPFS__IO_OP__IO_DIRTY, &q), 0);
    protobuf_c_boolean *admin_flags[][2] = {
        { &q.has_ignore_locks, &q.ignore_locks }, { &q.has_take_over_stale, &q.take_over_stale },
        { &q.has_unverified, &q.unverified }, { &q.has_background, &q.background },
    };
    for (size_t i = 0; i < sizeof(admin_flags) / sizeof(admin_flags[0]); i++) {
        *admin_flags[i][0] = *admin_flags[i][1] = true;
        ck_assert_int_eq(io(&client, DEPFS__IO_OP__IO_DIRTY, &q), -EPERM);
        ck_assert_int_eq(io(&cluster, DEPFS__IO_OP__IO_DIRTY, &q), 0);
        *admin_flags[i][0] = *admin_flags[i][1] = false;
    }
    q.has_dirty_action = false;
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

#define FILE_ID 0x1234u
#define CAP_NOW_S 1000000u

static uint8_t cap_key[AUTH_KEY_BYTES];

/* A capability for (file, client, rights) expiring at expires_s in q. */
static void give_cap(Depfs__IoRequest *q, uint8_t buf[AUTH_CAP_BYTES], uint64_t file,
                     uint64_t client, uint32_t rights, uint64_t expires_s)
{
    auth_cap c = { .file_id = file, .client_id = client, .expires_s = expires_s,
                   .rights = rights };
    auth_cap_issue(cap_key, &c, buf);
    q->has_capability = true;
    q->capability = (ProtobufCBinaryData){ AUTH_CAP_BYTES, buf };
}

static int cap(const auth_identity *who, uint16_t type, const Depfs__IoRequest *q)
{
    char why[WHY_LEN] = "";
    int rc = ios_check_capability(who, type, q, who ? cap_key : NULL, CAP_NOW_S, why,
                                  sizeof(why));
    ck_assert_msg(rc == 0 || (rc == -EACCES && why[0]), "rc %d why '%s'", rc, why);
    return rc;
}

START_TEST(test_ioserver_capabilities)
{
    static const uint16_t file_ops[] = { DEPFS__IO_OP__IO_READ,     DEPFS__IO_OP__IO_WRITE,
                                         DEPFS__IO_OP__IO_LOCK,     DEPFS__IO_OP__IO_UNLOCK,
                                         DEPFS__IO_OP__IO_TRUNCATE, DEPFS__IO_OP__IO_REMOVE,
                                         DEPFS__IO_OP__IO_FSYNC,    DEPFS__IO_OP__IO_STAT };
    static const uint16_t write_ops[] = { DEPFS__IO_OP__IO_WRITE, DEPFS__IO_OP__IO_TRUNCATE,
                                          DEPFS__IO_OP__IO_REMOVE, DEPFS__IO_OP__IO_LOCK };
    const size_t n_file_ops = sizeof(file_ops) / sizeof(file_ops[0]);
    uint8_t buf[AUTH_CAP_BYTES];
    Depfs__IoRequest q = DEPFS__IO_REQUEST__INIT;
    auth_random(cap_key, sizeof(cap_key));
    q.file_id = FILE_ID;
    /* no capability: refused to a ticket holder, fine for the key and auth off */
    for (size_t i = 0; i < n_file_ops; i++) {
        ck_assert_int_eq(cap(&client, file_ops[i], &q), -EACCES);
        ck_assert_int_eq(cap(&cluster, file_ops[i], &q), 0);
        ck_assert_int_eq(cap(NULL, file_ops[i], &q), 0);
    }
    q.file_id = 0; /* server usage: names no file */
    ck_assert_int_eq(cap(&client, DEPFS__IO_OP__IO_STAT, &q), 0);
    q.file_id = FILE_ID;
    /* read-write, this file, this client: everything */
    give_cap(&q, buf, FILE_ID, ME, AUTH_CAP_RIGHTS_ALL, CAP_NOW_S + AUTH_CAP_TTL_S);
    for (size_t i = 0; i < n_file_ops; i++)
        ck_assert_int_eq(cap(&client, file_ops[i], &q), 0);
    /* write only covers the reads a write makes */
    give_cap(&q, buf, FILE_ID, ME, AUTH_CAP_WRITE, CAP_NOW_S + AUTH_CAP_TTL_S);
    for (size_t i = 0; i < n_file_ops; i++)
        ck_assert_int_eq(cap(&client, file_ops[i], &q), 0);
    /* read only: reads, fsync, unlock and reading locks; no write of any kind */
    give_cap(&q, buf, FILE_ID, ME, AUTH_CAP_READ, CAP_NOW_S + AUTH_CAP_TTL_S);
    ck_assert_int_eq(cap(&client, DEPFS__IO_OP__IO_READ, &q), 0);
    ck_assert_int_eq(cap(&client, DEPFS__IO_OP__IO_FSYNC, &q), 0);
    ck_assert_int_eq(cap(&client, DEPFS__IO_OP__IO_UNLOCK, &q), 0);
    for (size_t i = 0; i < sizeof(write_ops) / sizeof(write_ops[0]); i++)
        ck_assert_int_eq(cap(&client, write_ops[i], &q), -EACCES);
    Depfs__LockSpec l = DEPFS__LOCK_SPEC__INIT;
    q.lock = &l; /* a pre-read under a writing lock is a write's */
    ck_assert_int_eq(cap(&client, DEPFS__IO_OP__IO_READ, &q), -EACCES);
    l.has_read_only = l.read_only = true; /* a degraded read's lock */
    ck_assert_int_eq(cap(&client, DEPFS__IO_OP__IO_READ, &q), 0);
    ck_assert_int_eq(cap(&client, DEPFS__IO_OP__IO_LOCK, &q), 0);
    q.lock = NULL;
    /* another file's, another client's */
    give_cap(&q, buf, FILE_ID + 1, ME, AUTH_CAP_RIGHTS_ALL, CAP_NOW_S + AUTH_CAP_TTL_S);
    ck_assert_int_eq(cap(&client, DEPFS__IO_OP__IO_READ, &q), -EACCES);
    give_cap(&q, buf, FILE_ID, OTHER, AUTH_CAP_RIGHTS_ALL, CAP_NOW_S + AUTH_CAP_TTL_S);
    ck_assert_int_eq(cap(&client, DEPFS__IO_OP__IO_READ, &q), -EACCES);
    /* expired: within the skew still served, past it refused */
    give_cap(&q, buf, FILE_ID, ME, AUTH_CAP_READ, CAP_NOW_S - AUTH_CAP_SKEW_S + 1);
    ck_assert_int_eq(cap(&client, DEPFS__IO_OP__IO_READ, &q), 0);
    give_cap(&q, buf, FILE_ID, ME, AUTH_CAP_READ, CAP_NOW_S - AUTH_CAP_SKEW_S);
    ck_assert_int_eq(cap(&client, DEPFS__IO_OP__IO_READ, &q), -EACCES);
    /* forged: a bit flipped anywhere; a short one */
    give_cap(&q, buf, FILE_ID, ME, AUTH_CAP_READ, CAP_NOW_S + AUTH_CAP_TTL_S);
    for (unsigned i = 0; i < AUTH_CAP_BYTES; i++) {
        buf[i] ^= 1;
        ck_assert_int_eq(cap(&client, DEPFS__IO_OP__IO_READ, &q), -EACCES);
        buf[i] ^= 1;
    }
    q.capability.len--;
    ck_assert_int_eq(cap(&client, DEPFS__IO_OP__IO_READ, &q), -EACCES);
    q.capability.len++;
    ck_assert_int_eq(cap(&client, DEPFS__IO_OP__IO_READ, &q), 0);
    /* made with another key (the ticket key, say): forged */
    uint8_t good[AUTH_KEY_BYTES];
    memcpy(good, cap_key, sizeof(good));
    auth_random(cap_key, sizeof(cap_key));
    give_cap(&q, buf, FILE_ID, ME, AUTH_CAP_READ, CAP_NOW_S + AUTH_CAP_TTL_S);
    memcpy(cap_key, good, sizeof(good));
    ck_assert_int_eq(cap(&client, DEPFS__IO_OP__IO_READ, &q), -EACCES);
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
    /* the purge queue is drained by key holders only; any client releases */
    const uint16_t admin_ops[] = { DEPFS__MDS_OP__MDS_PURGE_LIST, DEPFS__MDS_OP__MDS_PURGE_DONE };
    for (size_t i = 0; i < sizeof(admin_ops) / sizeof(admin_ops[0]); i++) {
        ck_assert_int_eq(mds_authorize(&user, admin_ops[i], &q, why, sizeof(why)), -EPERM);
        ck_assert_msg(strstr(why, "MDS_PURGE_"), "%s", why);
        ck_assert_int_eq(mds_authorize(&client, admin_ops[i], &q, why, sizeof(why)), -EPERM);
        ck_assert_int_eq(mds_authorize(&cluster, admin_ops[i], &q, why, sizeof(why)), 0);
    }
    ck_assert_int_eq(mds_authorize(&user, DEPFS__MDS_OP__MDS_RELEASE, &q, why, sizeof(why)), 0);
    /* a user opens; only key holders (and auth off) renew a hold without a capability */
    ck_assert_int_eq(mds_authorize(&user, DEPFS__MDS_OP__MDS_OPEN, &q, why, sizeof(why)), 0);
    q.has_renew_hold = q.renew_hold = true;
    ck_assert_int_eq(mds_authorize(&user, DEPFS__MDS_OP__MDS_OPEN, &q, why, sizeof(why)), -EPERM);
    ck_assert_msg(strstr(why, "renew_hold"), "%s", why);
    ck_assert_int_eq(mds_authorize(&client, DEPFS__MDS_OP__MDS_OPEN, &q, why, sizeof(why)), -EPERM);
    ck_assert_int_eq(mds_authorize(&cluster, DEPFS__MDS_OP__MDS_OPEN, &q, why, sizeof(why)), 0);
    ck_assert_int_eq(mds_authorize(NULL, DEPFS__MDS_OP__MDS_OPEN, &q, why, sizeof(why)), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("authz");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_ioserver_rules);
    tcase_add_test(tc, test_ioserver_capabilities);
    tcase_add_test(tc, test_mds_rules);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
