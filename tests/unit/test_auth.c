/* test_auth.c - common/auth.c: the cluster key file's checks, proofs bound
 * to both nonces, frame tags that catch a changed, replayed, reordered or
 * reflected frame, tickets that cannot be forged, stretched or read by
 * anyone but their client, and the BLAKE2b the Python test tools compute. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"

#define ERR_LEN 256
#define FRAME_HDR_LEN 32
#define T_NOW_S 1000000u

static char tmpdir[64];
static char keypath[128];

static void setup(void)
{
    ck_assert_int_eq(auth_init(), 0);
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/depfs-test-auth-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    snprintf(keypath, sizeof(keypath), "%s/cluster.key", tmpdir);
}

static void teardown(void)
{
    unlink(keypath);
    rmdir(tmpdir);
}

static void write_key(size_t len, mode_t mode)
{
    uint8_t buf[2 * AUTH_KEY_BYTES];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)i;
    unlink(keypath);
    int fd = open(keypath, O_WRONLY | O_CREAT | O_EXCL, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
    close(fd);
    ck_assert_int_eq(chmod(keypath, mode), 0);
}

START_TEST(test_key_file_checks)
{
    uint8_t key[AUTH_KEY_BYTES];
    char err[ERR_LEN] = "";
    ck_assert_int_eq(auth_key_load(keypath, key, err, sizeof(err)), -ENOENT);
    write_key(AUTH_KEY_BYTES, 0600);
    ck_assert_int_eq(auth_key_load(keypath, key, err, sizeof(err)), 0);
    ck_assert_uint_eq(key[5], 5);
    write_key(AUTH_KEY_BYTES, 0640);
    ck_assert_int_eq(auth_key_load(keypath, key, err, sizeof(err)), -EPERM);
    ck_assert_msg(strstr(err, "open to others"), "%s", err);
    write_key(AUTH_KEY_BYTES, 0604);
    ck_assert_int_eq(auth_key_load(keypath, key, err, sizeof(err)), -EPERM);
    write_key(AUTH_KEY_BYTES - 1, 0600);
    ck_assert_int_eq(auth_key_load(keypath, key, err, sizeof(err)), -EPERM);
    write_key(AUTH_KEY_BYTES + 1, 0600);
    ck_assert_int_eq(auth_key_load(keypath, key, err, sizeof(err)), -EPERM);
    ck_assert_msg(strstr(err, "regular file of"), "%s", err);
}
END_TEST

START_TEST(test_proofs_bound_to_everything)
{
    uint8_t k1[AUTH_KEY_BYTES], k2[AUTH_KEY_BYTES], cn[AUTH_NONCE_BYTES], sn[AUTH_NONCE_BYTES];
    uint8_t p[AUTH_PROOF_BYTES], q[AUTH_PROOF_BYTES];
    auth_random(k1, sizeof(k1));
    auth_random(k2, sizeof(k2));
    auth_random(cn, sizeof(cn));
    auth_random(sn, sizeof(sn));
    auth_proof(k1, 'C', AUTH_METHOD_KEY, cn, sn, p);
    auth_proof(k1, 'C', AUTH_METHOD_KEY, cn, sn, q);
    ck_assert(auth_equal(p, q, sizeof(p)));
    auth_proof(k1, 'S', AUTH_METHOD_KEY, cn, sn, q); /* a reflected proof */
    ck_assert(!auth_equal(p, q, sizeof(p)));
    auth_proof(k2, 'C', AUTH_METHOD_KEY, cn, sn, q);
    ck_assert(!auth_equal(p, q, sizeof(p)));
    auth_proof(k1, 'C', AUTH_METHOD_TICKET, cn, sn, q);
    ck_assert(!auth_equal(p, q, sizeof(p)));
    sn[0] ^= 1; /* another server nonce: a replayed handshake */
    auth_proof(k1, 'C', AUTH_METHOD_KEY, cn, sn, q);
    ck_assert(!auth_equal(p, q, sizeof(p)));
}
END_TEST

START_TEST(test_frame_tags)
{
    uint8_t k[AUTH_KEY_BYTES], cn[AUTH_NONCE_BYTES], sn[AUTH_NONCE_BYTES];
    uint8_t fh[FRAME_HDR_LEN] = { 1, 2, 3 }, hdr[] = "header bytes", tag[3][AUTH_TAG_BYTES];
    auth_session cl, sv;
    auth_random(k, sizeof(k));
    auth_random(cn, sizeof(cn));
    auth_random(sn, sizeof(sn));
    auth_session_init(&cl, k, false, cn, sn);
    auth_session_init(&sv, k, true, cn, sn);
    ck_assert(auth_equal(cl.key, sv.key, AUTH_KEY_BYTES));

    for (int i = 0; i < 3; i++)
        auth_tag_send(&cl, fh, sizeof(fh), hdr, sizeof(hdr), tag[i]);
    /* out of order (frame 1 before 0) or a replay of 0 after 0: refused */
    ck_assert(!auth_tag_check(&sv, fh, sizeof(fh), hdr, sizeof(hdr), tag[1]));
    ck_assert(auth_tag_check(&sv, fh, sizeof(fh), hdr, sizeof(hdr), tag[0]));
    ck_assert(!auth_tag_check(&sv, fh, sizeof(fh), hdr, sizeof(hdr), tag[0]));
    /* a changed frame header or protobuf header: refused */
    fh[7] ^= 0x40;
    ck_assert(!auth_tag_check(&sv, fh, sizeof(fh), hdr, sizeof(hdr), tag[1]));
    fh[7] ^= 0x40;
    hdr[0] ^= 1;
    ck_assert(!auth_tag_check(&sv, fh, sizeof(fh), hdr, sizeof(hdr), tag[1]));
    hdr[0] ^= 1;
    ck_assert(auth_tag_check(&sv, fh, sizeof(fh), hdr, sizeof(hdr), tag[1]));
    ck_assert(auth_tag_check(&sv, fh, sizeof(fh), hdr, sizeof(hdr), tag[2]));
    ck_assert_uint_eq(sv.recv_seq, 3);

    /* a server frame is not a client frame: reflecting the client's own
     * frame back to it fails */
    uint8_t back[AUTH_TAG_BYTES];
    auth_tag_send(&sv, fh, sizeof(fh), NULL, 0, back);
    ck_assert(auth_tag_check(&cl, fh, sizeof(fh), NULL, 0, back));
    auth_tag_send(&cl, fh, sizeof(fh), NULL, 0, back);
    ck_assert(!auth_tag_check(&cl, fh, sizeof(fh), NULL, 0, back));
}
END_TEST

