/* eng_scrub.c - depfs_scrub_file: find the bad units of a file and, when
 * asked, rebuild exactly those.
 *
 * Per batch of stripes (one round): read all n units of every stripe
 * (LOCK+READ of the batch on every server). A server whose read fails has
 * its units re-read one stripe at a time, still under the batch's locks, so
 * that only the units that really fail are bad (cause from the error:
 * checksum, I/O error, missing; a server that does not answer: unreachable).
 * Then per stripe (eng_scrub_locate.c): check the units read against each
 * other, locate a wrong one when n-k >= 2 leaves enough of them, and plan
 * the repair. With repair, every bad unit is decoded from k good ones and
 * written back (WRITE+UNLOCK, synced); the other servers are unlocked
 * (IO_UNLOCK). Nothing is ever computed from a unit that was bad or could
 * not be read; an unlocated mismatch with every unit read has its parity
 * rewritten from the data, logged as a suspected bug. Each finding goes to
 * the caller's callback once its stripe's repair was tried.
 *
 * Locks: an ioserver that fails a LOCK+READ's read may drop the lock (the
 * caller got no data) or keep it. Re-reads lock their one stripe again with
 * the same owner (idempotent when still held), repair writes to such a
 * server first lock the batch again (IO_LOCK, same owner), and the end of
 * the batch unlocks the whole batch everywhere, which releases exactly what
 * this owner holds there in either case. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "engines.h"
#include "eng_scrub.h"
#include "log.h"

#define DC_SCRUB_FINDINGS_PER_STRIPE (LAYOUT_MAX_N + 1) /* n units + an unlocated mismatch */

typedef struct dc_scrub_pending {
    depfs_scrub_finding f;
    uint32_t writes;             /* positions whose writes repair it (0: not repaired) */
} dc_scrub_pending;

typedef struct dc_scrub {
    depfs_t *fs;
    uint64_t ino;
    layout lay;
    const codec *cd;
    bool repair;
    depfs_scrub_fn on_finding;
    void *arg;
    uint64_t batch;              /* stripes per batch */
    uint64_t op;                 /* lock owner op id of the current batch */
    uint8_t *units;              /* n positions x batch x su, position-major */
    uint8_t *scratch;            /* n x su: the stripe check decodes into it */
    int *result;                 /* batch x n: read result per (stripe, position) */
    dc_req *reqs;                /* reads (and the locks they took) */
    dc_req *wreqs;               /* repair writes / unlocks */
    int wresult[LAYOUT_MAX_N];   /* per position: 0 when its repair writes are stored */
    dc_scrub_pending *found;     /* this batch's findings */
    size_t n_found;
    depfs_scrub_report *rep;
} dc_scrub;

static uint8_t *dc_scrub_slot(const dc_scrub *sc, uint64_t first, uint64_t s, unsigned pos)
{
    assert(pos < sc->lay.n && s >= first && s - first < sc->batch);
    return sc->units + ((uint64_t)pos * sc->batch + (s - first)) * sc->lay.su;
}

static int *dc_scrub_result(const dc_scrub *sc, uint64_t first, uint64_t s, unsigned pos)
{
    assert(pos < sc->lay.n && s >= first && s - first < sc->batch);
    return &sc->result[(s - first) * sc->lay.n + pos];
}

static bool dc_scrub_nack(int result)
{
    return result == -EAGAIN || result == -ENOLCK; /* busy stripes or a full lock table */
}

/* IO_UNLOCK of the batch on the positions in mask (errors ignored: the
 * lease and depfs-recovery clean up). */
static void dc_scrub_unlock(dc_scrub *sc, uint64_t first, uint64_t count, uint32_t mask)
{
    if (sc->fs->ignore_locks)
        return;
    memset(sc->wreqs, 0, sizeof(dc_req) * sc->lay.n);
    for (unsigned p = 0; p < sc->lay.n; p++) {
        if (!((mask >> p) & 1u))
            continue;
        dc_req_init(&sc->wreqs[p], &sc->lay, p, DEPFS__IO_OP__IO_UNLOCK);
        dc_req_set_lock(&sc->wreqs[p], first, count, depfs_client_id(sc->fs), sc->op,
                        DC_LOCK_READ);
    }
    dc_io_run(sc->fs, sc->ino, sc->wreqs, sc->lay.n);
}

