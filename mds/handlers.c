/* handlers.c - MdsRequest in, MdsReply out (handlers.h). Every request
 * passes the role check of authz.c, the boundary checks of req_check.c
 * and the inode handle check of handles.c (a user names only inodes whose
 * tags it was given) first, then gets its acting caller (caller.c), whose
 * permissions the namespace checks (perm.c); then each op checks its
 * required fields (missing -> EINVAL with a message), calls the namespace or
 * cluster module and fills the reply; the replies that open a file carry
 * its I/O capability (auth on), and every open, create and renewal of a
 * regular file is noted as a hold (holds.h) that keeps the file's strip
 * files while it is unlinked and still open; the purge queue's
 * drainer lists only files no hold keeps. Every Attr sent carries its
 * inode's handle tag (handles.h), a READDIR's entries theirs when the
 * caller may search the directory. Refusals are
 * logged as warnings (is_refusal). Storage for the reply lives in one mds_result per request
 * and is freed after the reply is sent. */
#include "handlers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "authz.h"
#include "cap_owner.h"
#include "codec.h"
#include "depfs.pb-c.h"
#include "io_caps.h"
#include "log.h"
#include "perm.h"
#include "req_check.h"
#include "wire.h"
#include "wire_check.h"

struct mds_result {
    Depfs__MdsReply rep;
    bool wrote;          /* the op wrote to the namespace: reply once durable */
    const char *op_name; /* for logs */
    const auth_identity *who;  /* the peer (NULL: auth off) */
    const auth_session *sess;  /* its session: tickets' secrets go under it */
    mds_caller caller;         /* who acts (caller.h): permissions are its */
    mds_cap_owner cap_owner;   /* whom its capability is for (cap_owner.h) */
    const mds_handles *handles; /* the tags every Attr carries (handles.h) */
    uint64_t names_epoch;       /* read before the op: every Attr carries it */
    bool names_stale;           /* refused for an old MdsRequest.names_epoch */
    uint8_t ticket[AUTH_TICKET_BYTES], ticket_secret[AUTH_KEY_BYTES];
    uint8_t cap[AUTH_CAP_BYTES]; /* the reply's I/O capability */
    Depfs__Attr attr;
    Depfs__Attr dir_attr; /* the parent a namespace change left (rep.dir_attr) */
    mds_inode dir;        /* ... filled in here by the namespace */
    Depfs__Layout lay, def_lay;
    uint32_t lay_servers[LAYOUT_MAX_N];
    char why[MDS_WHY_MAX];
    /* readdir */
    Depfs__Dirent *ents;
    Depfs__Dirent **ent_ptrs;
    size_t n_ents, max_ents;
    Depfs__Attr *ent_attrs;  /* with_attrs: one per entry */
    Depfs__Layout *ent_lays;
    /* readlink / getxattr / listxattr */
    char *target;
    void *xval;
    char **xnames;
    size_t n_xnames;
    /* purge list */
    Depfs__PurgeEntry *purge;
    Depfs__PurgeEntry **purge_ptrs;
    Depfs__Layout *purge_lays;
    uint32_t (*purge_servers)[LAYOUT_MAX_N];
    size_t n_purge, max_purge;
    /* cluster: allocated by MDS_CLUSTER alone (80 KB: zeroing it for every
     * request was a few percent of a lookup's CPU) */
    struct mds_cluster_reply *cluster;
};

struct mds_cluster_reply {
    mds_server servers[CONFIG_MAX_IOSERVERS];
    Depfs__ServerInfo srv[CONFIG_MAX_IOSERVERS];
    Depfs__ServerInfo *srv_ptrs[CONFIG_MAX_IOSERVERS];
};
typedef struct mds_result mds_reply_buf; /* the ops fill it in place */

typedef int (*op_fn)(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b);

static int missing(mds_reply_buf *b, const char *field)
{
    snprintf(b->why, sizeof(b->why), "missing field '%s'", field);
    return -EINVAL;
}

#define NEED(cond, field)                  \
    do {                                   \
        if (!(cond))                       \
            return missing(b, field);      \
    } while (0)

/* --------------------------------------------------------- reply fillers */

static void fill_layout(Depfs__Layout *pl, uint32_t *servers, const layout *l)
{
    depfs__layout__init(pl);
    pl->n = l->n;
    pl->k = l->k;
    pl->stripe_unit = l->su;
    pl->version = l->version;
    pl->codec_version = l->codec_version;
    for (uint32_t i = 0; i < l->n && i < LAYOUT_MAX_N; i++)
        servers[i] = l->servers[i];
    pl->n_servers = l->n;
    pl->servers = l->n ? servers : NULL;
}

/* A policy (n/k/su, no servers) as a Layout message. */
static void fill_policy(Depfs__Layout *pl, unsigned n, unsigned k, uint32_t su)
{
    depfs__layout__init(pl);
    pl->n = n;
    pl->k = k;
    pl->stripe_unit = su;
    pl->version = 0;
    pl->codec_version = CODEC_VERSION_CURRENT;
}

/* Every Attr the MDS sends is made here: it carries its inode's handle
 * tag (handles.h), which whoever may see the attributes may hold. */
static void attr_from(Depfs__Attr *a, const mds_inode *in, const mds_reply_buf *b)
{
    const mds_handles *h = b->handles;
    depfs__attr__init(a);
    a->ino = in->ino;
    a->has_tag = h->keyed;
    a->tag = h->keyed ? mds_handle_tag(h, in->ino) : 0;
    a->mode = in->mode;
    a->nlink = in->nlink;
    a->uid = in->uid;
    a->gid = in->gid;
    a->rdev = in->rdev;
    a->size = in->size;
    a->has_alloc_bytes = in->has_layout && in->alloc_known;
    a->alloc_bytes = in->alloc_bytes;
    a->atime_ns = in->atime_ns;
    a->mtime_ns = in->mtime_ns;
    a->ctime_ns = in->ctime_ns;
    a->has_data_version = S_ISREG(in->mode);
    a->data_version = in->data_version;
    a->has_name_gen = true;
    a->name_gen = in->name_gen;
    a->has_names_epoch = true;
    a->names_epoch = b->names_epoch;
}

static void fill_attr(mds_reply_buf *b, const mds_inode *in)
{
    attr_from(&b->attr, in, b);
    b->rep.attr = &b->attr;
    if (in->has_layout) {
        fill_layout(&b->lay, b->lay_servers, &in->lay);
        b->rep.layout = &b->lay;
    }
}

/* The I/O capability for file ino (auth on): rights for AUTH_CAP_TTL_S,
 * made out to the client dispatch found for the request (cap_owner.h:
 * a MUNGE user's ticket's, a key holder's word); none when it found none. */
