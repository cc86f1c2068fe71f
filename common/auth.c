/* auth.c - the keys, proofs, frame tags, tickets and MUNGE calls of auth.h
 * (libsodium for BLAKE2b and randomness, siphash.c for the frame tags,
 * libmunge for credentials). */
#include "auth.h"
#include "frame.h"
#include "siphash.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <munge.h>
#include <netinet/in.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define AUTH_LABEL_PROOF "depfs proof"
#define AUTH_LABEL_SESSION "depfs session"
#define AUTH_LABEL_FRAME_KEY "depfs frame key"
#define AUTH_LABEL_TICKET "depfs ticket"
#define AUTH_LABEL_TICKET_SECRET "depfs ticket secret"
#define AUTH_LABEL_TICKET_WRAP "depfs ticket wrap"
#define AUTH_LABEL_DERIVE "depfs derive"
#define AUTH_LABEL_CAP "depfs capability"
#define AUTH_TICKET_NONCE_BYTES 16u
#define AUTH_TICKET_BODY_BYTES (AUTH_TICKET_BYTES - AUTH_TAG_BYTES)
#define AUTH_MAX_PARTS 8u
#define AUTH_CAP_BODY_BYTES (AUTH_CAP_BYTES - AUTH_TAG_BYTES)
/* where each field of a capability sits (little-endian) */
#define CAP_OFF_FILE 0u
#define CAP_OFF_CLIENT 8u
#define CAP_OFF_EXPIRES 16u
#define CAP_OFF_RIGHTS 24u
#define CAP_OFF_KEY_VERSION 28u
#define CAP_OFF_NONCE 32u

_Static_assert(AUTH_KEY_BYTES >= crypto_generichash_KEYBYTES_MIN &&
                   AUTH_KEY_BYTES <= crypto_generichash_KEYBYTES_MAX,
               "the cluster key is a BLAKE2b key");
_Static_assert(AUTH_TAG_BYTES >= crypto_generichash_BYTES_MIN, "BLAKE2b output bounds");
_Static_assert(AUTH_FRAME_KEY_BYTES == SIPHASH_KEY_BYTES &&
                   AUTH_FRAME_KEY_BYTES >= crypto_generichash_BYTES_MIN,
               "the frame key is a SipHash key, derived by BLAKE2b");
_Static_assert(AUTH_TAG_BYTES == SIPHASH128_BYTES, "a frame tag is one SipHash-128 output");
_Static_assert(AUTH_TAG_BYTES == FRAME_TAG_BYTES, "a frame's tag is an auth tag");
_Static_assert(AUTH_TICKET_BODY_BYTES == 8u + 4u + 4u + 8u + AUTH_TICKET_NONCE_BYTES,
               "ticket layout");
_Static_assert(CAP_OFF_NONCE + AUTH_CAP_NONCE_BYTES == AUTH_CAP_BODY_BYTES, "capability layout");

int auth_init(void)
{
    return sodium_init() < 0 ? -EIO : 0;
}

void auth_random(void *buf, size_t len)
{
    randombytes_buf(buf, len);
}

bool auth_equal(const void *a, const void *b, size_t len)
{
    return sodium_memcmp(a, b, len) == 0;
}

void auth_wipe(void *buf, size_t len)
{
    sodium_memzero(buf, len);
}

int auth_key_load(const char *path, uint8_t key[AUTH_KEY_BYTES], char *err, size_t err_len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        int e = errno;
        snprintf(err, err_len, "cannot open the cluster key %s: %s", path, strerror(e));
        return e == ENOENT ? -ENOENT : e == EACCES ? -EACCES : -EIO;
    }
    struct stat st;
    int rc = -EPERM;
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        snprintf(err, err_len, "cannot stat the cluster key %s: %s", path, strerror(-rc));
    } else if (!S_ISREG(st.st_mode) || st.st_size != (off_t)AUTH_KEY_BYTES) {
        snprintf(err, err_len, "the cluster key %s must be a regular file of %u bytes", path,
                 AUTH_KEY_BYTES);
    } else if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        snprintf(err, err_len, "the cluster key %s is open to others (mode %03o): chmod 600 it",
                 path, (unsigned)(st.st_mode & 0777));
    } else if (st.st_uid != geteuid()) {
        snprintf(err, err_len, "the cluster key %s belongs to uid %u, not to this process's %u",
                 path, (unsigned)st.st_uid, (unsigned)geteuid());
    } else if (read(fd, key, AUTH_KEY_BYTES) != (ssize_t)AUTH_KEY_BYTES) {
        snprintf(err, err_len, "cannot read the cluster key %s", path);
        rc = -EIO;
    } else {
        rc = 0;
    }
    close(fd);
    return rc;
}