static uint32_t dc_scrub_all(const dc_scrub *sc)
{
    return sc->lay.n == 32 ? UINT32_MAX : (1u << sc->lay.n) - 1;
}

static void dc_scrub_lock_req(dc_scrub *sc, dc_req *r, uint64_t first, uint64_t count,
                              unsigned attempt)
{
    if (sc->fs->ignore_locks) {
        r->ignore_locks = true;
        return;
    }
    dc_req_set_lock(r, first, count, depfs_client_id(sc->fs), sc->op, DC_LOCK_READ);
    r->lock_attempt = attempt;
}

/* Re-read the units at the positions in `failed` one stripe at a time
 * (LOCK+READ of that stripe, same owner): each result lands in
 * sc->result. 0, or -EBUSY when a stripe stayed locked by someone else. */
static int dc_scrub_reread(dc_scrub *sc, uint64_t first, uint64_t count, uint32_t failed)
{
    const layout *lay = &sc->lay;
    for (uint64_t s = first; s < first + count; s++) {
        uint32_t todo = failed;
        for (unsigned attempt = 0; todo != 0; attempt++) {
            if (attempt >= DC_LOCK_ATTEMPTS_MAX) {
                dc_set_error("scrub of inode %" PRIu64 ": stripe %" PRIu64 " stayed locked",
                             sc->ino, s);
                return -EBUSY;
            }
            if (attempt > 0)
                dc_lock_backoff(attempt - 1);
            memset(sc->reqs, 0, sizeof(dc_req) * lay->n);
            for (unsigned p = 0; p < lay->n; p++) {
                if (!((todo >> p) & 1u))
                    continue;
                dc_req *r = &sc->reqs[p];
                dc_req_init(r, lay, p, DEPFS__IO_OP__IO_READ);
                int rc = dc_req_add(r, layout_local_offset(lay, s), lay->su,
                                    dc_scrub_slot(sc, first, s, p));
                assert(rc == 0);
                (void)rc;
                dc_scrub_lock_req(sc, r, s, 1, attempt);
                r->keep_reply = true; /* the server's words, for the log */
            }
            dc_io_run(sc->fs, sc->ino, sc->reqs, lay->n);
            for (unsigned p = 0; p < lay->n; p++) {
                dc_req *r = &sc->reqs[p];
                if (!((todo >> p) & 1u))
                    continue;
                if (!dc_scrub_nack(r->result)) {
                    todo &= ~(1u << p);
                    *dc_scrub_result(sc, first, s, p) = r->result;
                    if (r->result != 0)
                        log_info("scrub: inode %" PRIu64 " stripe %" PRIu64 ": server %u: %s%s%s",
                                 sc->ino, s, r->server_id, strerror(-r->result),
                                 r->reply && r->reply->message ? ": " : "",
                                 r->reply && r->reply->message ? r->reply->message : "");
                }
                dc_req_free_reply(r);
            }
        }
    }
    return 0;
}

/* Read the batch under its locks into sc->units and sc->result. 0 (locks
 * held, whatever the units' results), or -EBUSY / an error with the locks
 * released. */