static void issue_cap(mds_ctx *c, mds_reply_buf *b, uint64_t ino, uint32_t rights)
{
    if (!c->auth || !b->who || !b->cap_owner.issue)
        return;
    auth_cap cap = { .file_id = ino, .client_id = b->cap_owner.client_id,
                     .expires_s = (uint64_t)time(NULL) + AUTH_CAP_TTL_S, .rights = rights };
    auth_cap_issue(c->auth->cap_key, &cap, b->cap);
    b->rep.has_capability = true;
    b->rep.capability = (ProtobufCBinaryData){ sizeof(b->cap), b->cap };
}

/* What an open's access mode lets its capability do. */
static uint32_t cap_rights_of(uint32_t open_flags)
{
    switch (open_flags & O_ACCMODE) {
    case O_WRONLY: return AUTH_CAP_WRITE;
    case O_RDWR: return AUTH_CAP_RIGHTS_ALL;
    default: return AUTH_CAP_READ;
    }
}

/* The parent directory as a namespace change left it. */
static void fill_dir_attr(mds_reply_buf *b, const mds_inode *dir)
{
    attr_from(&b->dir_attr, dir, b);
    b->rep.dir_attr = &b->dir_attr;
}

/* The last link went: the client learns which inode (it may hold it
 * open); a regular file's strip files go through the purge queue, not
 * through the client. */
static void fill_removed(mds_reply_buf *b, const mds_removed *rm)
{
    if (!rm->ino)
        return;
    b->rep.has_removed_ino = true;
    b->rep.removed_ino = rm->ino;
}

/* --------------------------------------------------------------- holds */

/* Whose hold a request notes or gives back: the client dispatch found for
 * it (cap_owner.h: a MUNGE user's ticket's, a key holder's word), else
 * (auth off, or a user without a ticket) the client id it names. */
static uint64_t hold_client(const Depfs__MdsRequest *q, const mds_reply_buf *b)
{
    if (b->cap_owner.issue)
        return b->cap_owner.client_id;
    return q->has_client_id ? q->client_id : 0;
}

/* The holds journal (holds_journal.h) could not record a hold of ino: the
 * open is refused, as a mutation is when the store fails. */
static void journal_failed(mds_reply_buf *b, uint64_t ino)
{
    snprintf(b->why, sizeof(b->why), "inode %llu: the MDS cannot record the hold of the open "
             "(its store failed)", (unsigned long long)ino);
}

/* The request's client holds regular file `in` for a capability's life.
 * An unlinked file (nlink 0) takes new holds only while it is still held
 * (by a hold since the start or as its queue entry recorded): once none
 * is live its strip files may be going. -ENOENT then. A new hold of an
 * unlinked file is recorded in its entry too (a restart keeps it). */
static int note_hold(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b, const mds_inode *in)
{
    uint64_t now_s = (uint64_t)time(NULL), recorded_s = 0;
    if (!c->holds || !S_ISREG(in->mode))
        return 0;
    if (in->nlink == 0) {
        int rc = mds_ns_purge_recorded(c->ns, in->ino, &recorded_s, b->why);
        if (rc < 0)
            return rc;
    }
    uint64_t until_s = now_s + AUTH_CAP_TTL_S;
    int rc = mds_holds_note(c->holds, in->ino, hold_client(q, b), until_s, in->nlink == 0, recorded_s,
                            now_s, &b->rep.hold_gen);
    b->rep.has_hold_gen = rc == 0;
    if (rc == 0)
        return in->nlink == 0 ? mds_ns_purge_hold(c->ns, in->ino, until_s, false, b->why) : 0;
    if (rc == -ENOENT)
        snprintf(b->why, sizeof(b->why), "inode %llu was unlinked and no handle held it: its strip "
                 "files are being removed", (unsigned long long)in->ino);
    else
        journal_failed(b, in->ino);
    return rc;
}

/* The request's client's hold of regular file `in` (just noted) is a
 * writer's: MDS_MIGRATE_SWAP refuses while another client has one. */
static int mark_writer(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b, const mds_inode *in)
{
    if (!c->holds || !S_ISREG(in->mode))
        return 0;
    int rc = mds_holds_mark_writer(c->holds, in->ino, hold_client(q, b), (uint64_t)time(NULL));
    if (rc < 0)
        journal_failed(b, in->ino);
    return rc;
}

/* mark_writer for a new open for writing, and then the check that closes
 * its race with a migrate: a swap that committed after the open loaded
 * the file but before its writer's hold was marked did not see the
 * writer; the file is then unlinked (migrated away) and the opener must
 * open the name again (ESTALE), or its writes would go to the old inode. */
static int mark_writer_checked(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b,
                               const mds_inode *in)
{
    mds_inode now;
    int rc = mark_writer(c, q, b, in);
    if (rc < 0 || !S_ISREG(in->mode) || in->nlink == 0)
        return rc;
    rc = mds_ns_getattr(c->ns, in->ino, &now, b->why);
    if (rc < 0 || !now.migrated_away)
        return rc;
    /* the hold stays until it expires: it may be an older handle's too */
    snprintf(b->why, sizeof(b->why), "inode %llu was replaced by its migrated copy while it was "
             "opened: look the name up again", (unsigned long long)in->ino);
    return -ESTALE;
}

static void mds_new_from(const Depfs__MdsRequest *q, mds_reply_buf *b, mds_new *nw)
{
    memset(nw, 0, sizeof(*nw));
    nw->who = &b->caller;
    nw->parent = q->parent;
    nw->name = q->name;
    nw->mode = q->mode;
    nw->uid = q->uid;
    nw->gid = q->gid;
    nw->rdev = q->rdev;
    nw->target = q->target;
    nw->want_n = q->want_n;
    nw->want_k = q->want_k;
    nw->want_su = q->want_su;
    nw->dir_out = &b->dir;
}

/* ------------------------------------------------------------------- ops */

/* A ticket for client id (auth on): the peer's uid/gid (0 for the cluster
 * key's holders), its secret wrapped under this connection's session. */
static int issue_ticket(mds_ctx *c, mds_reply_buf *b, uint64_t id)
{
    uint8_t secret[AUTH_KEY_BYTES];
    if (!c->auth || !b->who || !b->sess)
        return 0;
    auth_ticket t = { .client_id = id, .uid = b->who->uid, .gid = b->who->gid,
                      .expires_s = (uint64_t)time(NULL) + AUTH_TICKET_TTL_S };
    auth_ticket_issue(c->auth->ticket_key, &t, b->ticket, secret);
    auth_ticket_wrap(b->sess, b->ticket, secret, b->ticket_secret);
    auth_wipe(secret, sizeof(secret));
    b->rep.has_ticket = b->rep.has_ticket_secret = b->rep.has_ticket_expires_s = true;
    b->rep.ticket = (ProtobufCBinaryData){ sizeof(b->ticket), b->ticket };
    b->rep.ticket_secret = (ProtobufCBinaryData){ sizeof(b->ticket_secret), b->ticket_secret };
    b->rep.ticket_expires_s = t.expires_s;
    return 0;
}