void auth_mac(const uint8_t key[AUTH_KEY_BYTES], const char *label, const void *const *parts,
              const size_t *lens, unsigned nparts, uint8_t *out, size_t out_len)
{
    crypto_generichash_state st;
    assert(out_len >= crypto_generichash_BYTES_MIN && out_len <= crypto_generichash_BYTES_MAX);
    crypto_generichash_init(&st, key, AUTH_KEY_BYTES, out_len);
    crypto_generichash_update(&st, (const unsigned char *)label, strlen(label) + 1);
    for (unsigned i = 0; i < nparts; i++)
        crypto_generichash_update(&st, parts[i], lens[i]);
    crypto_generichash_final(&st, out, out_len);
}

void auth_derive(const uint8_t key[AUTH_KEY_BYTES], const char *label,
                 uint8_t out[AUTH_KEY_BYTES])
{
    const void *parts[] = { label };
    size_t lens[] = { strlen(label) };
    auth_mac(key, AUTH_LABEL_DERIVE, parts, lens, 1, out, AUTH_KEY_BYTES);
}

/* ---------------------------------------------------------- handshake */
void auth_proof(const uint8_t secret[AUTH_KEY_BYTES], char side, auth_method method,
                const uint8_t cn[AUTH_NONCE_BYTES], const uint8_t sn[AUTH_NONCE_BYTES],
                uint8_t out[AUTH_PROOF_BYTES])
{
    uint8_t m = (uint8_t)method;
    const void *parts[] = { &side, &m, cn, sn };
    size_t lens[] = { 1, 1, AUTH_NONCE_BYTES, AUTH_NONCE_BYTES };
    auth_mac(secret, AUTH_LABEL_PROOF, parts, lens, 4, out, AUTH_PROOF_BYTES);
}

void auth_session_init(auth_session *s, const uint8_t secret[AUTH_KEY_BYTES], bool is_server,
                       const uint8_t cn[AUTH_NONCE_BYTES], const uint8_t sn[AUTH_NONCE_BYTES])
{
    const void *parts[] = { cn, sn };
    size_t lens[] = { AUTH_NONCE_BYTES, AUTH_NONCE_BYTES };
    memset(s, 0, sizeof(*s));
    auth_mac(secret, AUTH_LABEL_SESSION, parts, lens, 2, s->key, AUTH_KEY_BYTES);
    auth_mac(s->key, AUTH_LABEL_FRAME_KEY, NULL, NULL, 0, s->frame_key, AUTH_FRAME_KEY_BYTES);
    s->is_server = is_server;
}

