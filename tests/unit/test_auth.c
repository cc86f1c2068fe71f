/* test_auth.c - common/auth.c: the cluster key file's checks, proofs bound
 * to both nonces, frame tags that catch a changed, replayed, reordered or
 * reflected frame, tickets that cannot be forged, stretched or read by
 * anyone but their client, capabilities that cannot be forged, stretched,
 * moved to another file or client or raised to more rights, and the BLAKE2b the Python test tools compute;
 * common/rpc_auth.c: the handshake over loopback TCP with the right and a
 * wrong key, good, forged and expired tickets, and methods not accepted.
 * (MUNGE needs a munged: the integration tests run one.) */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "auth.pb-c.h"
#include "rpc_auth.h"
#include "transport.h"

#define ERR_LEN 256
#define FRAME_HDR_LEN 32
#define T_NOW_S 1000000u
#define HS_TIMEOUT_MS 5000u
#define CONNECT_TIMEOUT_MS 2000
#define TICKET_LIFE_S 60u

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

/* Capabilities: what was issued reads back; a byte changed anywhere, the
 * ticket key, a short buffer or an old expiry are refused; the skew is
 * honoured exactly; the fields say which file, client and rights, so a
 * caller refuses another file or client and rights never grow. */
START_TEST(test_capabilities)
{
    uint8_t cluster[AUTH_KEY_BYTES], ck[AUTH_KEY_BYTES], tk[AUTH_KEY_BYTES];
    uint8_t c_bytes[AUTH_CAP_BYTES];
    auth_random(cluster, sizeof(cluster));
    auth_derive(cluster, AUTH_DERIVE_CAPABILITY, ck);
    auth_derive(cluster, AUTH_DERIVE_TICKET, tk);
    ck_assert(!auth_equal(ck, tk, AUTH_KEY_BYTES));

    auth_cap c = { .file_id = 77, .client_id = 42, .expires_s = T_NOW_S + AUTH_CAP_TTL_S,
                   .rights = AUTH_CAP_READ };
    auth_cap got;
    auth_cap_issue(ck, &c, c_bytes);
    ck_assert_int_eq(auth_cap_open(ck, c_bytes, sizeof(c_bytes), T_NOW_S, 0, &got), 0);
    ck_assert_uint_eq(got.file_id, 77);
    ck_assert_uint_eq(got.client_id, 42);
    ck_assert_uint_eq(got.expires_s, T_NOW_S + AUTH_CAP_TTL_S);
    ck_assert_uint_eq(got.rights, AUTH_CAP_READ);
    ck_assert_int_eq(auth_cap_peek(c_bytes, sizeof(c_bytes), &got), 0);
    ck_assert_uint_eq(got.file_id, 77);
    /* two issues of one capability differ (the nonce) and both open */
    uint8_t again[AUTH_CAP_BYTES];
    auth_cap_issue(ck, &c, again);
    ck_assert(!auth_equal(again, c_bytes, AUTH_CAP_BYTES));
    ck_assert_int_eq(auth_cap_open(ck, again, sizeof(again), T_NOW_S, 0, &got), 0);
    /* expired: at its expiry without skew, and only past the skew with it */
    uint64_t exp = c.expires_s;
    ck_assert_int_eq(auth_cap_open(ck, c_bytes, sizeof(c_bytes), exp, 0, &got), -EKEYEXPIRED);
    ck_assert_int_eq(auth_cap_open(ck, c_bytes, sizeof(c_bytes), exp + AUTH_CAP_SKEW_S - 1,
                                   AUTH_CAP_SKEW_S, &got), 0);
    ck_assert_int_eq(auth_cap_open(ck, c_bytes, sizeof(c_bytes), exp + AUTH_CAP_SKEW_S,
                                   AUTH_CAP_SKEW_S, &got), -EKEYEXPIRED);
    ck_assert_int_eq(auth_cap_open(ck, c_bytes, sizeof(c_bytes), UINT64_MAX, AUTH_CAP_SKEW_S,
                                   &got), -EKEYEXPIRED);
    /* not ours: the ticket key, a truncated or a longer buffer */
    ck_assert_int_eq(auth_cap_open(tk, c_bytes, sizeof(c_bytes), T_NOW_S, 0, &got), -EBADMSG);
    ck_assert_int_eq(auth_cap_open(ck, c_bytes, sizeof(c_bytes) - 1, T_NOW_S, 0, &got),
                     -EBADMSG);
    ck_assert_int_eq(auth_cap_peek(c_bytes, sizeof(c_bytes) + 1, &got), -EBADMSG);
    /* forged: every bit of every byte counts (another file, client, rights,
     * a later expiry, another key version, the nonce, the tag) */
    for (unsigned i = 0; i < AUTH_CAP_BYTES; i++) {
        for (unsigned bit = 0; bit < 8; bit++) {
            c_bytes[i] ^= (uint8_t)(1u << bit);
            ck_assert_int_eq(auth_cap_open(ck, c_bytes, sizeof(c_bytes), T_NOW_S, 0, &got),
                             -EBADMSG);
            c_bytes[i] ^= (uint8_t)(1u << bit);
        }
    }
    /* a tagged capability says its file and client: the checker compares */
    auth_cap other = c;
    other.file_id = 78;
    other.client_id = 43;
    auth_cap_issue(ck, &other, again);
    ck_assert_int_eq(auth_cap_open(ck, again, sizeof(again), T_NOW_S, 0, &got), 0);
    ck_assert_uint_ne(got.file_id, c.file_id);
    ck_assert_uint_ne(got.client_id, c.client_id);
    /* rights: read never covers write; write covers the reads a write makes */
    ck_assert(auth_cap_covers(AUTH_CAP_READ, AUTH_CAP_READ));
    ck_assert(!auth_cap_covers(AUTH_CAP_READ, AUTH_CAP_WRITE));
    ck_assert(!auth_cap_covers(AUTH_CAP_READ, AUTH_CAP_RIGHTS_ALL));
    ck_assert(auth_cap_covers(AUTH_CAP_WRITE, AUTH_CAP_READ));
    ck_assert(auth_cap_covers(AUTH_CAP_RIGHTS_ALL, AUTH_CAP_WRITE));
    ck_assert(!auth_cap_covers(0, AUTH_CAP_READ));
    ck_assert(auth_cap_covers(0, 0));
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

/* ------------------------------------------------------------ handshake */
typedef struct served {
    xport_listener *l;
    rpc_auth_server cfg;
    int rc;
    auth_session sess;
    auth_identity who;
    char err[ERR_LEN];
} served;

static void *serve_main(void *arg)
{
    served *sv = arg;
    xport *x = NULL;
    uint8_t raw[FRAME_HEADER_BYTES];
    frame_header fh;
    const char *why = NULL;
    sv->rc = xport_accept(sv->l, &x);
    if (sv->rc == 0 && (sv->rc = x->ops->recv_all(x, raw, sizeof(raw))) == 0 &&
        (sv->rc = frame_decode(raw, NULL, &fh, &why)) == 0)
        sv->rc = rpc_auth_serve(x, &sv->cfg, &fh, HS_TIMEOUT_MS, &sv->sess, &sv->who, sv->err,
                                sizeof(sv->err));
    if (x)
        x->ops->close(x);
    return NULL;
}

/* One handshake of cr against a server accepting cfg: the client's result;
 * the server's in *sv. */
static int handshake(const rpc_auth_creds *cr, served *sv, auth_session *cs, auth_role *role,
                     char *err)
{
    pthread_t th;
    char addr[64];
    xport *x = NULL;
    ck_assert_int_eq(xport_listen("tcp", "127.0.0.1:0", &sv->l), 0);
    ck_assert_int_eq(pthread_create(&th, NULL, serve_main, sv), 0);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", xport_listener_port(sv->l));
    ck_assert_int_eq(xport_connect("tcp", addr, CONNECT_TIMEOUT_MS, &x), 0);
    int rc = rpc_auth_connect(x, cr, HS_TIMEOUT_MS, cs, role, err, ERR_LEN);
    x->ops->close(x);
    pthread_join(th, NULL);
    xport_listener_close(sv->l);
    return rc;
}

static void server_cfg(rpc_auth_server *cfg, const uint8_t cluster[AUTH_KEY_BYTES])
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->required = cfg->accept_key = cfg->accept_ticket = true;
    auth_derive(cluster, AUTH_DERIVE_PEER, cfg->peer_key);
    auth_derive(cluster, AUTH_DERIVE_TICKET, cfg->ticket_key);
}

