/* auth.h - who is at the other end of a connection, and the keys that
 * prove it (the rpc layer runs the handshake; see rpc.h).
 *
 * Three ways in, one per kind of peer:
 *   - AUTH_METHOD_KEY: the cluster key (a file of AUTH_KEY_BYTES random
 *     bytes, mode 0600, on server and admin nodes only). Daemons talking to
 *     each other, and admin tools run by root there. Role AUTH_ROLE_CLUSTER.
 *   - AUTH_METHOD_MUNGE: a MUNGE credential (Slurm's way: munged vouches
 *     for the uid/gid of the process that asked for it) carrying a fresh
 *     random secret; only to the MDS. Role AUTH_ROLE_USER.
 *   - AUTH_METHOD_TICKET: a ticket the MDS issued to a registered client
 *     (client id, uid, gid, expiry; tagged with a key derived from the
 *     cluster key) and the ticket's secret, which the client got wrapped
 *     under its MDS session; only to the I/O servers. Role AUTH_ROLE_CLIENT.
 *
 * A ticket says who a client is, not what it may touch: for that the MDS
 * gives a capability with each open it allows (file id, rights, client
 * id, expiry; tagged with another derived key), which the client sends
 * with every I/O request on that file and the I/O servers check
 * (ioserver/authz.c) without asking the MDS.
 *
 * Each proves a secret K without sending it: both sides send a nonce and
 * each shows MAC_K(transcript) (auth_proof), so a replayed handshake fails
 * and the client knows it reached a real server. The session key derived
 * from K and both nonces then tags every frame (auth_tag_send): header
 * fields and the protobuf header, with a per-direction sequence number, so
 * frames cannot be changed, dropped, reordered or replayed unnoticed. The
 * bulk is covered only through the frame header's CRC32C (and the units'
 * block checksums): an attacker on the wire could change bulk bytes; nothing
 * is encrypted.
 *
 * MACs and key derivation are keyed BLAKE2b (libsodium's generichash; the
 * same function as Python's hashlib.blake2b(key=...), which the tests use).
 * The frame tags, paid twice per request on each side, are SipHash-2-4 with
 * a 128-bit output (common/siphash.h) under a 16-byte key derived from the
 * session key: a PRF built for short inputs, several times cheaper than a
 * keyed BLAKE2b on a header of a few hundred bytes (docs/BENCH-RESULTS.md),
 * with the same 128-bit tag; tests/integration/authwire.py has it in pure
 * Python. */
#ifndef DEPFS_AUTH_H
#define DEPFS_AUTH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AUTH_KEY_BYTES 32u     /* cluster key, secrets, session keys */
#define AUTH_NONCE_BYTES 32u
#define AUTH_PROOF_BYTES 32u
#define AUTH_TAG_BYTES 16u     /* per frame, ticket, capability */
#define AUTH_FRAME_KEY_BYTES 16u /* a session's SipHash key */
#define AUTH_MUNGE_CRED_MAX 4096u /* a credential's text, as the wire bounds it */
#define AUTH_TICKET_TTL_S 3600u   /* a ticket's life; clients renew before */

typedef enum auth_method {
    AUTH_METHOD_KEY = 1,
    AUTH_METHOD_MUNGE = 2,
    AUTH_METHOD_TICKET = 3,
} auth_method;

typedef enum auth_role {
    AUTH_ROLE_NONE = 0,    /* not authenticated */
    AUTH_ROLE_CLUSTER = 1, /* holds the cluster key: daemons, admins */
    AUTH_ROLE_USER = 2,    /* a MUNGE-proven uid/gid (at the MDS) */
    AUTH_ROLE_CLIENT = 3,  /* a ticket holder (at the I/O servers) */
} auth_role;

/* What the server knows of a connection's peer once authenticated. */
typedef struct auth_identity {
    auth_role role;
    uint32_t uid, gid;      /* USER, CLIENT; 0 for CLUSTER */
    uint64_t client_id;     /* CLIENT: the ticket's; 0 otherwise */
    uint32_t origin_ipv4;   /* USER: the host MUNGE says made the credential
                             * (network byte order; 0 unknown) */
} auth_identity;