static int dc_scrub_read(dc_scrub *sc, uint64_t first, uint64_t count)
{
    const layout *lay = &sc->lay;
    for (unsigned attempt = 0;; attempt++) {
        sc->op = dc_next_op_id(sc->fs);
        memset(sc->reqs, 0, sizeof(dc_req) * lay->n);
        for (unsigned p = 0; p < lay->n; p++) {
            dc_req *r = &sc->reqs[p];
            dc_req_init(r, lay, p, DEPFS__IO_OP__IO_READ);
            int rc = dc_req_add(r, layout_local_offset(lay, first), count * lay->su,
                                dc_scrub_slot(sc, first, first, p));
            assert(rc == 0);
            (void)rc;
            dc_scrub_lock_req(sc, r, first, count, attempt);
        }
        dc_io_run(sc->fs, sc->ino, sc->reqs, lay->n);
        uint32_t nacked = 0, down = 0;
        for (unsigned p = 0; p < lay->n; p++) {
            if (dc_scrub_nack(sc->reqs[p].result))
                nacked |= 1u << p;
            else if (sc->reqs[p].result == DC_ERR_DOWN)
                down |= 1u << p;
        }
        if (nacked == 0)
            break;
        /* a failed read may have kept its lock: release all we may hold */
        dc_scrub_unlock(sc, first, count, dc_scrub_all(sc) & ~nacked & ~down);
        if (attempt + 1 >= DC_LOCK_ATTEMPTS_MAX) {
            dc_set_error("scrub of inode %" PRIu64 ": stripes %" PRIu64 ".. stayed locked",
                         sc->ino, first);
            return -EBUSY;
        }
        dc_lock_backoff(attempt);
    }
    /* units of servers the granted locks' replies call untrusted (a write
     * went around them while they served; their rejoin rebuilds them): not
     * checked against the others, nothing computed from them */
    uint32_t told = dc_reqs_untrusted(sc->reqs, lay->n);
    for (unsigned p = 0; p < lay->n; p++) {
        if (!((told >> p) & 1u) || sc->reqs[p].result != 0)
            continue;
        log_info("scrub: inode %" PRIu64 " stripes %" PRIu64 "..%" PRIu64 ": server %u is named "
                 "in dirty records: its units are not checked (its rejoin rebuilds them)",
                 sc->ino, first, first + count - 1, sc->reqs[p].server_id);
        sc->reqs[p].result = DC_ERR_DOWN;
    }
    uint32_t failed = 0;
    for (unsigned p = 0; p < lay->n; p++) {
        int res = sc->reqs[p].result;
        if (res != 0 && res != DC_ERR_DOWN) {
            failed |= 1u << p;
            log_info("scrub: inode %" PRIu64 " stripes %" PRIu64 "..%" PRIu64
                     ": server %u: %s; re-reading stripe by stripe",
                     sc->ino, first, first + count - 1, sc->reqs[p].server_id, strerror(-res));
        }
        for (uint64_t s = first; s < first + count; s++)
            *dc_scrub_result(sc, first, s, p) = res;
    }
    if (failed == 0)
        return 0;
    int rc = dc_scrub_reread(sc, first, count, failed);
    if (rc < 0)
        dc_scrub_unlock(sc, first, count, dc_scrub_all(sc));
    return rc;
}

static dc_scrub_pending *dc_scrub_note(dc_scrub *sc, uint64_t s, unsigned unit, int cause, int err)
{
    assert(sc->n_found < sc->batch * DC_SCRUB_FINDINGS_PER_STRIPE);
    dc_scrub_pending *f = &sc->found[sc->n_found++];
    memset(f, 0, sizeof *f);
    f->f.ino = sc->ino;
    f->f.stripe = s;
    f->f.unit = unit;
    f->f.cause = cause;
    f->f.error = err;
    if (unit != DEPFS_SCRUB_UNIT_NONE) {
        f->f.parity = unit >= sc->lay.k;
        f->f.server_id = layout_unit_server(&sc->lay, s, unit);
    }
    return f;
}

/* Queue unit u of stripe s (its bytes in units[u]) for writing back. */
static void dc_scrub_queue_write(dc_scrub *sc, uint64_t s, unsigned u, uint8_t *bytes)
{
    unsigned pos = layout_unit_pos(&sc->lay, s, u);
    dc_req *w = &sc->wreqs[pos];
    if (!w->active)
        dc_req_init(w, &sc->lay, pos, DEPFS__IO_OP__IO_WRITE);
    int rc = dc_req_add(w, layout_local_offset(&sc->lay, s), sc->lay.su, bytes);
    assert(rc == 0);
    (void)rc;
}

