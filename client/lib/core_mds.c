/* core_mds.c - libdepfs core: the MDS connection and its calls (reconnect
 * and one retry), the helpers every MDS request and reply needs (the
 * inode handle tags of core_handles.h go out and come in here), and whom
 * each request acts for (this thread's depfs_act_as, else the process). */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core.h"
#include "label.h"
#include "log.h"
#include "wire.h"
#include "wire_check.h"

_Static_assert(DEPFS_ROOT_INO == WIRE_ROOT_INO, "the root needs no handle tag, on both sides");

/* MDS calls: one retry (after a timeout or a reconnect). */
#define DC_MDS_ATTEMPTS 2u
/* Reconnect attempts to a restarting MDS are spaced this far apart. */
#define DC_MDS_RECONNECT_PAUSE_MS 100u

/* ------------------------------------------------------- MDS calls */

static const char *mds_op_name(Depfs__MdsOp op)
{
    const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(&depfs__mds_op__descriptor, (int)op);
    return v ? v->name : "MDS_?";
}

/* The MDS connection, (re)connecting when there is none or when `failed`
 * (the connection the caller saw fail) is still the current one. A
 * restarting MDS is retried for up to one request timeout. */
static int mds_conn_get(depfs_t *fs, rpc_conn *failed, rpc_conn **out)
{
    int rc = 0;
    pthread_mutex_lock(&fs->mds_lock);
    if (fs->mds && (fs->mds == failed || rpc_conn_broken(fs->mds))) {
        if (fs->mds == failed)
            log_warn("libdepfs: connection to the MDS %s lost, reconnecting", fs->cfg.mds_address);
        else /* closed between calls: the MDS closes connections idle for idle_timeout_ms */
            log_info("libdepfs: connection to the MDS %s was closed, reconnecting",
                     fs->cfg.mds_address);
        dc_retire_conn(fs, fs->mds);
        fs->mds = NULL;
    }
    uint64_t deadline_ms = dc_now_ms() + fs->cfg.request_timeout_ms;
    while (!fs->mds) {
        rc = rpc_conn_open(fs->cfg.transport, fs->cfg.mds_address, &fs->limits,
                           (int)fs->cfg.connect_timeout_ms, &fs->mds_creds, &fs->mds);
        if (rc == -EACCES || rc == -EKEYREJECTED)
            break; /* refused: retrying changes nothing */
        if (rc == 0)
            break;
        fs->mds = NULL;
        if (dc_now_ms() + DC_MDS_RECONNECT_PAUSE_MS >= deadline_ms)
            break;
        clock_sleep_ms(DC_MDS_RECONNECT_PAUSE_MS);
    }
    *out = fs->mds;
    pthread_mutex_unlock(&fs->mds_lock);
    if (!*out) {
        if (rpc_conn_open_error()[0])
            dc_set_error("cannot connect to the MDS: %s", rpc_conn_open_error());
        else
            dc_set_error("cannot connect to the MDS at %s: %s", fs->cfg.mds_address,
                         strerror(-rc));
        return rc ? rc : -ECONNREFUSED;
    }
    return 0;
}

bool dc_names_via_ok(depfs_t *fs, uint64_t via)
{
    uint64_t tag;
    return via != 0 && (!fs->handles_on || via == WIRE_ROOT_INO ||
                        dc_handles_get(&fs->handles, via, &tag));
}

/* The inodes a request through the kernel's names reached by those names
 * (MdsRequest.names_epoch): the parents it names, and a linked file. OPEN
 * says it itself (api_open.c: only an open through a name). */
static unsigned names_reached(Depfs__MdsOp op, const Depfs__MdsRequest *r, uint64_t ino[3])
{
    unsigned n = 0;
    if (!wire_mds_op_through_names((uint16_t)op) || op == DEPFS__MDS_OP__MDS_OPEN)
        return 0;
    if (op == DEPFS__MDS_OP__MDS_LINK && r->has_ino)
        ino[n++] = r->ino;
    if (r->has_parent)
        ino[n++] = r->parent;
    if (r->has_new_parent)
        ino[n++] = r->new_parent;
    return n;
}

