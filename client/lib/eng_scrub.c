/* eng_scrub.c - depfs_scrub_ino: the parity consistency check.
 *
 * For every stripe up to the file size, read all n units (whole stripe
 * units; a batch of stripes per request, under LOCK+READ of those stripes),
 * re-encode the parity from the data units and compare with the stored
 * parity. With repair, bad parity is rewritten (WRITE+UNLOCK); otherwise
 * the locks are released with IO_UNLOCK. Stripes with any unit unreadable
 * are counted, not guessed about. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "engines.h"
#include "log.h"

typedef struct dc_scrub {
    depfs_t *fs;
    uint64_t ino;
    layout lay;
    const codec *cd;
    bool repair;
    uint64_t batch;              /* stripes per batch */
    uint8_t *units;              /* n positions x batch x su, position-major */
    uint8_t *parity;             /* recomputed parity: batch x (n-k) x su */
    dc_req *reqs;                /* reads (and the locks they took) */
    dc_req *wreqs;               /* parity rewrites / unlocks */
    depfs_scrub_report *rep;
} dc_scrub;

static uint8_t *dc_scrub_unit(const dc_scrub *sc, uint64_t first, uint64_t s, unsigned u)
{
    unsigned pos = layout_unit_pos(&sc->lay, s, u);
    return sc->units + ((uint64_t)pos * sc->batch + (s - first)) * sc->lay.su;
}

static uint8_t *dc_scrub_parity(const dc_scrub *sc, uint64_t first, uint64_t s, unsigned p)
{
    unsigned m = sc->lay.n - sc->lay.k;
    return sc->parity + ((s - first) * m + p) * (uint64_t)sc->lay.su;
}

/* Read the batch under its locks; 0, or -EIO when some unit is unreadable
 * (locks already released then). */
static int dc_scrub_read(dc_scrub *sc, uint64_t first, uint64_t count)
{
    const layout *lay = &sc->lay;
    for (unsigned attempt = 0;; attempt++) {
        uint64_t op = dc_next_op_id(sc->fs);
        memset(sc->reqs, 0, sizeof(dc_req) * lay->n);
        for (unsigned p = 0; p < lay->n; p++) {
            dc_req *r = &sc->reqs[p];
            dc_req_init(r, lay, p, DEPFS__IO_OP__IO_READ);
            int rc = dc_req_add(r, layout_local_offset(lay, first), count * lay->su,
                                sc->units + (uint64_t)p * sc->batch * lay->su);
            assert(rc == 0);
            (void)rc;
            if (sc->fs->ignore_locks)
                r->ignore_locks = true;
            else
                dc_req_set_lock(r, first, count, depfs_client_id(sc->fs), op);
        }
        dc_io_run(sc->fs, sc->ino, sc->reqs, lay->n);
        bool nack = false, failed = false;
        for (unsigned p = 0; p < lay->n; p++) {
            if (sc->reqs[p].result == -EAGAIN)
                nack = true;
            else if (sc->reqs[p].result != 0)
                failed = true;
        }
        if (!nack && !failed)
            return 0;
        dc_io_unlock_granted(sc->fs, sc->ino, sc->reqs, lay->n);
        if (failed)
            return -EIO;
        if (attempt + 1 >= DC_LOCK_ATTEMPTS_MAX) {
            dc_set_error("scrub of inode %llu: stripes %llu.. stayed locked",
                         (unsigned long long)sc->ino, (unsigned long long)first);
            return -EBUSY;
        }
        dc_lock_backoff(attempt);
    }
}

/* Compare every stripe of the batch; queue parity rewrites in wreqs. */
static void dc_scrub_check(dc_scrub *sc, uint64_t first, uint64_t count)
{
    const layout *lay = &sc->lay;
    unsigned k = lay->k, m = lay->n - lay->k;
    for (uint64_t s = first; s < first + count; s++) {
        uint8_t *data[LAYOUT_MAX_N], *par[LAYOUT_MAX_N];
        for (unsigned u = 0; u < k; u++)
            data[u] = dc_scrub_unit(sc, first, s, u);
        for (unsigned p = 0; p < m; p++)
            par[p] = dc_scrub_parity(sc, first, s, p);
        codec_encode(sc->cd, lay->su, data, par);
        bool bad = false;
        for (unsigned p = 0; p < m && !bad; p++)
            bad = memcmp(par[p], dc_scrub_unit(sc, first, s, k + p), lay->su) != 0;
        sc->rep->stripes_checked++;
        if (!bad)
            continue;
        if (sc->rep->stripes_bad++ == 0)
            sc->rep->first_bad_stripe = s;
        log_warn("scrub: inode %llu stripe %llu: parity does not match data%s",
                 (unsigned long long)sc->ino, (unsigned long long)s,
                 sc->repair ? " (repairing)" : "");
        if (!sc->repair)
            continue;
        for (unsigned p = 0; p < m; p++) {
            unsigned pos = layout_unit_pos(lay, s, k + p);
            dc_req *w = &sc->wreqs[pos];
            if (!w->active)
                dc_req_init(w, lay, pos, DEPFS__IO_OP__IO_WRITE);
            int rc = dc_req_add(w, layout_local_offset(lay, s), lay->su, par[p]);
            assert(rc == 0);
            (void)rc;
        }
    }
}