/* Repair stripe s as planned: decode the units to rebuild from the units
 * neither bad nor rebuilt, or rewrite the parity from the data; queue the
 * writes. Returns the positions written (0: nothing), or negative errno. */
static int64_t dc_scrub_fix(dc_scrub *sc, uint64_t s, uint8_t *const *units, uint32_t bad,
                            const dc_scrub_plan *plan)
{
    const layout *lay = &sc->lay;
    uint32_t write = 0;
    if (plan->rebuild != 0) {
        bool present[LAYOUT_MAX_N], want[LAYOUT_MAX_N];
        unsigned sources = 0;
        for (unsigned u = 0; u < lay->n; u++) {
            present[u] = !((bad >> u) & 1u) && !((plan->rebuild >> u) & 1u);
            want[u] = (plan->rebuild >> u) & 1u;
            sources += present[u];
        }
        /* decoded only from units read fine and not suspected */
        assert(sources >= lay->k);
        int rc = codec_decode_want(sc->cd, lay->su, units, present, want);
        if (rc < 0)
            return rc;
        write = plan->rebuild;
    } else if (plan->rewrite_parity) {
        codec_encode(sc->cd, lay->su, units, units + lay->k);
        write = dc_scrub_all(sc) & ~((1u << lay->k) - 1);
        log_warn("scrub: inode %" PRIu64 " stripe %" PRIu64 ": parity disagrees with data and "
                 "no unit can be named; parity rewritten from the data units (suspected bug)",
                 sc->ino, s);
    }
    uint32_t positions = 0;
    for (unsigned u = 0; u < lay->n; u++) {
        if (!((write >> u) & 1u))
            continue;
        dc_scrub_queue_write(sc, s, u, units[u]);
        positions |= 1u << layout_unit_pos(lay, s, u);
    }
    return positions;
}

/* Note stripe s's findings: its bad units, the located one, an unlocated
 * mismatch; `written` = the positions its repair writes to. */
static void dc_scrub_note_stripe(dc_scrub *sc, uint64_t first, uint64_t s, uint32_t bad,
                                 const dc_scrub_plan *plan, uint32_t written)
{
    for (unsigned u = 0; u < sc->lay.n; u++) {
        bool located = plan->verdict == DC_SCRUB_LOCATED && plan->located == u;
        if (!((bad >> u) & 1u) && !located)
            continue;
        unsigned pos = layout_unit_pos(&sc->lay, s, u);
        int res = *dc_scrub_result(sc, first, s, pos);
        dc_scrub_pending *f = located ? dc_scrub_note(sc, s, u, DEPFS_SCRUB_MISMATCH, 0)
                                      : dc_scrub_note(sc, s, u, dc_scrub_cause_of(res), -res);
        f->f.unrepairable = plan->unrepairable;
        f->writes = written & (1u << pos);
    }
    if (plan->verdict == DC_SCRUB_UNLOCATED) {
        dc_scrub_pending *f = dc_scrub_note(sc, s, DEPFS_SCRUB_UNIT_NONE,
                                            DEPFS_SCRUB_MISMATCH_UNLOCATED, 0);
        f->f.unrepairable = plan->unrepairable;
        f->writes = plan->rewrite_parity ? written : 0;
    }
}