/* The kernel caller this thread's requests serve (depfs_act_caller). */
static __thread uint64_t acting_caller;

void depfs_act_caller(uint64_t caller)
{
    acting_caller = caller;
}

void depfs_names_unpass(depfs_t *fs, uint64_t ino)
{
    if (fs && fs->count_lookups)
        dc_names_pass_forget(&fs->names_pass, ino, acting_caller);
}

/* The names epoch to show for ino (seen: what the kernel's lookups of it
 * gave) is raised to the MDS's at an earlier refusal of this thread's
 * caller through it (core_names_pass.h). */
static void names_epoch_passed(depfs_t *fs, uint64_t ino, dc_names_seen *seen)
{
    uint64_t passed;
    if (dc_names_pass_epoch(&fs->names_pass, ino, acting_caller, seen->epoch, &passed))
        seen->epoch = passed;
}

/* A mount whose kernel caches names (count_lookups) shows the oldest names
 * epoch it had of the inodes the request reached through them: a
 * directory renamed since, and the MDS refuses (ESTALE), so the kernel
 * walks the path again (mds/namespace.h mds_ns_names_epoch). */
static void names_epoch_stamp(depfs_t *fs, Depfs__MdsOp op, Depfs__MdsRequest *r)
{
    uint64_t ino[3];
    unsigned n = fs->count_lookups ? names_reached(op, r, ino) : 0;
    for (unsigned i = 0; i < n; i++) {
        dc_names_seen seen;
        if (!dc_handles_names(&fs->handles, ino[i], &seen) || !seen.has_epoch)
            continue;
        names_epoch_passed(fs, ino[i], &seen);
        if (!r->has_names_epoch || seen.epoch < r->names_epoch)
            r->names_epoch = seen.epoch;
        r->has_names_epoch = true;
        if (op == DEPFS__MDS_OP__MDS_LINK && ino[i] == r->ino && dc_names_via_ok(fs, seen.via)) {
            r->has_names_via = true; /* the linked file: through its directory's name */
            r->names_via = seen.via;
        }
    }
}

void dc_names_epoch_for_open(depfs_t *fs, uint64_t ino, Depfs__MdsRequest *r)
{
    dc_names_seen seen;
    if (!fs->count_lookups || !dc_handles_names(&fs->handles, ino, &seen))
        return;
    r->has_name_gen = seen.has_name_gen;
    r->name_gen = seen.name_gen;
    if (!seen.has_epoch)
        return;
    names_epoch_passed(fs, ino, &seen);
    /* this caller went on through the file's directory after a refusal:
     * weighed against what the kernel's names of the directory show */
    dc_names_seen dir;
    if (dc_handles_names(&fs->handles, seen.via, &dir) && dir.has_epoch) {
        names_epoch_passed(fs, seen.via, &dir);
        if (dir.epoch > seen.epoch)
            seen.epoch = dir.epoch;
    }
    r->has_names_epoch = true;
    r->names_epoch = seen.epoch;
    r->has_names_via = dc_names_via_ok(fs, seen.via);
    r->names_via = seen.via;
}

/* Refused for an old names epoch: the caller refused goes on through the
 * inodes it named, and through an opened file's directory, at the MDS's
 * epoch (a caller the kernel does not walk again, a process in a moved
 * directory, goes on as it would locally); any other caller through them
 * is refused too, and its kernel's walk again finds the new path
 * (core_names_pass.h). */