/* Random bytes from the kernel's generator (never fails once auth_init ran). */
int auth_init(void);
void auth_random(void *buf, size_t len);
/* Constant-time comparison. */
bool auth_equal(const void *a, const void *b, size_t len);
/* Zeroes a secret so the compiler keeps the store. */
void auth_wipe(void *buf, size_t len);

/* Reads the cluster key. Refuses (-EPERM, reason in err) a file that is not
 * a regular file of exactly AUTH_KEY_BYTES, or that others than its owner
 * can read or write, or that another user owns. -ENOENT when missing,
 * -EACCES when this process may not read it (a user on a node with the
 * key: MUNGE is its way in). */
int auth_key_load(const char *path, uint8_t key[AUTH_KEY_BYTES], char *err, size_t err_len);

/* Keyed BLAKE2b of label (NUL included, so labels cannot run into data)
 * followed by the parts: out_len in 16..64. */
void auth_mac(const uint8_t key[AUTH_KEY_BYTES], const char *label, const void *const *parts,
              const size_t *lens, unsigned nparts, uint8_t *out, size_t out_len);
/* A sub-key of key for one purpose (label), so one cluster key serves the
 * handshakes, the tickets and the capabilities without crossing them. */
void auth_derive(const uint8_t key[AUTH_KEY_BYTES], const char *label,
                 uint8_t out[AUTH_KEY_BYTES]);

/* ---------------------------------------------------------- handshake */
/* The proof that side 'C' (client) or 'S' (server) holds secret, bound to
 * the method and both nonces. */
void auth_proof(const uint8_t secret[AUTH_KEY_BYTES], char side, auth_method method,
                const uint8_t cn[AUTH_NONCE_BYTES], const uint8_t sn[AUTH_NONCE_BYTES],
                uint8_t out[AUTH_PROOF_BYTES]);

/* A connection's frame-tagging state once the handshake is done. */
typedef struct auth_session {
    uint8_t key[AUTH_KEY_BYTES];             /* the session key */
    uint8_t frame_key[AUTH_FRAME_KEY_BYTES]; /* derived from key: frame tags */
    bool is_server;
    uint64_t send_seq, recv_seq; /* frames sent / received since the handshake */
} auth_session;

void auth_session_init(auth_session *s, const uint8_t secret[AUTH_KEY_BYTES], bool is_server,
                       const uint8_t cn[AUTH_NONCE_BYTES], const uint8_t sn[AUTH_NONCE_BYTES]);
/* The tag of the next frame this side sends (advances send_seq), or checks
 * the tag of the next frame received (advances recv_seq only when right). */
void auth_tag_send(auth_session *s, const uint8_t *frame_hdr, size_t frame_hdr_len,
                   const uint8_t *hdr, size_t hdr_len, uint8_t tag[AUTH_TAG_BYTES]);
bool auth_tag_check(auth_session *s, const uint8_t *frame_hdr, size_t frame_hdr_len,
                    const uint8_t *hdr, size_t hdr_len, const uint8_t tag[AUTH_TAG_BYTES]);

/* ---------------------------------------------------------- tickets */
#define AUTH_TICKET_BYTES (8u + 4u + 4u + 8u + 16u + AUTH_TAG_BYTES)

typedef struct auth_ticket {
    uint64_t client_id;
    uint32_t uid, gid;
    uint64_t expires_s; /* wall clock, seconds since the epoch */
} auth_ticket;

/* Encodes t with a fresh nonce and its tag (ticket_key: auth_derive of the
 * cluster key, "ticket"); *secret is what the holder proves it knows. */
void auth_ticket_issue(const uint8_t ticket_key[AUTH_KEY_BYTES], const auth_ticket *t,
                       uint8_t out[AUTH_TICKET_BYTES], uint8_t secret[AUTH_KEY_BYTES]);
/* 0 and *t, *secret; -EBADMSG (wrong length or tag: forged or not ours) or
 * -EKEYEXPIRED (past its expiry at now_s). */