/* Check stripe s, plan and queue its repair, note its findings. */
static int dc_scrub_stripe(dc_scrub *sc, uint64_t first, uint64_t s)
{
    const layout *lay = &sc->lay;
    uint8_t *units[LAYOUT_MAX_N], *scratch[LAYOUT_MAX_N];
    uint32_t bad = 0, unreachable = 0;
    for (unsigned u = 0; u < lay->n; u++) {
        unsigned pos = layout_unit_pos(lay, s, u);
        units[u] = dc_scrub_slot(sc, first, s, pos);
        scratch[u] = sc->scratch + (uint64_t)u * lay->su;
        int cause = dc_scrub_cause_of(*dc_scrub_result(sc, first, s, pos));
        if (cause != DC_SCRUB_GOOD)
            bad |= 1u << u;
        if (cause == DEPFS_SCRUB_UNREACHABLE)
            unreachable |= 1u << u;
    }
    dc_scrub_plan plan;
    int rc = dc_scrub_plan_stripe(sc->cd, lay->su, units, bad, unreachable, scratch, &plan);
    if (rc < 0)
        return rc;
    depfs_scrub_report *rep = sc->rep;
    rep->stripes_checked++;
    rep->stripes_unreadable += bad != 0;
    bool mismatch = plan.verdict == DC_SCRUB_LOCATED || plan.verdict == DC_SCRUB_UNLOCATED;
    if (mismatch && rep->stripes_bad++ == 0)
        rep->first_bad_stripe = s;
    rep->stripes_unrepairable += plan.unrepairable;
    if (bad == 0 && !mismatch)
        return 0;
    int64_t written = 0;
    if (sc->repair && (written = dc_scrub_fix(sc, s, units, bad, &plan)) < 0)
        return (int)written;
    dc_scrub_note_stripe(sc, first, s, bad, &plan, (uint32_t)written);
    return 0;
}

/* Lock the batch again (IO_LOCK, same owner) on the positions in mask
 * before writing there: their failed reads may have dropped the lock.
 * Positions that cannot be locked get their writes dropped (wresult). */
static void dc_scrub_relock(dc_scrub *sc, uint64_t first, uint64_t count, uint32_t mask)
{
    const layout *lay = &sc->lay;
    for (unsigned attempt = 0; mask != 0; attempt++) {
        if (attempt > 0)
            dc_lock_backoff(attempt - 1);
        memset(sc->reqs, 0, sizeof(dc_req) * lay->n);
        for (unsigned p = 0; p < lay->n; p++) {
            if (!((mask >> p) & 1u))
                continue;
            dc_req_init(&sc->reqs[p], lay, p, DEPFS__IO_OP__IO_LOCK);
            dc_scrub_lock_req(sc, &sc->reqs[p], first, count, attempt);
        }
        dc_io_run(sc->fs, sc->ino, sc->reqs, lay->n);
        for (unsigned p = 0; p < lay->n; p++) {
            if (!((mask >> p) & 1u))
                continue;
            int res = sc->reqs[p].result;
            if (dc_scrub_nack(res) && attempt + 1 < DC_LOCK_ATTEMPTS_MAX)
                continue;
            mask &= ~(1u << p);
            if (res == 0)
                continue;
            sc->wresult[p] = res;
            sc->wreqs[p].active = false;
            log_warn("scrub: inode %" PRIu64 ": cannot lock stripes %" PRIu64 "+%" PRIu64
                     " on server %u again to repair them: %s",
                     sc->ino, first, count, lay->servers[p], strerror(-res));
        }
    }
}

/* Write the queued repairs (WRITE+UNLOCK, synced) and unlock every other
 * position. 0, or the first write error. */