static void names_epoch_refused(depfs_t *fs, Depfs__MdsOp op, const Depfs__MdsRequest *r,
                                const Depfs__MdsReply *rep)
{
    if (!fs->count_lookups || rep->err != ESTALE || !rep->has_names_epoch)
        return;
    uint64_t ino[4];
    unsigned n = names_reached(op, r, ino);
    if (op == DEPFS__MDS_OP__MDS_OPEN && r->has_ino)
        ino[n++] = r->ino;
    if (op == DEPFS__MDS_OP__MDS_OPEN && r->has_names_via)
        ino[n++] = r->names_via;
    for (unsigned i = 0; i < n; i++)
        dc_names_pass_note(&fs->names_pass, ino[i], acting_caller, rep->names_epoch);
}

int dc_mds_call(depfs_t *fs, Depfs__MdsOp op, const Depfs__MdsRequest *req, Depfs__MdsReply **reply)
{
    assert(fs && req && reply);
    *reply = NULL;
    Depfs__MdsRequest r = *req; /* shallow: the client id and credentials are added */
    uint32_t groups[DEPFS_MAX_GROUPS];
    if (fs->client_id) {
        r.has_client_id = 1;
        r.client_id = fs->client_id;
    }
    if (!r.has_uid) /* every request says whom it acts for (mds/caller.h) */
        dc_req_cred(&r, NULL, groups);
    names_epoch_stamp(fs, op, &r);
    if (fs->handles_on) /* every inode it names, with its tag (mds/handles.h) */
        dc_handles_tag_request(&fs->handles, &r, WIRE_ROOT_INO);
    rpc_conn *failed = NULL;
    int rc = -EIO;
    uint64_t dirattr_gen = dc_dirattr_gen(fs);
    for (unsigned attempt = 0; attempt < DC_MDS_ATTEMPTS; attempt++) {
        rpc_conn *c;
        rc = mds_conn_get(fs, failed, &c);
        if (rc < 0)
            continue;
        ProtobufCMessage *m = NULL;
        rc = rpc_call_msg(c, (uint16_t)op, &r.base, NULL, 0, NULL, 0, (int)fs->cfg.request_timeout_ms,
                          &depfs__mds_reply__descriptor, &m, NULL);
        if (rc == 0) {
            *reply = (Depfs__MdsReply *)m;
            break;
        }
        /* a timeout keeps the connection: the MDS may only be slow */
        if (rpc_err_is_transport(rc) || rpc_conn_broken(c))
            failed = c;
        log_debug("libdepfs: %s attempt %u failed: %s", mds_op_name(op), attempt + 1, strerror(-rc));
    }
    dc_dirattr_after_call(fs, op, &r, rc == 0 ? *reply : NULL, dirattr_gen);
    dc_sa_after_call(fs, op, &r, rc == 0 ? *reply : NULL);
    if (rc < 0) {
        dc_set_error("%s: MDS %s: %s", mds_op_name(op), fs->cfg.mds_address, strerror(-rc));
        return rc;
    }
    Depfs__MdsReply *rep = *reply;
    if (rep->err == 0 && fs->handles_on)
        dc_handles_learn_reply(&fs->handles, rep);
    if (rep->err != 0) {
        int err = rep->err > 0 ? rep->err : -rep->err;
        names_epoch_refused(fs, op, &r, rep);
        if (rep->message && rep->message[0])
            dc_set_error("%s", rep->message);
        else
            dc_set_error("%s: %s", mds_op_name(op), strerror(err));
        return -err;
    }
    return 0;
}


/* ------------------------------------------------------ inode handles */

/* What Attr a says of the names of its inode, named in directory via. */
static dc_names_seen names_of(const Depfs__Attr *a, uint64_t via)
{
    return (dc_names_seen){ .has_name_gen = a->has_name_gen, .name_gen = a->name_gen,
                            .has_epoch = a->has_names_epoch, .epoch = a->names_epoch,
                            .via = via };
}

void dc_handle_counted(depfs_t *fs, const Depfs__Attr *a, uint64_t via)
{
    if (!fs->count_lookups)
        return;
    dc_names_seen seen = names_of(a, via);
    if (dc_handles_hold(&fs->handles, a->ino, a->has_tag ? &a->tag : NULL, &seen, 1) &&
        fs->names_moved)
        fs->names_moved(fs->names_moved_arg, a->ino); /* the caller's older names of it */
}

