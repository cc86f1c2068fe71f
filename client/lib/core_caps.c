/* core_caps.c - libdepfs core: the I/O capabilities (common/auth.h) this
 * client holds, one per file, in a table that evicts only entries of files
 * not open here (core.h DC_CAPS_SLOTS_*).
 *
 * Only a client that shows the I/O servers a ticket (a user proved by
 * MUNGE) needs them; the cluster key's holders and auth off need none.
 * They come with the MDS's replies that open a file (MDS_OPEN, MDS_CREATE)
 * or remove its last link (MDS_UNLINK, MDS_RENAME: write, for the strip
 * files), and are kept per file rather than per handle because the
 * engines, like the write-behind flush, work per inode; a file's entry
 * keeps the broadest fresh rights it was given. The fan-out asks for one
 * covering a request's needs (common/io_caps.h) before sending it:
 *   - fresh (more than half its life left): used as it is;
 *   - in its second half: renewed by MDS_OPEN with renew_capability (same
 *     rights, no new permission check: the open was checked, and the file
 *     may be unlinked by now and still open here); if that fails the old
 *     one serves while it lasts;
 *   - missing, expired or short of rights (a path without an open handle:
 *     truncate, remove, scrub, repair; an entry of a file not open here
 *     that made room for another; a reader that repairs a damaged unit):
 *     MDS_OPEN for that access, which checks the caller's permission
 *     (write for WRITE) like any open.
 * So a file not open here and left alone for longer than AUTH_CAP_TTL_S
 * is opened again at its next request, with a fresh permission check; the
 * entries of files open here stay until their last close (the keeper,
 * core_keeper.c, renews them), however many there are.
 *
 * Holds (mds/holds.h): every open the MDS lets in, and every renewal,
 * holds the file for a capability's life, so that a file unlinked while
 * open keeps its strip files. A client that needs no capabilities keeps
 * its holds the same way: the open's is noted here (an entry without
 * rights or bytes, kept while the file is open here) and renewed in its
 * second half at the next request (MDS_OPEN with renew_hold), or by the
 * keeper (core_keeper.c) when no request comes: an idle handle keeps its
 * file as long as it is open. The last
 * close here gives the hold back (MDS_RELEASE, batched by the releaser,
 * core_releases.c) and drops the entry, so the file's strip files may go
 * soon after; files not open here (scrub,
 * repairs, the purge drainer) have no entry and hold nothing. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core.h"
#include "ino_hash.h"
#include "log.h"

_Static_assert((DC_CAPS_SLOTS_MIN & (DC_CAPS_SLOTS_MIN - 1)) == 0 &&
                   (DC_CAPS_SLOTS_MAX & (DC_CAPS_SLOTS_MAX - 1)) == 0 &&
                   DC_CAPS_SLOTS_MIN <= DC_CAPS_SLOTS_MAX,
               "the table's sizes are powers of two");
_Static_assert(DC_CAPS_PROBE <= DC_CAPS_SLOTS_MIN, "probe window within the table");

/* A renewal is due once less than half the life is left; one that failed
 * is tried again this much later, not on every request meanwhile. */
#define DC_CAP_RENEW_LEFT_S (AUTH_CAP_TTL_S / 2u)
#define DC_CAP_RENEW_RETRY_S 30u

static uint64_t now_s(void)
{
    return (uint64_t)time(NULL);
}

static bool caps_wanted(depfs_t *fs)
{
    pthread_mutex_lock(&fs->io_creds_lock);
    bool ticket = fs->io_creds.method == AUTH_METHOD_TICKET;
    pthread_mutex_unlock(&fs->io_creds_lock);
    return ticket;
}

static unsigned slot_start(uint64_t ino, unsigned slots)
{
    return (unsigned)(ino_hash(ino) >> 32) & (slots - 1u);
}

static dc_cap *window_slot(dc_cap *tab, unsigned slots, uint64_t ino, unsigned i)
{
    return &tab[(slot_start(ino, slots) + i) & (slots - 1u)];
}