int auth_ticket_open(const uint8_t ticket_key[AUTH_KEY_BYTES], const uint8_t *in, size_t len,
                     uint64_t now_s, auth_ticket *t, uint8_t secret[AUTH_KEY_BYTES]);
/* The ticket's secret travels to its client XORed with a pad only the two
 * ends of that client's MDS session can make (the same call wraps and
 * unwraps). */
void auth_ticket_wrap(const auth_session *mds_session, const uint8_t ticket[AUTH_TICKET_BYTES],
                      const uint8_t in[AUTH_KEY_BYTES], uint8_t out[AUTH_KEY_BYTES]);

/* ---------------------------------------------------------- capabilities */
/* What a capability lets its client do to one file's strip files at the
 * I/O servers (common/io_caps.h says which ops need which). WRITE covers
 * the reads a write makes (read-modify-write pre-reads its units), so a
 * write-only open can read the units; READ never writes. */
#define AUTH_CAP_READ 1u
#define AUTH_CAP_WRITE 2u
#define AUTH_CAP_RIGHTS_ALL (AUTH_CAP_READ | AUTH_CAP_WRITE)
#define AUTH_CAP_TTL_S 600u       /* a capability's life; renewed at half life */
#define AUTH_CAP_SKEW_S 30u       /* the I/O servers accept one this long past its
                                   * expiry: the MDS's clock may run ahead */
#define AUTH_CAP_KEY_VERSION 1u   /* of the capability key: a new cluster key
                                   * bumps nothing, a new derivation would */
#define AUTH_CAP_NONCE_BYTES 8u
/* file id, client id, expiry, rights, key version, nonce, tag */
#define AUTH_CAP_BYTES (8u + 8u + 8u + 4u + 4u + AUTH_CAP_NONCE_BYTES + AUTH_TAG_BYTES)

typedef struct auth_cap {
    uint64_t file_id;
    uint64_t client_id; /* the ticket's client id it must come with */
    uint64_t expires_s; /* wall clock, seconds since the epoch */
    uint32_t rights;    /* AUTH_CAP_READ | AUTH_CAP_WRITE */
} auth_cap;

/* Encodes c with a fresh nonce and its tag (cap_key: auth_derive of the
 * cluster key, AUTH_DERIVE_CAPABILITY). */
void auth_cap_issue(const uint8_t cap_key[AUTH_KEY_BYTES], const auth_cap *c,
                    uint8_t out[AUTH_CAP_BYTES]);
/* 0 and *c; -EBADMSG (wrong length, tag, key version or rights: forged,
 * damaged or not ours) or -EKEYEXPIRED (at now_s, more than skew_s past
 * its expiry). */
int auth_cap_open(const uint8_t cap_key[AUTH_KEY_BYTES], const uint8_t *in, size_t len,
                  uint64_t now_s, uint64_t skew_s, auth_cap *c);
/* The fields, tag unchecked: for the holder's bookkeeping (it has not the
 * key). -EBADMSG for a wrong length. */
int auth_cap_peek(const uint8_t *in, size_t len, auth_cap *c);
/* Do rights allow what need asks (AUTH_CAP_WRITE covers AUTH_CAP_READ)? */
bool auth_cap_covers(uint32_t rights, uint32_t need);

/* ---------------------------------------------------------- MUNGE */
/* A credential (NUL-terminated text, malloc'd) carrying payload, made by
 * the munged at socket (NULL: MUNGE's default socket). -EACCES/-EIO with
 * the reason in err. */
int auth_munge_encode(const char *socket, const void *payload, size_t len, char **cred,
                      char *err, size_t err_len);
/* Decodes cred: its payload must be exactly want_len bytes. Refuses
 * replayed, expired, forged or rewound credentials (-EACCES, reason in
 * err). */
int auth_munge_decode(const char *socket, const char *cred, void *payload, size_t want_len,
                      uint32_t *uid, uint32_t *gid, uint32_t *origin_ipv4, char *err,
                      size_t err_len);

#endif