START_TEST(test_handshake_key)
{
    uint8_t cluster[AUTH_KEY_BYTES], other[AUTH_KEY_BYTES];
    auth_random(cluster, sizeof(cluster));
    auth_random(other, sizeof(other));
    served sv = { 0 };
    server_cfg(&sv.cfg, cluster);
    rpc_auth_creds cr = { .method = AUTH_METHOD_KEY };
    auth_derive(cluster, AUTH_DERIVE_PEER, cr.secret);
    auth_session cs;
    auth_role role = AUTH_ROLE_NONE;
    char err[ERR_LEN];
    ck_assert_int_eq(handshake(&cr, &sv, &cs, &role, err), 0);
    ck_assert_int_eq(sv.rc, 0);
    ck_assert_int_eq(role, AUTH_ROLE_CLUSTER);
    ck_assert_int_eq(sv.who.role, AUTH_ROLE_CLUSTER);
    ck_assert(auth_equal(cs.key, sv.sess.key, AUTH_KEY_BYTES));
    ck_assert(!auth_equal(cs.key, cr.secret, AUTH_KEY_BYTES)); /* a fresh key per session */

    /* another cluster's key: the client finds the server cannot prove it
     * holds its secret and stops; the server sees no proof */
    auth_derive(other, AUTH_DERIVE_PEER, cr.secret);
    memset(&sv, 0, sizeof(sv));
    server_cfg(&sv.cfg, cluster);
    ck_assert_int_eq(handshake(&cr, &sv, &cs, &role, err), -EACCES);
    ck_assert_msg(strstr(err, "does not hold the secret"), "%s", err);
    ck_assert_int_lt(sv.rc, 0);

    /* a server that takes no keys (the MDS's users' port would) refuses */
    auth_derive(cluster, AUTH_DERIVE_PEER, cr.secret);
    memset(&sv, 0, sizeof(sv));
    server_cfg(&sv.cfg, cluster);
    sv.cfg.accept_key = false;
    ck_assert_int_eq(handshake(&cr, &sv, &cs, &role, err), -EACCES);
    ck_assert_msg(strstr(err, "not accepted"), "%s", err);
    ck_assert_int_eq(sv.rc, -EACCES);
}
END_TEST

