/* recover_purge.c - libdepfs recovery operation: one pass of the purge
 * queue's drainer (depfs_purge_pass, depfs_admin.h). The MDS lists the
 * unlinked files no handle may use any more (MDS_PURGE_LIST); each one's
 * strip files are removed on all n servers (dc_data_remove: IO_REMOVE is
 * idempotent, a strip file already gone is done; a REBUILDING server is
 * asked too, since a full disk can keep it from rejoining until its
 * garbage goes; a DOWN one keeps the entry queued), and only then are the
 * entries of those that went dropped, all in one MDS commit
 * (MDS_PURGE_DONE), so a crash anywhere leaves the entries for the next
 * pass and never a strip file without one. */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "recover.h"
#include "log.h"
#include "wire_check.h"

#define PURGE_WHY_BYTES 128u

/* MDS_PURGE_LIST from *cursor: the reply (caller frees). */
static int purge_list(depfs_t *fs, unsigned max_files, uint64_t cursor, Depfs__MdsReply **rep)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_cookie = req.has_max_entries = true;
    req.cookie = cursor;
    req.max_entries = max_files;
    return dc_mds_call(fs, DEPFS__MDS_OP__MDS_PURGE_LIST, &req, rep);
}

/* MDS_PURGE_DONE of inos[0..n): how many entries the MDS dropped. */
static int purge_done(depfs_t *fs, uint64_t *inos, size_t n, unsigned *dropped)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep = NULL;
    assert(n > 0 && n <= WIRE_PURGE_LIST_MAX);
    req.n_purge_inos = n;
    req.purge_inos = inos;
    int rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_PURGE_DONE, &req, &rep);
    if (rc == 0 && (!rep->has_purge_dropped || rep->purge_dropped > n)) {
        dc_set_error("MDS_PURGE_DONE: %u of %zu entries dropped", rep->purge_dropped, n);
        rc = -EPROTO;
    }
    if (rc == 0)
        *dropped = rep->purge_dropped;
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rc;
}

/* One listed entry's strip files, on all n servers. */
static int purge_strips(depfs_t *fs, const Depfs__PurgeEntry *e)
{
    layout lay;
    char why[PURGE_WHY_BYTES];
    if (!e->layout || e->layout->n > LAYOUT_MAX_N || e->layout->n_servers != e->layout->n) {
        dc_set_error("purge entry %llu without a layout", (unsigned long long)e->ino);
        return -EPROTO;
    }
    dc_layout_from_pb(e->layout, &lay);
    if (layout_validate(&lay, why, sizeof(why)) < 0) {
        dc_set_error("purge entry %llu has a bad layout: %s", (unsigned long long)e->ino, why);
        return -EPROTO;
    }
    return dc_data_remove(fs, e->ino, &lay, dc_reachable_mask(fs, &lay));
}

int depfs_purge_pass(depfs_t *fs, unsigned max_files, uint64_t *cursor, depfs_purge_report *rep)
{
    Depfs__MdsReply *r = NULL;
    uint64_t gone[WIRE_PURGE_LIST_MAX];
    size_t n_gone = 0;
    if (!fs || !cursor || !rep || max_files == 0)
        return -EINVAL;
    memset(rep, 0, sizeof(*rep));
    if (max_files > WIRE_PURGE_LIST_MAX)
        max_files = WIRE_PURGE_LIST_MAX;
    depfs_release_holds(fs);
    int rc = purge_list(fs, max_files, *cursor, &r);
    if (rc < 0)
        goto out;
    if (r->n_purge > max_files || !r->has_purge_cursor) {
        dc_set_error("MDS_PURGE_LIST: %zu entries for %u asked, cursor %s", r->n_purge, max_files,
                     r->has_purge_cursor ? "given" : "missing");
        rc = -EPROTO;
        goto out;
    }
    rep->listed = (unsigned)r->n_purge;
    rep->eof = r->has_eof && r->eof;
    for (size_t i = 0; i < r->n_purge; i++) {
        const Depfs__PurgeEntry *e = r->purge[i];
        int erc = purge_strips(fs, e);
        if (erc == 0) {
            gone[n_gone++] = e->ino;
            rep->bytes += e->size;
        } else {
            rep->failed++;
            log_warn("libdepfs: purge of inode %llu left for a later pass: %s (%s)",
                     (unsigned long long)e->ino, strerror(-erc), depfs_last_error());
        }
    }
    if (n_gone > 0) {
        rc = purge_done(fs, gone, n_gone, &rep->purged);
        if (rc < 0) /* the strip files are gone; the entries go at a later pass */
            goto out;
        rep->failed += (unsigned)n_gone - rep->purged;
    }
    *cursor = rep->eof ? 0 : r->purge_cursor;
out:
    if (r)
        depfs__mds_reply__free_unpacked(r, NULL);
    return rc;
}