static int dc_scrub_finish(dc_scrub *sc, uint64_t first, uint64_t count)
{
    const layout *lay = &sc->lay;
    uint32_t writes = 0, reread = 0;
    for (unsigned p = 0; p < lay->n; p++) {
        sc->wresult[p] = 0;
        if (sc->wreqs[p].active)
            writes |= 1u << p;
        for (uint64_t s = first; s < first + count; s++)
            if (*dc_scrub_result(sc, first, s, p) != 0)
                reread |= 1u << p;
    }
    if (!sc->fs->ignore_locks && (writes & reread) != 0)
        dc_scrub_relock(sc, first, count, writes & reread);
    for (unsigned p = 0; p < lay->n; p++) {
        dc_req *w = &sc->wreqs[p];
        if (!w->active) {
            if (sc->fs->ignore_locks)
                continue;
            dc_req_init(w, lay, p, DEPFS__IO_OP__IO_UNLOCK);
        }
        if (sc->fs->ignore_locks) {
            w->ignore_locks = true;
        } else {
            dc_req_set_lock(w, first, count, depfs_client_id(sc->fs), sc->op, DC_LOCK_READ);
            w->unlock = true;
        }
        w->sync = w->op == DEPFS__IO_OP__IO_WRITE;
    }
    dc_io_run(sc->fs, sc->ino, sc->wreqs, lay->n);
    int rc = 0;
    for (unsigned p = 0; p < lay->n; p++) {
        const dc_req *w = &sc->wreqs[p];
        if (!w->active || w->op != DEPFS__IO_OP__IO_WRITE)
            continue;
        sc->wresult[p] = w->result;
        if (w->result < 0) {
            log_warn("scrub: inode %" PRIu64 ": rewriting units on server %u failed: %s", sc->ino,
                     w->server_id, strerror(-w->result));
            /* refused before storing anything: nothing to repair there, so
             * release; else the lock stays for depfs-recovery (the server
             * that failed to store demotes itself and gets rebuilt) */
            if (dc_write_not_applied(w->result))
                dc_scrub_unlock(sc, first, count, 1u << p);
        }
    }
    for (unsigned p = 0; p < lay->n && rc == 0; p++)
        if ((writes >> p) & 1u)
            rc = sc->wresult[p];
    if (rc < 0)
        dc_set_error("scrub of inode %" PRIu64 ": rewriting units failed: %s", sc->ino,
                     strerror(-rc));
    return rc;
}

static const char *dc_scrub_cause_name(int cause)
{
    switch (cause) {
    case DEPFS_SCRUB_CHECKSUM: return "checksum mismatch";
    case DEPFS_SCRUB_IO_ERROR: return "I/O error";
    case DEPFS_SCRUB_MISSING: return "missing";
    case DEPFS_SCRUB_UNREACHABLE: return "server unreachable";
    case DEPFS_SCRUB_MISMATCH: return "parity mismatch with good checksums, located here";
    default: return "?";
    }
}

/* Count and hand out the batch's findings, repaired when every write they
 * needed was stored. */
static void dc_scrub_report_found(dc_scrub *sc)
{
    depfs_scrub_report *rep = sc->rep;
    for (size_t i = 0; i < sc->n_found; i++) {
        dc_scrub_pending *p = &sc->found[i];
        bool ok = p->writes != 0;
        for (unsigned pos = 0; pos < sc->lay.n && ok; pos++)
            if ((p->writes >> pos) & 1u)
                ok = sc->wresult[pos] == 0;
        p->f.repaired = ok;
        switch (p->f.cause) {
        case DEPFS_SCRUB_CHECKSUM: rep->units_checksum++; break;
        case DEPFS_SCRUB_IO_ERROR: rep->units_io_error++; break;
        case DEPFS_SCRUB_MISSING: rep->units_missing++; break;
        case DEPFS_SCRUB_UNREACHABLE: rep->units_unreachable++; break;
        case DEPFS_SCRUB_MISMATCH: rep->units_mismatch++; break;
        case DEPFS_SCRUB_MISMATCH_UNLOCATED: rep->stripes_unlocated++; break;
        default: assert(!"unknown scrub cause");
        }
        if (!ok)
            rep->findings_unrepaired++;
        else if (p->f.cause == DEPFS_SCRUB_MISMATCH_UNLOCATED)
            rep->stripes_parity_rewritten++;
        else
            rep->units_repaired++;
        if (p->f.unit == DEPFS_SCRUB_UNIT_NONE)
            log_info("scrub: inode %" PRIu64 " stripe %" PRIu64 ": parity mismatch, no unit "
                     "located%s", sc->ino, p->f.stripe, ok ? " (parity rewritten)" : "");
        else
            log_info("scrub: inode %" PRIu64 " stripe %" PRIu64 " unit %u on server %u: %s%s",
                     sc->ino, p->f.stripe, p->f.unit, p->f.server_id,
                     dc_scrub_cause_name(p->f.cause), ok ? " (repaired)" : "");
        if (sc->on_finding)
            sc->on_finding(sc->arg, &p->f);
    }
    sc->n_found = 0;
}