/* A renewal: the old ticket (tagged by us, of the uid MUNGE proved on this
 * connection) keeps its client id. An expired one is renewed too: a
 * client idle for longer than a ticket's life (a mount overnight) must not
 * lose its client id, and the caller proved that uid afresh, so it gains
 * nothing it could not get by registering anew; the expiry bounds what
 * the I/O servers accept, not the MDS's word. */
static int renew_ticket(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    auth_ticket t;
    uint8_t secret[AUTH_KEY_BYTES];
    if (!c->auth || !b->who) {
        snprintf(b->why, sizeof(b->why), "no tickets: auth is off");
        return -EINVAL;
    }
    int rc = auth_ticket_open(c->auth->ticket_key, q->renew_ticket.data, q->renew_ticket.len,
                              (uint64_t)time(NULL), &t, secret);
    auth_wipe(secret, sizeof(secret));
    if ((rc < 0 && rc != -EKEYEXPIRED) || t.uid != b->who->uid) {
        snprintf(b->why, sizeof(b->why), "ticket not renewable (%s): register again",
                 rc < 0 ? "not ours" : "not this user's");
        log_warn("refused to renew a ticket: %s", b->why);
        return -EACCES;
    }
    b->rep.has_client_id = true;
    b->rep.client_id = t.client_id;
    return issue_ticket(c, b, t.client_id);
}

static int op_register(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    uint64_t id;
    if (q->has_renew_ticket)
        return renew_ticket(c, q, b);
    int rc = mds_ns_register(c->ns, &id, b->why);
    if (rc == 0) {
        b->rep.has_client_id = true;
        b->rep.client_id = id;
        log_info("registered client %llu%s", (unsigned long long)id,
                 b->who ? (b->who->role == AUTH_ROLE_USER ? " (a user, by MUNGE)"
                                                         : " (the cluster key)") : "");
        rc = issue_ticket(c, b, id);
    }
    return rc;
}

static int op_lookup(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    mds_inode in;
    NEED(q->has_parent, "parent");
    NEED(q->name, "name");
    int rc = mds_ns_lookup(c->ns, &b->caller, q->parent, q->name, &in, b->why);
    if (rc == 0)
        fill_attr(b, &in);
    return rc;
}

static int op_getattr(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    mds_inode in;
    NEED(q->has_ino, "ino");
    int rc = mds_ns_getattr(c->ns, q->ino, &in, b->why);
    if (rc < 0)
        return rc;
    fill_attr(b, &in);
    if (S_ISDIR(in.mode)) { /* the layout new files here would get */
        unsigned n, k;
        uint32_t su;
        mds_ns_effective_policy(c->ns, &in, &n, &k, &su);
        fill_policy(&b->lay, n, k, su);
        b->rep.layout = &b->lay;
    }
    return 0;
}

static int op_setattr(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    /* SET_CTIME reads no value: ctime is the MDS's now (namespace.h) */
    const uint32_t value_bits = DEPFS_SET_MODE | DEPFS_SET_UID | DEPFS_SET_GID | DEPFS_SET_ATIME |
                                DEPFS_SET_MTIME;
    mds_setattr_in in = { 0 };
    mds_inode out;
    NEED(q->has_ino, "ino");
    NEED(q->has_set_mask, "set_mask");
    NEED(q->attr || !(q->set_mask & value_bits), "attr");
    NEED(q->attr || q->has_size || !(q->set_mask & DEPFS_SET_SIZE), "attr.size");
    if (q->attr) {
        in.mode = q->attr->mode;
        in.uid = q->attr->uid;
        in.gid = q->attr->gid;
        in.size = q->attr->size;
        in.atime_ns = q->attr->atime_ns;
        in.mtime_ns = q->attr->mtime_ns;
    } else {
        in.size = q->size;
    }
    in.alloc_bytes = q->has_alloc_bytes ? &q->alloc_bytes : NULL;
    int rc = mds_ns_setattr(c->ns, &b->caller, q->ino, q->set_mask, &in, &out, b->why);
    if (rc == 0)
        fill_attr(b, &out);
    return rc;
}

/* A renewal: a capability we issued, unexpired, for this ino and the
 * request's client (cap_owner.h), gets its rights again for AUTH_CAP_TTL_S,
 * and the hold goes with it. No permission check, as none is made on an open
 * file's later reads and writes (the file may be unlinked and still open
 * at the client); a file no longer at the MDS (purged) is ENOENT. */
static int renew_cap(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    auth_cap cap;
    mds_inode in;
    if (!c->auth || !b->who) {
        snprintf(b->why, sizeof(b->why), "no capabilities: auth is off");
        return -EINVAL;
    }
    int rc = auth_cap_open(c->auth->cap_key, q->renew_capability.data, q->renew_capability.len,
                           (uint64_t)time(NULL), 0, &cap);
    if (rc < 0 || cap.file_id != q->ino || !b->cap_owner.issue ||
        cap.client_id != b->cap_owner.client_id) {
        snprintf(b->why, sizeof(b->why), "capability for inode %llu not renewable (%s): open "
                 "the file again", (unsigned long long)q->ino,
                 rc == -EKEYEXPIRED ? "expired" : rc < 0 ? "not ours" : "another file's or client's");
        return -EACCES;
    }
    rc = mds_ns_getattr(c->ns, q->ino, &in, b->why);
    if (rc == 0)
        rc = note_hold(c, q, b, &in);
    if (rc == 0 && (cap.rights & AUTH_CAP_WRITE))
        rc = mark_writer(c, q, b, &in);
    if (rc == 0)
        issue_cap(c, b, q->ino, cap.rights);
    return rc;
}

/* A hold renewed by a client that shows no capabilities (the cluster key's
 * holders, auth off) for its handles of ino: as renew_cap, without one.
 * flags say whether one of them was opened for writing; without them
 * (clients from before) the hold is taken for a writer's. */
static int renew_hold(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    mds_inode in;
    int rc = mds_ns_getattr(c->ns, q->ino, &in, b->why);
    if (rc == 0)
        rc = note_hold(c, q, b, &in);
    if (rc == 0 && (!q->has_flags || (cap_rights_of(q->flags) & AUTH_CAP_WRITE)))
        rc = mark_writer(c, q, b, &in);
    if (rc == 0)
        fill_attr(b, &in);
    return rc;
}

/* A file's attributes and layout for an open with flags (O_ACCMODE,
 * O_TRUNC), once the caller may (perm.h), and the I/O capability for
 * that access (auth on), or a capability renewed. */