void dc_handle_renamed(depfs_t *fs, const Depfs__Attr *a, uint64_t via)
{
    if (!fs->count_lookups)
        return;
    dc_names_seen seen = names_of(a, via);
    dc_handles_note_names(&fs->handles, a->ino, &seen);
}

void dc_handle_pin(depfs_t *fs, uint64_t ino)
{
    if (fs->handles_on || fs->count_lookups)
        dc_handles_pin(&fs->handles, ino);
}

void dc_handle_unpin(depfs_t *fs, uint64_t ino)
{
    if (fs->handles_on || fs->count_lookups)
        dc_handles_unpin(&fs->handles, ino);
}

void depfs_forget(depfs_t *fs, uint64_t ino, uint64_t nlookup)
{
    if (fs && fs->count_lookups)
        dc_handles_forget(&fs->handles, ino, nlookup);
}

/* ------------------------------------------------ requests and replies */

/* What depfs_act_as set for this thread. */
static __thread dc_acting acting;

void dc_act_set(const depfs_cred *cr)
{
    acting.set = cr != NULL;
    if (cr) {
        acting.cred = *cr;
        if (acting.cred.ngroups > DEPFS_MAX_GROUPS)
            acting.cred.ngroups = DEPFS_MAX_GROUPS;
    }
}

int depfs_act_as(const depfs_cred *cr)
{
    if (cr && cr->ngroups > DEPFS_MAX_GROUPS) {
        dc_set_error("%u groups > max %u", cr->ngroups, DEPFS_MAX_GROUPS);
        return -EINVAL;
    }
    dc_act_set(cr);
    return 0;
}

void dc_act_push(const depfs_cred *cr, dc_acting *saved)
{
    *saved = acting;
    dc_act_set(cr);
}

void dc_act_pop(const dc_acting *saved)
{
    acting = *saved;
}

void dc_cred_current(depfs_cred *out)
{
    if (acting.set) {
        *out = acting.cred;
        return;
    }
    out->uid = geteuid();
    out->gid = getegid();
    int n = getgroups(DEPFS_MAX_GROUPS, out->groups);
    out->ngroups = n > 0 ? (unsigned)n : 0;
}

void dc_req_cred(Depfs__MdsRequest *req, const depfs_cred *cr, uint32_t groups[DEPFS_MAX_GROUPS])
{
    depfs_cred own;
    if (!cr) {
        dc_cred_current(&own);
        cr = &own;
    }
    req->has_uid = req->has_gid = 1;
    req->uid = cr->uid;
    req->gid = cr->gid;
    unsigned n = cr->ngroups < DEPFS_MAX_GROUPS ? cr->ngroups : DEPFS_MAX_GROUPS;
    for (unsigned i = 0; i < n; i++)
        groups[i] = cr->groups[i];
    req->n_groups = n;
    req->groups = groups;
}



ssize_t dc_xattr_get(depfs_t *fs, uint64_t ino, const char *name, void *value, size_t size)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_ino = 1;
    req.ino = ino;
    req.xattr_name = (char *)name;
    Depfs__MdsReply *rep = NULL;
    ssize_t ret = dc_mds_call(fs, DEPFS__MDS_OP__MDS_GETXATTR, &req, &rep);
    if (ret < 0)
        goto out;
    size_t len = rep->has_xattr_value ? rep->xattr_value.len : 0;
    if (size == 0) {
        ret = (ssize_t)len;
    } else if (len > size) {
        dc_set_error("xattr value of %zu bytes does not fit %zu", len, size);
        ret = -ERANGE;
    } else {
        if (len)
            memcpy(value, rep->xattr_value.data, len);
        ret = (ssize_t)len;
    }
out:
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return ret;
}