/* ino's entry, or NULL (caller holds caps_lock). */
static dc_cap *slot_find(depfs_t *fs, uint64_t ino)
{
    for (unsigned i = 0; i < DC_CAPS_PROBE; i++) {
        dc_cap *e = window_slot(fs->caps, fs->caps_slots, ino, i);
        if (e->ino == ino)
            return e;
    }
    return NULL;
}

/* A slot for a new entry of ino in tab: a free or expired one, else the
 * entry expiring first among those of files not open here; NULL when
 * every entry of the window is of a file open here. */
static dc_cap *window_room(dc_cap *tab, unsigned slots, uint64_t ino, uint64_t now)
{
    dc_cap *victim = NULL;
    for (unsigned i = 0; i < DC_CAPS_PROBE; i++) {
        dc_cap *e = window_slot(tab, slots, ino, i);
        if (e->ino == 0 || (!e->open_here && e->expires_s <= now))
            return e;
        if (!e->open_here && (!victim || e->expires_s < victim->expires_s))
            victim = e;
    }
    return victim;
}

/* The table at twice its size or more, with every entry of a file open
 * here and every live one that finds room (caller holds caps_lock).
 * -ENOSPC at DC_CAPS_SLOTS_MAX, -ENOMEM. */
static int caps_grow(depfs_t *fs, uint64_t now)
{
    for (unsigned slots = fs->caps_slots * 2u; slots <= DC_CAPS_SLOTS_MAX; slots *= 2u) {
        dc_cap *tab = calloc(slots, sizeof(*tab));
        if (tab == NULL)
            return -ENOMEM;
        bool placed_all = true;
        for (unsigned i = 0; i < fs->caps_slots && placed_all; i++) {
            const dc_cap *old = &fs->caps[i];
            if (old->ino == 0 || (!old->open_here && old->expires_s <= now))
                continue;
            dc_cap *e = window_room(tab, slots, old->ino, now);
            if (e)
                *e = *old;
            else
                placed_all = !old->open_here; /* a cached one may go */
        }
        if (placed_all) {
            free(fs->caps);
            fs->caps = tab;
            fs->caps_slots = slots;
            return 0;
        }
        free(tab);
    }
    return -ENOSPC;
}

/* Where ino's entry goes: its own, else room in its window, growing the
 * table when the window holds only files open here; NULL when it cannot
 * grow (caller holds caps_lock). */
static dc_cap *slot_for(depfs_t *fs, uint64_t ino, uint64_t now)
{
    dc_cap *e = slot_find(fs, ino);
    if (e)
        return e;
    e = window_room(fs->caps, fs->caps_slots, ino, now);
    if (e)
        return e;
    int rc = caps_grow(fs, now);
    if (rc < 0) {
        log_warn("libdepfs: no room to keep the capability of inode %llu (%u entries, all "
                 "of open files): %s", (unsigned long long)ino, fs->caps_slots, strerror(-rc));
        return NULL;
    }
    return window_room(fs->caps, fs->caps_slots, ino, now);
}

int dc_caps_init(depfs_t *fs)
{
    fs->caps = calloc(DC_CAPS_SLOTS_MIN, sizeof(*fs->caps));
    if (fs->caps == NULL)
        return -ENOMEM;
    fs->caps_slots = DC_CAPS_SLOTS_MIN;
    return 0;
}

void dc_caps_destroy(depfs_t *fs)
{
    if (fs->caps)
        auth_wipe(fs->caps, (size_t)fs->caps_slots * sizeof(*fs->caps));
    free(fs->caps);
    fs->caps = NULL;
    fs->caps_slots = 0;
}

/* The reply's capability for ino as an entry; false when it has none. */
static bool cap_from_reply(uint64_t ino, const Depfs__MdsReply *rep, dc_cap *out)
{
    auth_cap c;
    if (!rep || !rep->has_capability ||
        auth_cap_peek(rep->capability.data, rep->capability.len, &c) < 0 || c.file_id != ino ||
        c.rights == 0)
        return false;
    memset(out, 0, sizeof(*out));
    out->ino = ino;
    out->rights = c.rights;
    out->expires_s = c.expires_s;
    out->hold_gen = rep->has_hold_gen ? rep->hold_gen : 0;
    memcpy(out->bytes, rep->capability.data, AUTH_CAP_BYTES);
    return true;
}