static int op_open(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    mds_inode in;
    NEED(q->has_ino, "ino");
    if (q->has_renew_capability)
        return renew_cap(c, q, b);
    if (q->has_renew_hold && q->renew_hold)
        return renew_hold(c, q, b);
    NEED(q->has_flags, "flags");
    mds_open_name on = { .linked = q->has_linked && q->linked, .has_name_gen = q->has_name_gen,
                         .name_gen = q->name_gen };
    int rc = mds_ns_open_file(c->ns, &b->caller, q->ino, q->flags, &on, &in, b->why);
    if (rc == 0)
        rc = note_hold(c, q, b, &in);
    if (rc == 0 && (cap_rights_of(q->flags) & AUTH_CAP_WRITE))
        rc = mark_writer_checked(c, q, b, &in);
    if (rc == 0) {
        fill_attr(b, &in);
        if (S_ISREG(in.mode))
            issue_cap(c, b, in.ino, cap_rights_of(q->flags));
    }
    return rc;
}

static int op_create(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    mds_new nw;
    mds_inode out;
    bool unlinked = q->has_unlinked && q->unlinked;
    NEED(q->has_parent, "parent");
    NEED(q->name || unlinked, "name");
    mds_new_from(q, b, &nw);
    nw.unlinked = unlinked; /* its creator's hold goes with its queue entry */
    nw.held_until_s = unlinked ? (uint64_t)time(NULL) + AUTH_CAP_TTL_S : 0;
    int rc = mds_ns_create(c->ns, &nw, q->flags, &out, b->why);
    if (rc == 0)
        rc = note_hold(c, q, b, &out);
    if (rc == 0 && (cap_rights_of(q->flags) & AUTH_CAP_WRITE))
        rc = mark_writer_checked(c, q, b, &out);
    if (rc == 0) {
        fill_attr(b, &out);
        fill_dir_attr(b, &b->dir);
        if (S_ISREG(out.mode)) /* a create opens, with the access asked */
            issue_cap(c, b, out.ino, cap_rights_of(q->flags));
    }
    return rc;
}

static int op_mknod(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    mds_new nw;
    mds_inode out;
    NEED(q->has_parent, "parent");
    NEED(q->name, "name");
    NEED(q->has_mode, "mode");
    mds_new_from(q, b, &nw);
    int rc = mds_ns_mknod(c->ns, &nw, &out, b->why);
    if (rc == 0) {
        fill_attr(b, &out);
        fill_dir_attr(b, &b->dir);
    }
    return rc;
}

static int op_mkdir(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    mds_new nw;
    mds_inode out;
    NEED(q->has_parent, "parent");
    NEED(q->name, "name");
    mds_new_from(q, b, &nw);
    int rc = mds_ns_mkdir(c->ns, &nw, &out, b->why);
    if (rc == 0) {
        fill_attr(b, &out);
        fill_dir_attr(b, &b->dir);
    }
    return rc;
}

static int op_symlink(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    mds_new nw;
    mds_inode out;
    NEED(q->has_parent, "parent");
    NEED(q->name, "name");
    NEED(q->target, "target");
    mds_new_from(q, b, &nw);
    int rc = mds_ns_symlink(c->ns, &nw, &out, b->why);
    if (rc == 0) {
        fill_attr(b, &out);
        fill_dir_attr(b, &b->dir);
    }
    return rc;
}

static int op_unlink(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    mds_removed rm;
    NEED(q->has_parent, "parent");
    NEED(q->name, "name");
    int rc = mds_ns_unlink(c->ns, &b->caller, q->parent, q->name, &rm, b->why);
    if (rc == 0)
        fill_removed(b, &rm);
    if (rc == 0 && rm.has_dir)
        fill_dir_attr(b, &rm.dir);
    return rc;
}

static int op_rmdir(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    NEED(q->has_parent, "parent");
    NEED(q->name, "name");
    return mds_ns_rmdir(c->ns, &b->caller, q->parent, q->name, b->why);
}

static int op_rename(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    mds_removed rm;
    mds_inode moved;
    NEED(q->has_parent, "parent");
    NEED(q->name, "name");
    NEED(q->has_new_parent, "new_parent");
    NEED(q->new_name, "new_name");
    int rc = mds_ns_rename(c->ns, &b->caller, q->parent, q->name, q->new_parent, q->new_name, q->flags, &rm,
                           &moved, b->why);
    if (rc == 0)
        fill_removed(b, &rm);
    if (rc == 0 && moved.ino) /* its new name generation, for the renamer's name cache */
        fill_attr(b, &moved);
    return rc;
}

/* The next entry of the reply (NULL: the reply is full). */
static Depfs__Dirent *readdir_next(mds_reply_buf *b, const char *name, size_t name_len,
                                   uint64_t ino, uint32_t mode, uint64_t cookie, int *rc)
{
    *rc = 0;
    if (b->n_ents >= b->max_ents)
        return NULL;
    Depfs__Dirent *e = &b->ents[b->n_ents];
    depfs__dirent__init(e);
    e->name = strndup(name, name_len);
    if (!e->name) {
        *rc = -ENOMEM;
        return NULL;
    }
    e->ino = ino;
    e->mode = mode;
    e->cookie = cookie;
    b->ent_ptrs[b->n_ents++] = e;
    return e;
}

static int readdir_emit(void *arg, const char *name, size_t name_len, uint64_t ino, uint32_t mode,
                        uint64_t cookie)
{
    int rc;
    if (!readdir_next(arg, name, name_len, ino, mode, cookie, &rc))
        return rc < 0 ? rc : 1;
    return 0;
}

/* with_attrs: the entry's attributes, a regular file's layout shape (what
 * a stat needs; the servers come with its open), and whether it has no
 * stored xattrs. */
static int readdir_emit_attrs(void *arg, const char *name, size_t name_len, uint64_t ino,
                              uint32_t mode, uint64_t cookie, const mds_inode *in, bool xattrs)
{
    mds_reply_buf *b = arg;
    int rc;
    Depfs__Dirent *e = readdir_next(b, name, name_len, ino, mode, cookie, &rc);
    if (!e)
        return rc < 0 ? rc : 1;
    if (!in)
        return 0;
    size_t i = (size_t)(e - b->ents);
    attr_from(&b->ent_attrs[i], in, b);
    e->attr = &b->ent_attrs[i];
    e->has_no_xattrs = true;
    e->no_xattrs = !xattrs;
    if (in->has_layout) {
        fill_policy(&b->ent_lays[i], in->lay.n, in->lay.k, in->lay.su);
        b->ent_lays[i].version = in->lay.version;
        b->ent_lays[i].codec_version = in->lay.codec_version;
        e->layout = &b->ent_lays[i];
    }
    return 0;
}

/* The entries' handle tags, given only to a caller that may search dir
 * (POSIX: read alone lists the names, search reaches the entries) or
 * needs none (handles.h). */
static void readdir_tags(mds_reply_buf *b, const mds_inode *dir)
{
    if (!b->handles->keyed ||
        (!mds_handles_exempt(b->who) && perm_access(&b->caller, dir, PERM_EXEC, NULL) < 0))
        return;
    for (size_t i = 0; i < b->n_ents; i++) {
        b->ents[i].has_tag = true;
        b->ents[i].tag = mds_handle_tag(b->handles, b->ents[i].ino);
    }
}