/* Rewrite queued parity (WRITE+UNLOCK) and unlock the other servers. */
static int dc_scrub_finish(dc_scrub *sc, uint64_t first, uint64_t count)
{
    const layout *lay = &sc->lay;
    for (unsigned p = 0; p < lay->n; p++) {
        dc_req *w = &sc->wreqs[p];
        const dc_req *r = &sc->reqs[p];
        if (!w->active) {
            if (sc->fs->ignore_locks)
                continue;
            dc_req_init(w, lay, p, DEPFS__IO_OP__IO_UNLOCK);
        }
        if (sc->fs->ignore_locks) {
            w->ignore_locks = true;
        } else {
            assert(r->has_lock && r->lock.first_stripe == first && r->lock.stripe_count == count);
            w->has_lock = true;
            w->lock = r->lock;
            w->unlock = true;
        }
        w->sync = true;
    }
    dc_io_run(sc->fs, sc->ino, sc->wreqs, lay->n);
    int rc = 0;
    for (unsigned p = 0; p < lay->n; p++)
        if (sc->wreqs[p].active && sc->wreqs[p].op == DEPFS__IO_OP__IO_WRITE &&
            sc->wreqs[p].result < 0 && rc == 0)
            rc = sc->wreqs[p].result;
    if (rc < 0)
        dc_set_error("scrub of inode %llu: rewriting parity failed: %s",
                     (unsigned long long)sc->ino, strerror(-rc));
    return rc;
}

static int dc_scrub_batch(dc_scrub *sc, uint64_t first, uint64_t count)
{
    int rc = dc_scrub_read(sc, first, count);
    if (rc == -EIO) {
        sc->rep->stripes_checked += count;
        sc->rep->stripes_unreadable += count;
        log_warn("scrub: inode %llu stripes %llu..%llu: a unit could not be read",
                 (unsigned long long)sc->ino, (unsigned long long)first,
                 (unsigned long long)(first + count - 1));
        return 0;
    }
    if (rc < 0)
        return rc;
    memset(sc->wreqs, 0, sizeof(dc_req) * sc->lay.n);
    dc_scrub_check(sc, first, count);
    return dc_scrub_finish(sc, first, count);
}

/* Size and layout of the file, flushing this client's buffered writes. */
static int dc_scrub_target(depfs_t *fs, uint64_t ino, layout *lay, uint64_t *size)
{
    Depfs__MdsReply *rep = NULL;
    int rc = dc_getattr_rep(fs, ino, &rep);
    if (rc < 0)
        goto out;
    if (!S_ISREG(rep->attr->mode) || rep->layout == NULL) {
        dc_set_error("scrub: inode %llu is not a regular file", (unsigned long long)ino);
        rc = -EINVAL;
        goto out;
    }
    dc_layout_from_pb(rep->layout, lay);
    char why[128];
    if (layout_validate(lay, why, sizeof why) < 0) {
        dc_set_error("scrub: inode %llu has a bad layout: %s", (unsigned long long)ino, why);
        rc = -EINVAL;
        goto out;
    }
    *size = rep->attr->size;
    dc_inode *in = dc_inode_find(fs, ino);
    if (in != NULL) {
        rc = dc_data_flush(fs, in);
        if (rc < 0)
            goto out;
        pthread_mutex_lock(&in->lock);
        if (in->size > *size)
            *size = in->size;
        pthread_mutex_unlock(&in->lock);
    }
out:
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rc;
}

int depfs_scrub_ino(depfs_t *fs, uint64_t ino, bool repair, depfs_scrub_report *rep)
{
    if (fs == NULL || rep == NULL)
        return -EINVAL;
    memset(rep, 0, sizeof *rep);
    dc_scrub sc = {.fs = fs, .ino = ino, .repair = repair, .rep = rep};
    uint64_t size = 0;
    int rc = dc_scrub_target(fs, ino, &sc.lay, &size);
    if (rc < 0)
        return rc;
    sc.cd = dc_codec(fs, sc.lay.n, sc.lay.k, sc.lay.codec_version);
    if (sc.cd == NULL)
        return -EINVAL;
    uint64_t sb = layout_stripe_bytes(&sc.lay);
    uint64_t nstripes = (size + sb - 1) / sb;
    sc.batch = dc_round_stripes(fs, &sc.lay);
    if (sc.batch > nstripes)
        sc.batch = nstripes ? nstripes : 1;
    uint64_t m = sc.lay.n - sc.lay.k;
    sc.units = malloc((uint64_t)sc.lay.n * sc.batch * sc.lay.su);
    sc.parity = malloc((m ? m : 1) * sc.batch * sc.lay.su);
    sc.reqs = calloc(sc.lay.n, sizeof *sc.reqs);
    sc.wreqs = calloc(sc.lay.n, sizeof *sc.wreqs);
    if (sc.units == NULL || sc.parity == NULL || sc.reqs == NULL || sc.wreqs == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    for (uint64_t s = 0; s < nstripes && rc == 0; s += sc.batch) {
        uint64_t count = nstripes - s < sc.batch ? nstripes - s : sc.batch;
        rc = dc_scrub_batch(&sc, s, count);
    }
out:
    free(sc.wreqs);
    free(sc.reqs);
    free(sc.parity);
    free(sc.units);
    return rc;
}