START_TEST(test_handshake_ticket)
{
    uint8_t cluster[AUTH_KEY_BYTES], tk[AUTH_KEY_BYTES];
    auth_random(cluster, sizeof(cluster));
    auth_derive(cluster, AUTH_DERIVE_TICKET, tk);
    auth_ticket t = { .client_id = 7, .uid = 1001, .gid = 100,
                      .expires_s = (uint64_t)time(NULL) + TICKET_LIFE_S };
    rpc_auth_creds cr = { .method = AUTH_METHOD_TICKET };
    auth_ticket_issue(tk, &t, cr.ticket, cr.secret);
    served sv = { 0 };
    server_cfg(&sv.cfg, cluster);
    auth_session cs;
    auth_role role;
    char err[ERR_LEN];
    ck_assert_int_eq(handshake(&cr, &sv, &cs, &role, err), 0);
    ck_assert_int_eq(sv.who.role, AUTH_ROLE_CLIENT);
    ck_assert_uint_eq(sv.who.client_id, 7);
    ck_assert_uint_eq(sv.who.uid, 1001);

    /* a ticket made up for client 8 (no MDS key): refused */
    rpc_auth_creds forged = cr;
    forged.ticket[0] = 8;
    memset(&sv, 0, sizeof(sv));
    server_cfg(&sv.cfg, cluster);
    ck_assert_int_eq(handshake(&forged, &sv, &cs, &role, err), -EACCES);
    ck_assert_msg(strstr(err, "forged"), "%s", err);
    /* someone else's ticket without its secret: the proof fails */
    rpc_auth_creds stolen = cr;
    auth_random(stolen.secret, sizeof(stolen.secret));
    memset(&sv, 0, sizeof(sv));
    server_cfg(&sv.cfg, cluster);
    ck_assert_int_eq(handshake(&stolen, &sv, &cs, &role, err), -EACCES);
    ck_assert_int_lt(sv.rc, 0);
    /* an expired ticket: refused, saying so */
    t.expires_s = (uint64_t)time(NULL) - 1;
    auth_ticket_issue(tk, &t, cr.ticket, cr.secret);
    memset(&sv, 0, sizeof(sv));
    server_cfg(&sv.cfg, cluster);
    ck_assert_int_eq(handshake(&cr, &sv, &cs, &role, err), -EACCES);
    ck_assert_msg(strstr(err, "expired"), "%s", err);
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
    tcase_add_test(tc, test_capabilities);
    tcase_add_test(tc, test_python_compatible_vector);
    tcase_add_test(tc, test_handshake_key);
    tcase_add_test(tc, test_handshake_ticket);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