static int op_readdir(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    mds_inode dir;
    bool eof = false;
    NEED(q->has_ino, "ino");
    unsigned max = q->max_entries == 0 || q->max_entries > MDS_READDIR_MAX ? MDS_READDIR_MAX
                                                                            : q->max_entries;
    b->ents = calloc(max, sizeof(*b->ents));
    b->ent_ptrs = calloc(max, sizeof(*b->ent_ptrs));
    if (!b->ents || !b->ent_ptrs)
        return -ENOMEM;
    b->max_ents = max;
    bool with_attrs = q->has_with_attrs && q->with_attrs;
    if (with_attrs) {
        b->ent_attrs = calloc(max, sizeof(*b->ent_attrs));
        b->ent_lays = calloc(max, sizeof(*b->ent_lays));
        if (!b->ent_attrs || !b->ent_lays)
            return -ENOMEM;
    }
    int rc = with_attrs ? mds_ns_readdir_attrs(c->ns, &b->caller, q->ino, q->cookie, max,
                                               readdir_emit_attrs, b, &eof, &dir, b->why)
                        : mds_ns_readdir(c->ns, &b->caller, q->ino, q->cookie, max, readdir_emit, b,
                                         &eof, &dir, b->why);
    if (rc < 0)
        return rc;
    readdir_tags(b, &dir);
    b->rep.n_entries = b->n_ents;
    b->rep.entries = b->ent_ptrs;
    b->rep.has_eof = true;
    b->rep.eof = eof;
    return 0;
}

static int op_readlink(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    NEED(q->has_ino, "ino");
    int rc = mds_ns_readlink(c->ns, q->ino, &b->target, b->why);
    if (rc == 0)
        b->rep.target = b->target;
    return rc;
}

static int op_link(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    mds_inode out;
    NEED(q->has_ino, "ino");
    NEED(q->has_new_parent, "new_parent");
    NEED(q->new_name, "new_name");
    int rc = mds_ns_link(c->ns, &b->caller, q->ino, q->new_parent, q->new_name, &out, b->why);
    if (rc == 0)
        fill_attr(b, &out);
    return rc;
}

static int op_statfs(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    (void)q;
    mds_ns_statfs(c->ns, &b->rep.files, &b->rep.logical_bytes);
    mds_ns_purge_stats(c->ns, &b->rep.purge_files, &b->rep.purge_bytes);
    b->rep.has_files = b->rep.has_logical_bytes = true;
    b->rep.has_purge_files = b->rep.has_purge_bytes = true;
    b->rep.purge_floor_s = c->holds ? mds_holds_floor(c->holds, (uint64_t)time(NULL)) : 0;
    b->rep.has_purge_floor_s = b->rep.purge_floor_s != 0;
    return 0;
}

/* ------------------------------------------------------------ migrate */

/* Swaps refused because the file is busy or changed: a client may retry
 * many, so at most a burst of lines a period. */
static dlog_limit migrate_log = DLOG_LIMIT_INIT(RPC_LOG_BURST, RPC_LOG_PERIOD_MS);

typedef struct migrate_holds {
    mds_ctx *c;
    uint64_t client; /* the migrating client: its own handles do not count */
} migrate_holds;

/* Under the namespace's write lock: another client may be writing ino. */
static bool migrate_is_busy(void *arg, uint64_t ino, char *why)
{
    const migrate_holds *m = arg;
    if (!m->c->holds || !mds_holds_other_writer(m->c->holds, ino, m->client, (uint64_t)time(NULL)))
        return false;
    snprintf(why, MDS_WHY_MAX, "inode %llu is open for writing by another client (or the MDS "
             "restarted and does not know its writers yet): retry after its writers close",
             (unsigned long long)ino);
    return true;
}

/* Under the namespace's write lock: the copy ino is the migrating client's
 * own, still open (it created it unlinked and holds it): not another
 * client's copy, nor one no handle keeps, whose strip files the purge may
 * be removing. A request that names no client (0) holds nothing. */
static bool migrate_copy_held(void *arg, uint64_t ino, char *why)
{
    const migrate_holds *m = arg;
    if (m->client != 0 && m->c->holds &&
        mds_holds_client_holds(m->c->holds, ino, m->client, (uint64_t)time(NULL)))
        return true;
    snprintf(why, MDS_WHY_MAX, "inode %llu is not held open by client %llu: a migrate swaps in "
             "only a copy its client created and still has open", (unsigned long long)ino,
             (unsigned long long)m->client);
    return false;
}

/* MDS_MIGRATE_SWAP (namespace.h mds_ns_migrate_swap): the copy, held by
 * the requesting client, takes the file's name; the file's inode goes to
 * the purge queue. */
static int op_migrate_swap(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    mds_inode out;
    mds_removed rm;
    NEED(q->has_parent, "parent");
    NEED(q->name, "name");
    NEED(q->has_ino, "ino");
    NEED(q->has_migrate_ino, "migrate_ino");
    NEED(q->has_data_version, "data_version");
    migrate_holds mh = { .c = c, .client = hold_client(q, b) };
    mds_migrate_in in = { .parent = q->parent, .name = q->name, .src_ino = q->ino,
                          .copy_ino = q->migrate_ino, .data_version = q->data_version,
                          .busy = migrate_is_busy, .copy_held = migrate_copy_held, .arg = &mh };
    int rc = mds_ns_migrate_swap(c->ns, &b->caller, &in, &out, &rm, b->why);
    if (rc == 0) {
        fill_attr(b, &out);
        fill_removed(b, &rm);
    } else if (rc == -ESTALE || rc == -EBUSY || rc == -EMLINK) { /* the CLI copies again */
        dlog_limited(&migrate_log, DLOG_INFO, "migrate: '%s' (inode %llu) not switched to inode "
                     "%llu: %s", q->name, (unsigned long long)q->ino,
                     (unsigned long long)q->migrate_ino, b->why);
    }
    return rc;
}

/* --------------------------------------------------------- purge queue */

/* The client's hold of ino goes unless a later open of it made a newer
 * one than gen (holds.h); an unlinked file's last hold going clears its
 * queue entry's record of holds too. */
static int release_one(mds_ctx *c, uint64_t client, uint64_t ino, uint64_t gen, mds_reply_buf *b)
{
    mds_inode in;
    uint64_t now_s = (uint64_t)time(NULL);
    mds_holds_release(c->holds, ino, client, gen);
    if (mds_ns_getattr(c->ns, ino, &in, NULL) < 0 || in.nlink != 0 ||
        mds_holds_held(c->holds, ino, now_s))
        return 0;
    int rc = mds_ns_purge_hold(c->ns, ino, 0, true, b->why);
    return rc == -ENOENT ? 0 : rc;
}

/* MDS_RELEASE: the client's last handle of ino, or of each file of a
 * batch, closed (the client as dispatch found it: a user gives back only
 * its own ticket's holds), unless it opened the file again since. A batch
 * goes on past an item that fails (a store error) and answers the last. */