static void put_le64(uint8_t *p, uint64_t v)
{
    for (unsigned i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (unsigned i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p)
{
    uint32_t v = 0;
    for (unsigned i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static void frame_tag(const auth_session *s, bool from_server, uint64_t seq,
                      const uint8_t *frame_hdr, size_t frame_hdr_len, const uint8_t *hdr,
                      size_t hdr_len, uint8_t tag[AUTH_TAG_BYTES])
{
    uint8_t dir = from_server ? 'S' : 'C', seqb[8];
    siphash128_state st;
    put_le64(seqb, seq);
    siphash128_init(&st, s->frame_key);
    siphash128_update(&st, &dir, 1);
    siphash128_update(&st, seqb, sizeof(seqb));
    siphash128_update(&st, frame_hdr, frame_hdr_len);
    if (hdr != NULL)
        siphash128_update(&st, hdr, hdr_len);
    siphash128_final(&st, tag);
    auth_wipe(&st, sizeof(st));
}

void auth_tag_send(auth_session *s, const uint8_t *frame_hdr, size_t frame_hdr_len,
                   const uint8_t *hdr, size_t hdr_len, uint8_t tag[AUTH_TAG_BYTES])
{
    frame_tag(s, s->is_server, s->send_seq++, frame_hdr, frame_hdr_len, hdr, hdr_len, tag);
}

bool auth_tag_check(auth_session *s, const uint8_t *frame_hdr, size_t frame_hdr_len,
                    const uint8_t *hdr, size_t hdr_len, const uint8_t tag[AUTH_TAG_BYTES])
{
    uint8_t want[AUTH_TAG_BYTES];
    frame_tag(s, !s->is_server, s->recv_seq, frame_hdr, frame_hdr_len, hdr, hdr_len, want);
    if (!auth_equal(want, tag, AUTH_TAG_BYTES))
        return false;
    s->recv_seq++;
    return true;
}

/* ---------------------------------------------------------- tickets */
static void ticket_tag(const uint8_t key[AUTH_KEY_BYTES], const uint8_t *body,
                       uint8_t tag[AUTH_TAG_BYTES])
{
    const void *parts[] = { body };
    size_t lens[] = { AUTH_TICKET_BODY_BYTES };
    auth_mac(key, AUTH_LABEL_TICKET, parts, lens, 1, tag, AUTH_TAG_BYTES);
}

static void ticket_secret(const uint8_t key[AUTH_KEY_BYTES], const uint8_t *body,
                          uint8_t secret[AUTH_KEY_BYTES])
{
    const void *parts[] = { body };
    size_t lens[] = { AUTH_TICKET_BODY_BYTES };
    auth_mac(key, AUTH_LABEL_TICKET_SECRET, parts, lens, 1, secret, AUTH_KEY_BYTES);
}

void auth_ticket_issue(const uint8_t ticket_key[AUTH_KEY_BYTES], const auth_ticket *t,
                       uint8_t out[AUTH_TICKET_BYTES], uint8_t secret[AUTH_KEY_BYTES])
{
    put_le64(out, t->client_id);
    put_le32(out + 8, t->uid);
    put_le32(out + 12, t->gid);
    put_le64(out + 16, t->expires_s);
    auth_random(out + 24, AUTH_TICKET_NONCE_BYTES);
    ticket_tag(ticket_key, out, out + AUTH_TICKET_BODY_BYTES);
    ticket_secret(ticket_key, out, secret);
}

int auth_ticket_open(const uint8_t ticket_key[AUTH_KEY_BYTES], const uint8_t *in, size_t len,
                     uint64_t now_s, auth_ticket *t, uint8_t secret[AUTH_KEY_BYTES])
{
    uint8_t tag[AUTH_TAG_BYTES];
    if (len != AUTH_TICKET_BYTES)
        return -EBADMSG;
    ticket_tag(ticket_key, in, tag);
    if (!auth_equal(tag, in + AUTH_TICKET_BODY_BYTES, AUTH_TAG_BYTES))
        return -EBADMSG;
    t->client_id = get_le64(in);
    t->uid = get_le32(in + 8);
    t->gid = get_le32(in + 12);
    t->expires_s = get_le64(in + 16);
    if (now_s >= t->expires_s)
        return -EKEYEXPIRED;
    ticket_secret(ticket_key, in, secret);
    return 0;
}

void auth_ticket_wrap(const auth_session *mds_session, const uint8_t ticket[AUTH_TICKET_BYTES],
                      const uint8_t in[AUTH_KEY_BYTES], uint8_t out[AUTH_KEY_BYTES])
{
    uint8_t pad[AUTH_KEY_BYTES];
    const void *parts[] = { ticket };
    size_t lens[] = { AUTH_TICKET_BYTES };
    auth_mac(mds_session->key, AUTH_LABEL_TICKET_WRAP, parts, lens, 1, pad, sizeof(pad));
    for (unsigned i = 0; i < AUTH_KEY_BYTES; i++)
        out[i] = in[i] ^ pad[i];
    auth_wipe(pad, sizeof(pad));
}

/* ---------------------------------------------------------- capabilities */
static void cap_tag(const uint8_t key[AUTH_KEY_BYTES], const uint8_t *body,
                    uint8_t tag[AUTH_TAG_BYTES])
{
    const void *parts[] = { body };
    size_t lens[] = { AUTH_CAP_BODY_BYTES };
    auth_mac(key, AUTH_LABEL_CAP, parts, lens, 1, tag, AUTH_TAG_BYTES);
}

void auth_cap_issue(const uint8_t cap_key[AUTH_KEY_BYTES], const auth_cap *c,
                    uint8_t out[AUTH_CAP_BYTES])
{
    assert(c->rights != 0 && (c->rights & ~AUTH_CAP_RIGHTS_ALL) == 0);
    put_le64(out + CAP_OFF_FILE, c->file_id);
    put_le64(out + CAP_OFF_CLIENT, c->client_id);
    put_le64(out + CAP_OFF_EXPIRES, c->expires_s);
    put_le32(out + CAP_OFF_RIGHTS, c->rights);
    put_le32(out + CAP_OFF_KEY_VERSION, AUTH_CAP_KEY_VERSION);
    auth_random(out + CAP_OFF_NONCE, AUTH_CAP_NONCE_BYTES);
    cap_tag(cap_key, out, out + AUTH_CAP_BODY_BYTES);
}

int auth_cap_peek(const uint8_t *in, size_t len, auth_cap *c)
{
    if (len != AUTH_CAP_BYTES)
        return -EBADMSG;
    c->file_id = get_le64(in + CAP_OFF_FILE);
    c->client_id = get_le64(in + CAP_OFF_CLIENT);
    c->expires_s = get_le64(in + CAP_OFF_EXPIRES);
    c->rights = get_le32(in + CAP_OFF_RIGHTS);
    return 0;
}

int auth_cap_open(const uint8_t cap_key[AUTH_KEY_BYTES], const uint8_t *in, size_t len,
                  uint64_t now_s, uint64_t skew_s, auth_cap *c)
{
    uint8_t tag[AUTH_TAG_BYTES];
    if (len != AUTH_CAP_BYTES)
        return -EBADMSG;
    cap_tag(cap_key, in, tag);
    if (!auth_equal(tag, in + AUTH_CAP_BODY_BYTES, AUTH_TAG_BYTES))
        return -EBADMSG;
    (void)auth_cap_peek(in, len, c);
    if (get_le32(in + CAP_OFF_KEY_VERSION) != AUTH_CAP_KEY_VERSION || c->rights == 0 ||
        (c->rights & ~AUTH_CAP_RIGHTS_ALL) != 0)
        return -EBADMSG;
    if (now_s >= c->expires_s && now_s - c->expires_s >= skew_s)
        return -EKEYEXPIRED;
    return 0;
}

bool auth_cap_covers(uint32_t rights, uint32_t need)
{
    if (need & AUTH_CAP_WRITE)
        return (rights & AUTH_CAP_WRITE) != 0;
    if (need & AUTH_CAP_READ)
        return (rights & AUTH_CAP_RIGHTS_ALL) != 0;
    return true;
}

/* ---------------------------------------------------------- MUNGE */
static munge_ctx_t munge_ctx_for(const char *socket, char *err, size_t err_len)
{
    munge_ctx_t ctx = munge_ctx_create();
    if (!ctx) {
        snprintf(err, err_len, "out of memory for a MUNGE context");
        return NULL;
    }
    if (socket && munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket) != EMUNGE_SUCCESS) {
        snprintf(err, err_len, "MUNGE socket %s: %s", socket, munge_ctx_strerror(ctx));
        munge_ctx_destroy(ctx);
        return NULL;
    }
    return ctx;
}

int auth_munge_encode(const char *socket, const void *payload, size_t len, char **cred,
                      char *err, size_t err_len)
{
    munge_ctx_t ctx = munge_ctx_for(socket, err, err_len);
    if (!ctx)
        return -ENOMEM;
    *cred = NULL;
    munge_err_t e = munge_encode(cred, ctx, payload, (int)len);
    int rc = 0;
    if (e != EMUNGE_SUCCESS) {
        snprintf(err, err_len, "cannot get a MUNGE credential%s%s: %s", socket ? " from " : "",
                 socket ? socket : "", munge_ctx_strerror(ctx));
        free(*cred);
        *cred = NULL;
        rc = e == EMUNGE_SOCKET ? -ECONNREFUSED : -EACCES;
    }
    munge_ctx_destroy(ctx);
    return rc;
}

int auth_munge_decode(const char *socket, const char *cred, void *payload, size_t want_len,
                      uint32_t *uid, uint32_t *gid, uint32_t *origin_ipv4, char *err,
                      size_t err_len)
{
    munge_ctx_t ctx = munge_ctx_for(socket, err, err_len);
    if (!ctx)
        return -ENOMEM;
    void *buf = NULL;
    int len = 0;
    uid_t u = (uid_t)-1;
    gid_t g = (gid_t)-1;
    int rc = 0;
    munge_err_t e = munge_decode(cred, ctx, &buf, &len, &u, &g);
    if (e != EMUNGE_SUCCESS) {
        snprintf(err, err_len, "MUNGE credential refused: %s", munge_ctx_strerror(ctx));
        rc = e == EMUNGE_SOCKET ? -ECONNREFUSED : -EACCES;
    } else if (len < 0 || (size_t)len != want_len) {
        snprintf(err, err_len, "MUNGE credential carries %d bytes, not the %zu expected", len,
                 want_len);
        rc = -EACCES;
    } else {
        struct in_addr addr = { 0 };
        memcpy(payload, buf, want_len);
        *uid = (uint32_t)u;
        *gid = (uint32_t)g;
        *origin_ipv4 = munge_ctx_get(ctx, MUNGE_OPT_ADDR4, &addr) == EMUNGE_SUCCESS
                           ? addr.s_addr : 0;
    }
    if (buf) {
        auth_wipe(buf, len > 0 ? (size_t)len : 0);
        free(buf);
    }
    munge_ctx_destroy(ctx);
    return rc;
}