/* Keeps c as ino's entry; open_here (take) marks it open here, and
 * for_write opened for writing; else the entry keeps its marks. A fresh
 * entry with rights c lacks stays as it is. */
static void store(depfs_t *fs, const dc_cap *c, bool open_here, bool for_write)
{
    uint64_t now = now_s();
    pthread_mutex_lock(&fs->caps_lock);
    dc_cap *e = slot_for(fs, c->ino, now);
    if (e) {
        bool same = e->ino == c->ino;
        bool pinned = open_here || (same && e->open_here);
        bool writes = (open_here && for_write) || (same && e->open_for_write);
        bool keep_old = same && e->expires_s > now + DC_CAP_RENEW_LEFT_S &&
                        !auth_cap_covers(c->rights, e->rights);
        uint64_t gen = same && e->hold_gen > c->hold_gen ? e->hold_gen : c->hold_gen;
        if (!keep_old)
            *e = *c;
        e->open_here = pinned;
        e->open_for_write = writes;
        e->hold_gen = gen;
    }
    pthread_mutex_unlock(&fs->caps_lock);
}

/* The MDS's hold of ino by a client that needs no capabilities: an entry
 * with no rights, expiring with the hold. */
static void store_hold(depfs_t *fs, uint64_t ino, uint64_t now, const Depfs__MdsReply *rep,
                       bool open_here, bool for_write)
{
    dc_cap c = { .ino = ino, .expires_s = now + AUTH_CAP_TTL_S,
                 .hold_gen = rep && rep->has_hold_gen ? rep->hold_gen : 0 };
    store(fs, &c, open_here, for_write);
}

void dc_cap_take(depfs_t *fs, uint64_t ino, const Depfs__MdsReply *rep, bool for_write)
{
    dc_cap c;
    if (!caps_wanted(fs))
        store_hold(fs, ino, now_s(), rep, true, for_write); /* the open's hold */
    else if (cap_from_reply(ino, rep, &c))
        store(fs, &c, true, for_write);
}

void dc_cap_release(depfs_t *fs, uint64_t ino, uint64_t hold_gen)
{
    bool holds_only = !caps_wanted(fs);
    pthread_mutex_lock(&fs->caps_lock);
    dc_cap *e = slot_find(fs, ino);
    if (e && e->hold_gen > hold_gen) /* a renewal's */
        hold_gen = e->hold_gen;
    if (e && holds_only) /* the hold's entry: no renewals any more */
        memset(e, 0, sizeof(*e));
    else if (e) /* a capability stays cached, evictable */
        e->open_here = e->open_for_write = false;
    pthread_mutex_unlock(&fs->caps_lock);
    dc_release_queue(fs, ino, hold_gen);
}

/* A renewal of ino's capability failed: hold off the next one. */
static void renew_failed(depfs_t *fs, uint64_t ino, uint64_t now)
{
    pthread_mutex_lock(&fs->caps_lock);
    dc_cap *e = slot_find(fs, ino);
    if (e)
        e->renew_after_s = now + DC_CAP_RENEW_RETRY_S;
    pthread_mutex_unlock(&fs->caps_lock);
}

/* MDS_OPEN for a new capability: renewing old, or (old NULL) opening ino
 * for the access need asks, permission checked. 0 and *out. */