static int op_release(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    NEED(q->has_ino || q->n_releases > 0, "ino");
    NEED(q->has_client_id, "client_id");
    if (!c->holds)
        return 0;
    uint64_t client = hold_client(q, b);
    if (q->has_ino)
        return release_one(c, client, q->ino, q->has_hold_gen ? q->hold_gen : MDS_HOLD_GEN_ANY, b);
    int err = 0;
    for (size_t i = 0; i < q->n_releases; i++) {
        const Depfs__HoldRelease *r = q->releases[i];
        int rc = release_one(c, client, r->ino, r->has_hold_gen ? r->hold_gen : MDS_HOLD_GEN_ANY, b);
        if (rc < 0)
            err = rc;
    }
    return err;
}

typedef struct purge_walk {
    mds_ctx *c;
    mds_reply_buf *b;
    uint64_t now_s;
} purge_walk;

/* One queued inode: listed when no hold keeps it, in memory or as its
 * entry recorded them (a restart forgot the memory). */
static int purge_emit(void *arg, const mds_inode *in, uint64_t held_until_s)
{
    purge_walk *w = arg;
    mds_reply_buf *b = w->b;
    if (b->n_purge >= b->max_purge)
        return 1;
    if (mds_hold_live(held_until_s, AUTH_CAP_SKEW_S, w->now_s) ||
        (w->c->holds && mds_holds_held_since_start(w->c->holds, in->ino, w->now_s)))
        return 0;
    if (!in->has_layout) { /* created before layouts were stored: nothing to remove */
        log_warn("purge queue: inode %llu has no layout", (unsigned long long)in->ino);
        return 0;
    }
    Depfs__PurgeEntry *e = &b->purge[b->n_purge];
    depfs__purge_entry__init(e);
    e->ino = in->ino;
    e->size = in->size;
    fill_layout(&b->purge_lays[b->n_purge], b->purge_servers[b->n_purge], &in->lay);
    e->layout = &b->purge_lays[b->n_purge];
    b->purge_ptrs[b->n_purge++] = e;
    return 0;
}

/* MDS_PURGE_LIST (admin): the queued files no handle may use any more,
 * from inode cookie on, at most max_entries (WIRE_PURGE_LIST_MAX). */
static int op_purge_list(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    purge_walk w = { .c = c, .b = b, .now_s = (uint64_t)time(NULL) };
    uint64_t cursor = 0;
    bool eof = false;
    unsigned max = q->max_entries == 0 || q->max_entries > WIRE_PURGE_LIST_MAX ? WIRE_PURGE_LIST_MAX
                                                                              : q->max_entries;
    b->purge = calloc(max, sizeof(*b->purge));
    b->purge_ptrs = calloc(max, sizeof(*b->purge_ptrs));
    b->purge_lays = calloc(max, sizeof(*b->purge_lays));
    b->purge_servers = calloc(max, sizeof(*b->purge_servers));
    if (!b->purge || !b->purge_ptrs || !b->purge_lays || !b->purge_servers)
        return -ENOMEM;
    b->max_purge = max;
    int rc = mds_ns_purge_scan(c->ns, q->has_cookie ? q->cookie : 0, MDS_PURGE_SCAN_MAX, purge_emit,
                               &w, &cursor, &eof, b->why);
    if (rc < 0)
        return rc;
    b->rep.n_purge = b->n_purge;
    b->rep.purge = b->n_purge ? b->purge_ptrs : NULL;
    b->rep.has_purge_cursor = b->rep.has_eof = true;
    b->rep.purge_cursor = cursor;
    b->rep.eof = eof;
    return 0;
}

/* Whether a hold keeps queued ino (purge_done's keep: not one the list
 * gave, unless a handle took it since by a clock that went back). */
static bool purge_keep(void *arg, uint64_t ino, uint64_t held_until_s)
{
    mds_ctx *c = arg;
    uint64_t now_s = (uint64_t)time(NULL);
    bool kept = mds_hold_live(held_until_s, AUTH_CAP_SKEW_S, now_s) ||
                (c->holds && mds_holds_held_since_start(c->holds, ino, now_s));
    if (kept)
        log_warn("purge queue: inode %llu is held open again: kept", (unsigned long long)ino);
    return kept;
}

/* MDS_PURGE_DONE (admin): every strip file of the queued purge_inos is
 * gone: they are dropped in one commit (a file held again is kept). */
static int op_purge_done(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    unsigned dropped = 0;
    NEED(q->n_purge_inos > 0, "purge_inos");
    int rc = mds_ns_purge_done(c->ns, q->purge_inos, q->n_purge_inos, purge_keep, c, &dropped, b->why);
    if (rc < 0)
        return rc;
    b->rep.has_purge_dropped = true;
    b->rep.purge_dropped = dropped;
    log_debug("purge queue: %u of %zu entries dropped", dropped, q->n_purge_inos);
    return 0;
}

static int op_setxattr(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    NEED(q->has_ino, "ino");
    NEED(q->xattr_name, "xattr_name");
    NEED(q->has_xattr_value, "xattr_value");
    return mds_ns_setxattr(c->ns, &b->caller, q->ino, q->xattr_name, q->xattr_value.data, q->xattr_value.len,
                           q->flags, b->why);
}

static int op_getxattr(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    size_t len = 0;
    NEED(q->has_ino, "ino");
    NEED(q->xattr_name, "xattr_name");
    int rc = mds_ns_getxattr(c->ns, &b->caller, q->ino, q->xattr_name, &b->xval, &len, b->why);
    if (rc == 0) {
        b->rep.has_xattr_value = true;
        b->rep.xattr_value.data = b->xval;
        b->rep.xattr_value.len = len;
    }
    return rc;
}

static int op_listxattr(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    NEED(q->has_ino, "ino");
    int rc = mds_ns_listxattr(c->ns, &b->caller, q->ino, &b->xnames, &b->n_xnames, b->why);
    if (rc == 0) {
        b->rep.n_xattr_names = b->n_xnames;
        b->rep.xattr_names = b->xnames;
    }
    return rc;
}

static int op_removexattr(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    NEED(q->has_ino, "ino");
    NEED(q->xattr_name, "xattr_name");
    return mds_ns_removexattr(c->ns, &b->caller, q->ino, q->xattr_name, b->why);
}

static int op_extend(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    mds_inode out;
    NEED(q->has_ino, "ino");
    NEED(q->has_size, "size");
    int rc = mds_ns_extend(c->ns, &b->caller, q->ino, q->size, q->has_mtime_ns, q->mtime_ns,
                           q->has_alloc_bytes ? &q->alloc_bytes : NULL, &out, b->why);
    if (rc == 0)
        fill_attr(b, &out);
    return rc;
}