START_TEST(test_tickets)
{
    uint8_t cluster[AUTH_KEY_BYTES], tk[AUTH_KEY_BYTES], other[AUTH_KEY_BYTES];
    uint8_t t_bytes[AUTH_TICKET_BYTES], secret[AUTH_KEY_BYTES], got_secret[AUTH_KEY_BYTES];
    auth_random(cluster, sizeof(cluster));
    auth_derive(cluster, "ticket", tk);
    auth_derive(cluster, "capability", other);
    ck_assert(!auth_equal(tk, other, AUTH_KEY_BYTES));

    auth_ticket t = { .client_id = 42, .uid = 1001, .gid = 1002, .expires_s = T_NOW_S + 60 };
    auth_ticket_issue(tk, &t, t_bytes, secret);
    auth_ticket got;
    ck_assert_int_eq(auth_ticket_open(tk, t_bytes, sizeof(t_bytes), T_NOW_S, &got, got_secret), 0);
    ck_assert_uint_eq(got.client_id, 42);
    ck_assert_uint_eq(got.uid, 1001);
    ck_assert_uint_eq(got.gid, 1002);
    ck_assert(auth_equal(secret, got_secret, AUTH_KEY_BYTES));
    ck_assert_int_eq(auth_ticket_open(tk, t_bytes, sizeof(t_bytes), T_NOW_S + 60, &got,
                                      got_secret), -EKEYEXPIRED);
    ck_assert_int_eq(auth_ticket_open(other, t_bytes, sizeof(t_bytes), T_NOW_S, &got, got_secret),
                     -EBADMSG);
    ck_assert_int_eq(auth_ticket_open(tk, t_bytes, sizeof(t_bytes) - 1, T_NOW_S, &got,
                                      got_secret), -EBADMSG);
    /* every byte counts: another uid, client id or a later expiry is forged */
    for (unsigned i = 0; i < AUTH_TICKET_BYTES; i++) {
        t_bytes[i] ^= 0x80;
        ck_assert_int_eq(auth_ticket_open(tk, t_bytes, sizeof(t_bytes), T_NOW_S, &got,
                                          got_secret), -EBADMSG);
        t_bytes[i] ^= 0x80;
    }

    /* the secret travels wrapped: only the MDS session's two ends unwrap it */
    uint8_t k[AUTH_KEY_BYTES], cn[AUTH_NONCE_BYTES], sn[AUTH_NONCE_BYTES];
    uint8_t wrapped[AUTH_KEY_BYTES], unwrapped[AUTH_KEY_BYTES];
    auth_session mds, cl, eve;
    auth_random(k, sizeof(k));
    auth_random(cn, sizeof(cn));
    auth_random(sn, sizeof(sn));
    auth_session_init(&mds, k, true, cn, sn);
    auth_session_init(&cl, k, false, cn, sn);
    sn[0] ^= 1;
    auth_session_init(&eve, k, false, cn, sn);
    auth_ticket_wrap(&mds, t_bytes, secret, wrapped);
    ck_assert(!auth_equal(wrapped, secret, AUTH_KEY_BYTES));
    auth_ticket_wrap(&cl, t_bytes, wrapped, unwrapped);
    ck_assert(auth_equal(unwrapped, secret, AUTH_KEY_BYTES));
    auth_ticket_wrap(&eve, t_bytes, wrapped, unwrapped);
    ck_assert(!auth_equal(unwrapped, secret, AUTH_KEY_BYTES));
}
END_TEST

/* tests/integration/authwire.py computes the same MACs with hashlib:
 * blake2b(label NUL + parts, key=K, digest_size=n). A fixed vector ties the
 * two (any change of the construction must change both). */
START_TEST(test_python_compatible_vector)
{
    uint8_t key[AUTH_KEY_BYTES], out[AUTH_TAG_BYTES];
    for (unsigned i = 0; i < AUTH_KEY_BYTES; i++)
        key[i] = (uint8_t)i;
    const void *parts[] = { "abc" };
    size_t lens[] = { 3 };
    auth_mac(key, "depfs test", parts, lens, 1, out, sizeof(out));
    /* python3 -c 'import hashlib; print(hashlib.blake2b(b"depfs test\0abc",
     *   key=bytes(range(32)), digest_size=16).hexdigest())' */
    static const char want[] = "f1b76d75ba5d35680b15ac79732f29ee";
    char hex[2 * AUTH_TAG_BYTES + 1];
    for (unsigned i = 0; i < AUTH_TAG_BYTES; i++)
        snprintf(hex + 2 * i, 3, "%02x", out[i]);
    ck_assert_str_eq(hex, want);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("auth");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_key_file_checks);
    tcase_add_test(tc, test_proofs_bound_to_everything);
    tcase_add_test(tc, test_frame_tags);
    tcase_add_test(tc, test_tickets);
    tcase_add_test(tc, test_python_compatible_vector);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