static int ask_mds(depfs_t *fs, uint64_t ino, uint32_t need, const dc_cap *old, dc_cap *out)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep = NULL;
    req.has_ino = true;
    req.ino = ino;
    if (old) {
        req.has_renew_capability = true;
        req.renew_capability = (ProtobufCBinaryData){ AUTH_CAP_BYTES, (uint8_t *)old->bytes };
    } else {
        req.has_flags = true;
        req.flags = (need & AUTH_CAP_WRITE) ? O_WRONLY : O_RDONLY;
    }
    int rc = dc_mds_call_ticketed(fs, DEPFS__MDS_OP__MDS_OPEN, &req, &rep);
    if (rc == 0 && !cap_from_reply(ino, rep, out)) {
        dc_set_error("inode %llu: the MDS gave no I/O capability", (unsigned long long)ino);
        rc = -EPROTO;
    }
    if (rc == 0)
        store(fs, out, false, false);
    else if (rep && rep->message)
        dc_set_error("inode %llu: no I/O capability for %s: %s", (unsigned long long)ino,
                     (need & AUTH_CAP_WRITE) ? "writing" : "reading", rep->message);
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rc;
}

/* A client that needs no capabilities: its hold of ino, open here (an
 * entry), renewed in its second half (mds/holds.h). A failure is retried
 * later; the request goes on (its I/O needs no capability). */
static void renew_hold(depfs_t *fs, uint64_t ino)
{
    uint64_t now = now_s();
    pthread_mutex_lock(&fs->caps_lock);
    const dc_cap *e = slot_find(fs, ino);
    bool due = e && e->expires_s <= now + DC_CAP_RENEW_LEFT_S && e->renew_after_s <= now;
    bool writes = e && e->open_for_write;
    pthread_mutex_unlock(&fs->caps_lock);
    if (!due)
        return;
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep = NULL;
    req.has_ino = req.has_renew_hold = req.renew_hold = true;
    req.ino = ino;
    req.has_flags = true; /* the access of the handles open here */
    req.flags = writes ? O_WRONLY : O_RDONLY;
    int rc = dc_mds_call_ticketed(fs, DEPFS__MDS_OP__MDS_OPEN, &req, &rep);
    if (rc == 0)
        store_hold(fs, ino, now, rep, false, false);
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    if (rc == 0)
        return;
    log_warn("libdepfs: cannot renew the MDS's hold of inode %llu: %s (%s)", (unsigned long long)ino,
             strerror(-rc), depfs_last_error());
    renew_failed(fs, ino, now);
}

void dc_cap_keep(depfs_t *fs, uint64_t ino)
{
    if (!caps_wanted(fs)) {
        renew_hold(fs, ino);
        return;
    }
    pthread_mutex_lock(&fs->caps_lock);
    const dc_cap *e = slot_find(fs, ino);
    uint32_t rights = e ? e->rights : 0;
    pthread_mutex_unlock(&fs->caps_lock);
    /* no entry (the open's reply had none, or the table could not grow):
     * the next request opens the file again, with the permission check of
     * whoever makes it; not here */
    dc_cap out;
    if (rights != 0)
        (void)dc_cap_get(fs, ino, rights, &out); /* renews it when due */
}

int dc_cap_get(depfs_t *fs, uint64_t ino, uint32_t need, dc_cap *out)
{
    memset(out, 0, sizeof(*out));
    if (ino == 0 || need == 0)
        return 0; /* out->ino 0: none to show */
    if (!caps_wanted(fs)) {
        renew_hold(fs, ino);
        return 0;
    }
    uint64_t now = now_s();
    dc_cap have = { 0 };
    pthread_mutex_lock(&fs->caps_lock);
    const dc_cap *e = slot_find(fs, ino);
    if (e)
        have = *e;
    pthread_mutex_unlock(&fs->caps_lock);
    bool usable = have.ino == ino && have.expires_s > now && auth_cap_covers(have.rights, need);
    if (usable && (have.expires_s > now + DC_CAP_RENEW_LEFT_S || have.renew_after_s > now)) {
        *out = have;
        return 0;
    }
    if (usable) {
        int rc = ask_mds(fs, ino, need, &have, out);
        if (rc < 0) {
            log_warn("libdepfs: cannot renew the I/O capability of inode %llu: %s (%s); the "
                     "old one serves until it expires", (unsigned long long)ino, strerror(-rc),
                     depfs_last_error());
            renew_failed(fs, ino, now);
            *out = have;
        }
        return 0;
    }
    return ask_mds(fs, ino, need, NULL, out);
}