static int op_cluster(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    (void)q;
    unsigned n, k;
    uint32_t su;
    uint64_t epoch = 0;
    struct mds_cluster_reply *cr = b->cluster = calloc(1, sizeof(*b->cluster));
    if (!cr) {
        snprintf(b->why, sizeof(b->why), "out of memory");
        return -ENOMEM;
    }
    unsigned count = mds_cluster_servers(c->cluster, cr->servers, CONFIG_MAX_IOSERVERS, &epoch);
    for (unsigned i = 0; i < count && i < CONFIG_MAX_IOSERVERS; i++) {
        const mds_progress *p = &cr->servers[i].progress;
        Depfs__ServerInfo *si = &cr->srv[i];
        depfs__server_info__init(si);
        si->id = cr->servers[i].id;
        si->address = cr->servers[i].address;
        si->state = cr->servers[i].state;
        si->has_rebuild_done_bytes = si->has_rebuild_total_bytes = si->has_degraded_files = 1;
        si->rebuild_done_bytes = p->rebuild_done_bytes;
        si->rebuild_total_bytes = p->rebuild_total_bytes;
        si->degraded_files = p->degraded_files;
        si->has_rebuild_rate_bps = si->has_state_epoch = 1;
        si->rebuild_rate_bps = p->rebuild_rate_bps;
        si->state_epoch = cr->servers[i].state_epoch;
        cr->srv_ptrs[i] = si;
    }
    b->rep.has_cluster_epoch = 1;
    b->rep.cluster_epoch = epoch;
    b->rep.n_servers = count;
    b->rep.servers = count ? cr->srv_ptrs : NULL;
    mds_cluster_default_layout(c->cluster, &n, &k, &su);
    fill_policy(&b->def_lay, n, k, su);
    b->def_lay.version = 1;
    b->rep.default_layout = &b->def_lay;
    return 0;
}

/* server_id with server_state and/or progress fields (rebuild_done_bytes,
 * rebuild_total_bytes, degraded_files, rebuild_rate_bps). Without server_state only the
 * progress given is replaced: a progress report can never undo a state
 * change made meanwhile by someone else. A state change zeroes the old
 * progress first. The reply carries the cluster epoch. */
static int op_set_server_state(mds_ctx *c, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    bool has_progress = q->has_rebuild_done_bytes || q->has_rebuild_total_bytes ||
                        q->has_degraded_files || q->has_rebuild_rate_bps;
    uint64_t epoch = 0;
    int rc = 0;
    NEED(q->has_server_id, "server_id");
    NEED(q->has_server_state || has_progress, "server_state");
    if (q->has_server_state)
        rc = mds_cluster_set_state(c->cluster, q->server_id, q->server_state, &epoch);
    if (rc == 0 && has_progress)
        rc = mds_cluster_set_progress(c->cluster, q->server_id,
                                      q->has_rebuild_done_bytes ? &q->rebuild_done_bytes : NULL,
                                      q->has_rebuild_total_bytes ? &q->rebuild_total_bytes : NULL,
                                      q->has_degraded_files ? &q->degraded_files : NULL);
    if (rc == 0 && q->has_rebuild_rate_bps)
        rc = mds_cluster_set_rate(c->cluster, q->server_id, q->rebuild_rate_bps);
    if (rc == 0) {
        b->rep.has_cluster_epoch = 1;
        b->rep.cluster_epoch = q->has_server_state ? epoch : mds_cluster_epoch(c->cluster);
    }
    if (rc == -ENOENT)
        snprintf(b->why, sizeof(b->why), "no ioserver with id %u", q->server_id);
    else if (rc == -EINVAL)
        snprintf(b->why, sizeof(b->why), "bad server state %u", q->server_state);
    else if (rc < 0)
        snprintf(b->why, sizeof(b->why), "store write failed");
    return rc;
}

/* Indexed by MdsOp. */
static const struct {
    const char *name;
    op_fn fn;
} ops[] = {
    [DEPFS__MDS_OP__MDS_REGISTER] = { "register", op_register },
    [DEPFS__MDS_OP__MDS_LOOKUP] = { "lookup", op_lookup },
    [DEPFS__MDS_OP__MDS_GETATTR] = { "getattr", op_getattr },
    [DEPFS__MDS_OP__MDS_SETATTR] = { "setattr", op_setattr },
    [DEPFS__MDS_OP__MDS_CREATE] = { "create", op_create },
    [DEPFS__MDS_OP__MDS_MKNOD] = { "mknod", op_mknod },
    [DEPFS__MDS_OP__MDS_MKDIR] = { "mkdir", op_mkdir },
    [DEPFS__MDS_OP__MDS_UNLINK] = { "unlink", op_unlink },
    [DEPFS__MDS_OP__MDS_RMDIR] = { "rmdir", op_rmdir },
    [DEPFS__MDS_OP__MDS_RENAME] = { "rename", op_rename },
    [DEPFS__MDS_OP__MDS_READDIR] = { "readdir", op_readdir },
    [DEPFS__MDS_OP__MDS_SYMLINK] = { "symlink", op_symlink },
    [DEPFS__MDS_OP__MDS_READLINK] = { "readlink", op_readlink },
    [DEPFS__MDS_OP__MDS_LINK] = { "link", op_link },
    [DEPFS__MDS_OP__MDS_STATFS] = { "statfs", op_statfs },
    [DEPFS__MDS_OP__MDS_SETXATTR] = { "setxattr", op_setxattr },
    [DEPFS__MDS_OP__MDS_GETXATTR] = { "getxattr", op_getxattr },
    [DEPFS__MDS_OP__MDS_LISTXATTR] = { "listxattr", op_listxattr },
    [DEPFS__MDS_OP__MDS_REMOVEXATTR] = { "removexattr", op_removexattr },
    [DEPFS__MDS_OP__MDS_EXTEND] = { "extend", op_extend },
    [DEPFS__MDS_OP__MDS_CLUSTER] = { "cluster", op_cluster },
    [DEPFS__MDS_OP__MDS_SET_SERVER_STATE] = { "set_server_state", op_set_server_state },
    [DEPFS__MDS_OP__MDS_OPEN] = { "open", op_open },
    [DEPFS__MDS_OP__MDS_RELEASE] = { "release", op_release },
    [DEPFS__MDS_OP__MDS_PURGE_LIST] = { "purge_list", op_purge_list },
    [DEPFS__MDS_OP__MDS_PURGE_DONE] = { "purge_done", op_purge_done },
    [DEPFS__MDS_OP__MDS_MIGRATE_SWAP] = { "migrate_swap", op_migrate_swap },
};
#define N_OPS (sizeof(ops) / sizeof(ops[0]))

/* A request through names given before a directory above them was moved
 * by another client: the path may lead elsewhere now (namespace.h
 * mds_ns_names_current), ESTALE. No directory moved since: nothing to walk. */