static int dc_scrub_batch(dc_scrub *sc, uint64_t first, uint64_t count)
{
    int rc = dc_scrub_read(sc, first, count);
    if (rc < 0)
        return rc;
    memset(sc->wreqs, 0, sizeof(dc_req) * sc->lay.n);
    sc->n_found = 0;
    for (uint64_t s = first; s < first + count && rc == 0; s++)
        rc = dc_scrub_stripe(sc, first, s);
    if (rc < 0) {
        dc_set_error("scrub of inode %" PRIu64 ": decoding failed: %s", sc->ino, strerror(-rc));
        dc_scrub_unlock(sc, first, count, dc_scrub_all(sc));
        return rc;
    }
    rc = dc_scrub_finish(sc, first, count);
    dc_scrub_report_found(sc);
    return rc;
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
        rc = dc_data_flush(fs, in, NULL, false);
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

/* Scrub stripes [first, first+count) of ino (layout lay) in batches. */
static int dc_scrub_range(dc_scrub *sc, uint64_t first, uint64_t count)
{
    sc->cd = dc_codec(sc->fs, sc->lay.n, sc->lay.k, sc->lay.codec_version);
    if (sc->cd == NULL)
        return -EINVAL;
    sc->batch = dc_round_stripes(sc->fs, &sc->lay);
    if (sc->batch > count)
        sc->batch = count ? count : 1;
    uint64_t n = sc->lay.n;
    sc->units = malloc(n * sc->batch * sc->lay.su);
    sc->scratch = malloc(n * sc->lay.su);
    sc->result = calloc(n * sc->batch, sizeof *sc->result);
    sc->found = calloc(sc->batch * DC_SCRUB_FINDINGS_PER_STRIPE, sizeof *sc->found);
    sc->reqs = calloc(n, sizeof *sc->reqs);
    sc->wreqs = calloc(n, sizeof *sc->wreqs);
    int rc = 0;
    if (!sc->units || !sc->scratch || !sc->result || !sc->found || !sc->reqs || !sc->wreqs)
        rc = -ENOMEM;
    for (uint64_t s = first; s < first + count && rc == 0; s += sc->batch) {
        uint64_t c = first + count - s < sc->batch ? first + count - s : sc->batch;
        rc = dc_scrub_batch(sc, s, c);
    }
    free(sc->wreqs);
    free(sc->reqs);
    free(sc->found);
    free(sc->result);
    free(sc->scratch);
    free(sc->units);
    return rc;
}

int depfs_scrub_file(depfs_t *fs, uint64_t ino, const depfs_scrub_options *opt,
                     depfs_scrub_report *rep)
{
    if (fs == NULL || opt == NULL || rep == NULL)
        return -EINVAL;
    memset(rep, 0, sizeof *rep);
    dc_scrub sc = {.fs = fs, .ino = ino, .repair = opt->repair, .on_finding = opt->on_finding,
                   .arg = opt->arg, .rep = rep};
    uint64_t size = 0;
    int rc = dc_scrub_target(fs, ino, &sc.lay, &size);
    if (rc < 0)
        return rc;
    uint64_t sb = layout_stripe_bytes(&sc.lay);
    return dc_scrub_range(&sc, 0, (size + sb - 1) / sb);
}

int dc_scrub_heal(depfs_t *fs, uint64_t ino, const layout *lay, uint64_t first, uint64_t count,
                  depfs_scrub_report *rep)
{
    memset(rep, 0, sizeof *rep);
    dc_scrub sc = {.fs = fs, .ino = ino, .lay = *lay, .repair = true, .rep = rep};
    return count ? dc_scrub_range(&sc, first, count) : 0;
}

int depfs_scrub_ino(depfs_t *fs, uint64_t ino, bool repair, depfs_scrub_report *rep)
{
    depfs_scrub_options opt = {.repair = repair};
    return depfs_scrub_file(fs, ino, &opt, rep);
}