static int names_current(mds_ctx *c, uint16_t type, const Depfs__MdsRequest *q, mds_reply_buf *b)
{
    if (!q->has_names_epoch || !wire_mds_op_through_names(type) ||
        q->names_epoch >= b->names_epoch)
        return 0;
    uint64_t dirs[3];
    unsigned n = 0;
    if (q->has_parent)
        dirs[n++] = q->parent;
    if (q->has_new_parent)
        dirs[n++] = q->new_parent;
    if (q->has_names_via)
        dirs[n++] = q->names_via;
    int rc = 0;
    for (unsigned i = 0; i < n && rc == 0; i++)
        rc = mds_ns_names_current(c->ns, dirs[i], q->names_epoch, b->caller.client_id, b->why);
    b->names_stale = rc == -ESTALE;
    return rc;
}

static int dispatch(mds_ctx *c, const rpc_msg *m, mds_reply_buf *b, const char **op_name)
{
    if (m->type >= N_OPS || !ops[m->type].fn) {
        snprintf(b->why, sizeof(b->why), "unknown MDS operation %u", m->type);
        return -EOPNOTSUPP;
    }
    *op_name = ops[m->type].name;
    Depfs__MdsRequest *q = depfs__mds_request__unpack(NULL, m->hdr_len, m->hdr);
    if (!q) {
        snprintf(b->why, sizeof(b->why), "malformed MdsRequest (%zu bytes)", m->hdr_len);
        return -EINVAL;
    }
    /* not this peer's to ask, then out of bounds: both logged as refused */
    int rc = mds_authorize(m->who, m->type, q, b->why, sizeof(b->why));
    if (rc == 0)
        rc = mds_req_check(m->type, q, m->hdr, m->hdr_len, b->why, sizeof(b->why));
    if (rc == 0) /* every inode it names is one it was given (handles.h) */
        rc = mds_handles_check(&c->handles, m->who, q, b->why, sizeof(b->why));
    if (rc == 0)
        rc = mds_caller_resolve(&c->callers, m->who, q, &b->caller, b->why, sizeof(b->why));
    b->caller.client_id = q->has_client_id ? q->client_id : 0;
    if (rc == 0 && c->auth && m->who && io_caps_mds_op_binds_client(m->type))
        rc = mds_cap_owner_of(c->auth->ticket_key, m->who, q, (uint64_t)time(NULL),
                              &b->cap_owner, b->why, sizeof(b->why));
    if (rc == 0)
        rc = names_current(c, m->type, q, b);
    if (rc == 0)
        rc = ops[m->type].fn(c, q, b);
    depfs__mds_request__free_unpacked(q, NULL);
    return rc;
}

/* Errors that say the request itself is out of bounds, makes no sense or
 * is not the caller's to make (a protocol error, a hostile peer or a user
 * trying what it may not; not an ordinary failure such as ENOENT or
 * EEXIST): each is logged as a warning, rate-limited. */
static bool is_refusal(int err)
{
    switch (err) {
    case EINVAL:
    case EOPNOTSUPP:
    case ENAMETOOLONG:
    case EFBIG:
    case ERANGE:
    case E2BIG:
    case ENOSPC:
    case EPERM:  /* authz.h: not this peer's to ask; perm.h: not this caller's */
    case EACCES: /* perm.h: the caller lacks the permission */
        return true;
    default:
        return false;
    }
}

/* Refusals are what a hostile peer can make us log: rate-limited. */
static dlog_limit refusal_log = DLOG_LIMIT_INIT(RPC_LOG_BURST, RPC_LOG_PERIOD_MS);

static void log_error(const char *op_name, const char *peer, int err, const char *why)
{
    if (err == EIO || err == ENOMEM)
        log_warn("%s from %s failed: %s (%s)", op_name, peer, strerror(err), why);
    else if (is_refusal(err))
        dlog_limited(&refusal_log, DLOG_WARN, "%s from %s refused: %s (%s)", op_name, peer,
                     strerror(err), why);
    else
        log_debug("%s from %s: %s (%s)", op_name, peer, strerror(err), why);
}

static void reply_buf_free(mds_reply_buf *b)
{
    for (size_t i = 0; i < b->n_ents; i++)
        free(b->ents[i].name);
    free(b->ents);
    free(b->ent_ptrs);
    free(b->ent_attrs);
    free(b->ent_lays);
    free(b->purge);
    free(b->purge_ptrs);
    free(b->purge_lays);
    free(b->purge_servers);
    free(b->target);
    free(b->xval);
    mds_ns_free_names(b->xnames, b->n_xnames);
    free(b->cluster);
    free(b);
}

mds_result *mds_process(mds_ctx *c, uint16_t type, const uint8_t *hdr, size_t hdr_len,
                        const char *peer, const auth_identity *who, const auth_session *sess)
{
    const char *op_name = "?";
    rpc_msg m = { .type = type, .hdr = hdr, .hdr_len = hdr_len, .peer = peer, .who = who };
    mds_reply_buf *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    depfs__mds_reply__init(&b->rep);
    b->who = who;
    b->sess = sess;
    b->handles = &c->handles;
    b->names_epoch = mds_ns_names_epoch(c->ns); /* before the op resolves any name */
    uint64_t writes_before = mds_ns_thread_writes();
    int rc = dispatch(c, &m, b, &op_name);
    b->wrote = mds_ns_thread_writes() != writes_before;
    if (rc < 0) {
        /* a failed op may have half-filled the reply: send only the error */
        depfs__mds_reply__init(&b->rep);
        b->rep.err = -rc;
        if (b->why[0])
            b->rep.message = b->why;
        b->rep.has_names_epoch = b->names_stale;
        b->rep.names_epoch = b->names_epoch;
        log_error(op_name, peer ? peer : "?", -rc, b->why);
    }
    b->op_name = op_name;
    return b;
}

const Depfs__MdsReply *mds_result_reply(const mds_result *res)
{
    return &res->rep;
}

bool mds_result_wrote(const mds_result *res)
{
    return res->wrote;
}

void mds_result_free(mds_result *res)
{
    if (res)
        reply_buf_free(res);
}

void mds_handle(void *ctx, const rpc_msg *m, rpc_replier *r)
{
    mds_ctx *c = ctx;
    mds_result *res = mds_process(c, m->type, m->hdr, m->hdr_len, m->peer, m->who,
                                  rpc_replier_session(r));
    if (!res) {
        Depfs__MdsReply oom = DEPFS__MDS_REPLY__INIT;
        oom.err = ENOMEM;
        rpc_reply_msg(r, m, &oom.base, NULL, 0);
        return;
    }
    if (res->wrote && c->kv) /* acknowledged only once durable (syncer.h) */
        mds_syncer_reply(c->syncer, c->kv, r, m, &res->rep.base);
    else if (rpc_reply_msg(r, m, &res->rep.base, NULL, 0) < 0)
        log_debug("%s: reply to %s not sent", res->op_name, m->peer ? m->peer : "?");
    mds_result_free(res);
}
