/* recover_orphan.c - depfs_repair_orphan_lock: the stripes an orphan lock
 * left in doubt (recovery/README.md "Orphan locks"). */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "recover.h"
#include "log.h"

/* Orphan repair: lock rounds before giving up (-EBUSY). */
#define DC_ORPHAN_ATTEMPTS_MAX 100u

/* Orphan repair: stale lock ranges remembered per position (more: the
 * whole range counts as held there). */
#define DC_ORPHAN_TAKEN_MAX 16u

/* An orphan lock marks stripes an unfinished write left in doubt. The write
 * protocol locks every server of a stripe it writes before it writes any,
 * and a server drops the lock only once it stored its unit (WRITE+UNLOCK),
 * so on a server where a stale writing lock is still held the write did
 * not land, and on every other server the stripe holds the writer's new
 * unit or an untouched one (a stale reading lock - a pre-read, a degraded
 * read, a scrub, a rebuild's source, none of which wrote there - leaves
 * its unit as it was: it is taken over and released, nothing more): the
 * units outside the held positions are one consistent codeword (the new
 * one). The repair therefore treats held positions and untrusted ones as
 * erasures, decodes them from the rest and writes the held, trusted ones.
 * With more erasures than n-k it falls back to recomputing parity from the
 * data units (either content of a unit the unacknowledged write touched is
 * allowed), which is only sound when every data unit is trusted. Otherwise
 * (a stale data unit too: two failures on a layout with n-k=1, or a write
 * that landed nowhere while one server was stale) the units are read as
 * they are - the trusted ones when more than k of them can be checked
 * against each other, else all n - and if they are one codeword the stripe
 * stands as it is (a stale unit is then rebuilt by its server's rejoin,
 * from the dirty record that made it untrusted): units in doubt that
 * missed the write beside units that took it, or a stale one, could only
 * make a codeword by cancelling each other in every parity byte, and a
 * unit called stale may be current (records are per file, not per
 * stripe). If they are not, the stripes are left locked and the repair
 * fails loudly (beyond what the units alone can tell). Stale locks of any
 * owner on the range are taken over at once (IO_LOCK take_over_stale), so
 * overlapping orphans of different owners cannot block each other. */

typedef struct dc_orphan {
    depfs_t *fs;
    dc_target t;
    uint64_t first, count;
    uint64_t owner_client, owner_op; /* the orphan reported (for logs) */
    Depfs__LockSpec mine;     /* our lock on [first, first+count) */
    uint32_t held;            /* positions where we hold it */
    uint32_t reach;           /* positions that answered */
    uint32_t untrusted;       /* positions whose units may be stale */
    /* per position, the stripes a stale writing lock held there (taken over) */
    uint64_t taken_first[LAYOUT_MAX_N][DC_ORPHAN_TAKEN_MAX];
    uint64_t taken_end[LAYOUT_MAX_N][DC_ORPHAN_TAKEN_MAX];
    unsigned n_taken[LAYOUT_MAX_N];
    bool taken_all[LAYOUT_MAX_N]; /* more than DC_ORPHAN_TAKEN_MAX: every stripe */
} dc_orphan;

/* Lock [first, first+count) on every reachable position, taking over stale
 * locks of any owner; remembers what each position's orphans held. */
static int dc_orphan_lock(dc_orphan *o)
{
    const layout *lay = &o->t.lay;
    /* one op id for every attempt: what an attempt took over stays ours,
     * and what it learnt of the orphans is kept for the next */
    depfs__lock_spec__init(&o->mine);
    o->mine.first_stripe = o->first;
    o->mine.stripe_count = o->count;
    o->mine.owner_client = depfs_client_id(o->fs);
    o->mine.owner_op = dc_next_op_id(o->fs);
    /* ours writes where a writing orphan was taken over (the server keeps
     * that in doubt) and where we write; elsewhere we only read */
    o->mine.has_read_only = o->mine.read_only = true;
    for (unsigned attempt = 0;; attempt++) {
        uint32_t reach = dc_reachable_mask(o->fs, lay);
        dc_ctl v[LAYOUT_MAX_N];
        unsigned n = 0;
        for (unsigned p = 0; p < lay->n; p++) {
            if (!((reach >> p) & 1u))
                continue;
            dc_ctl_init(&v[n], lay->servers[p], DEPFS__IO_OP__IO_LOCK, o->t.ino);
            v[n].req.lock = &o->mine;
            v[n].req.has_take_over_stale = v[n].req.take_over_stale = true;
            v[n].req.has_lock_attempt = attempt > 0;
            v[n].req.lock_attempt = attempt;
            n++;
        }
        dc_ctl_run(o->fs, v, n);
        bool nack = false;
        int err = 0;
        o->reach = 0;
        for (unsigned i = 0; i < n; i++) {
            unsigned p = (unsigned)dc_pos_of(lay, v[i].server_id);
            if (v[i].rc == DC_ERR_DOWN)
                continue;
            o->reach |= 1u << p;
            if (v[i].rc == -EAGAIN || v[i].rc == -ENOLCK) {
                nack = true;
            } else if (v[i].rc < 0) {
                if (err == 0)
                    err = v[i].rc;
                dc_set_error("orphan repair of inode %llu: locking on server %u: %s",
                             (unsigned long long)o->t.ino, v[i].server_id, strerror(-v[i].rc));
            } else {
                o->held |= 1u << p;
                for (size_t e = 0; e < v[i].rep->n_stale_locks; e++) {
                    const Depfs__LockSpec *l = v[i].rep->stale_locks[e]->lock;
                    if (l == NULL || (l->has_read_only && l->read_only))
                        continue; /* a reader's: the units are as they were */
                    if (o->n_taken[p] == DC_ORPHAN_TAKEN_MAX) {
                        o->taken_all[p] = true;
                        continue;
                    }
                    o->taken_first[p][o->n_taken[p]] = l->first_stripe;
                    o->taken_end[p][o->n_taken[p]++] = l->first_stripe + l->stripe_count;
                }
            }
        }
        dc_ctl_free(v, n);
        if (!nack && err == 0)
            return 0;
        if (err != 0 || attempt + 1 >= DC_ORPHAN_ATTEMPTS_MAX) {
            if (err == 0)
                dc_set_error("orphan repair of inode %llu stripes %llu..: a live writer kept "
                             "them locked", (unsigned long long)o->t.ino,
                             (unsigned long long)o->first);
            return err != 0 ? err : -EBUSY;
        }
        /* a young lock: a live writer; ours (and what we took over) stay
         * held meanwhile, the next attempt re-locks them as the same owner */
        dc_lock_backoff(attempt);
    }
}

/* Positions where an orphan held stripe s (now ours). */
static uint32_t dc_orphan_held_at(const dc_orphan *o, uint64_t s)
{
    uint32_t m = 0;
    for (unsigned p = 0; p < o->t.lay.n; p++) {
        bool in = o->taken_all[p];
        for (unsigned e = 0; e < o->n_taken[p] && !in; e++)
            in = o->taken_first[p][e] <= s && s < o->taken_end[p][e];
        if (in)
            m |= 1u << p;
    }
    return m;
}

typedef struct dc_orphan_batch {
    uint64_t first, count, batch;
    uint8_t *units;           /* n positions x batch x su */
    uint32_t erase[DC_ROUND_STRIPES_MAX]; /* per stripe: positions not read */
    uint32_t rewrite[DC_ROUND_STRIPES_MAX]; /* per stripe: positions to write */
    bool by_parity[DC_ROUND_STRIPES_MAX];   /* fallback: parity from data */
    /* per stripe (by_parity): data positions in doubt, read as stored (not
     * checked: a crash may have cut a block between its bytes and its
     * checksum) and rewritten, so their checksums are right again */
    uint32_t raw[DC_ROUND_STRIPES_MAX];
} dc_orphan_batch;

static uint8_t *dc_ob_unit(const dc_orphan *o, const dc_orphan_batch *b, uint64_t s, unsigned pos)
{
    return b->units + ((uint64_t)pos * b->batch + (s - b->first)) * o->t.lay.su;
}

/* Whether the units of stripe s on the positions of mask, read as checked
 * (stale and in-doubt ones too), are one codeword: 0 if so, -EILSEQ if
 * not, another error if a position is out of reach or a unit unreadable.
 * The first k of them (in unit order) decide the codeword, the others are
 * compared with it: mask needs more than k positions, or all n. */
static int dc_orphan_one_codeword(dc_orphan *o, uint64_t s, uint32_t mask)
{
    const layout *lay = &o->t.lay;
    assert(dc_popcount32(mask) > lay->k);
    if ((o->reach & mask) != mask)
        return -EHOSTDOWN;
    uint8_t *buf = malloc((size_t)2 * lay->n * lay->su);
    if (buf == NULL)
        return -ENOMEM;
    dc_req rd[LAYOUT_MAX_N];
    memset(rd, 0, sizeof rd);
    uint8_t *read[LAYOUT_MAX_N], *units[LAYOUT_MAX_N];
    bool present[LAYOUT_MAX_N], want[LAYOUT_MAX_N];
    unsigned got = 0;
    for (unsigned u = 0; u < lay->n; u++) {
        unsigned pos = layout_unit_pos(lay, s, u);
        read[u] = buf + (size_t)u * lay->su;
        want[u] = ((mask >> pos) & 1u) && got >= lay->k;
        present[u] = ((mask >> pos) & 1u) && got < lay->k;
        got += present[u];
        units[u] = present[u] ? read[u] : buf + (size_t)(lay->n + u) * lay->su;
        if (!((mask >> pos) & 1u))
            continue;
        dc_req_init(&rd[pos], lay, pos, DEPFS__IO_OP__IO_READ);
        rd[pos].ignore_locks = true; /* ours: we hold the stripe */
        rd[pos].any_state = true;    /* a stale server is REBUILDING */
        int rc = dc_req_add(&rd[pos], layout_local_offset(lay, s), lay->su, read[u]);
        assert(rc == 0);
        (void)rc;
    }
    dc_io_run(o->fs, o->t.ino, rd, lay->n);
    int rc = 0;
    for (unsigned p = 0; p < lay->n && rc == 0; p++)
        if (rd[p].active && rd[p].result != 0)
            rc = rd[p].result == DC_ERR_DOWN ? -EHOSTDOWN : rd[p].result;
    if (rc == 0)
        rc = codec_decode_want(o->t.cd, lay->su, units, present, want);
    for (unsigned u = 0; u < lay->n && rc == 0; u++)
        if (want[u] && memcmp(units[u], read[u], lay->su) != 0)
            rc = -EILSEQ;
    free(buf);
    return rc;
}

/* Decide, per stripe of the batch, what is read and what is rewritten. */
static int dc_orphan_plan(dc_orphan *o, dc_orphan_batch *b)
{
    const layout *lay = &o->t.lay;
    uint32_t all = (lay->n < 32 ? (1u << lay->n) : 0u) - 1u;
    for (uint64_t s = b->first; s < b->first + b->count; s++) {
        uint64_t i = s - b->first;
        uint32_t held = dc_orphan_held_at(o, s) & ~o->untrusted;
        uint32_t erase = held | o->untrusted | (all & ~o->reach);
        b->by_parity[i] = false;
        b->erase[i] = erase;
        b->rewrite[i] = held;
        b->raw[i] = 0;
        if (held == 0)
            continue; /* no write in doubt on a trusted unit: consistent */
        if (dc_popcount32(erase) <= lay->n - lay->k)
            continue;
        uint32_t data = 0, parity = 0;
        for (unsigned u = 0; u < lay->n; u++) {
            if (u < lay->k)
                data |= 1u << layout_unit_pos(lay, s, u);
            else
                parity |= 1u << layout_unit_pos(lay, s, u);
        }
        if ((data & (o->untrusted | (all & ~o->reach))) != 0) {
            /* the trusted units alone, when they can be checked (more than
             * k of them), else every unit as it is */
            uint32_t trusted = o->reach & ~o->untrusted & all;
            uint32_t check = dc_popcount32(trusted) > lay->k ? trusted : all;
            int rc = dc_orphan_one_codeword(o, s, check);
            if (rc < 0) {
                dc_set_error("orphan repair of inode %llu: stripe %llu has %u units in doubt "
                             "or stale, more than n-k=%u, a stale data unit, and %s: left "
                             "locked", (unsigned long long)o->t.ino, (unsigned long long)s,
                             dc_popcount32(erase), lay->n - lay->k,
                             rc == -EILSEQ ? "its units are no codeword"
                                           : "not all of its units could be read");
                return -EIO;
            }
            log_info("orphan repair of inode %llu: stripe %llu has %u units in doubt or stale, "
                     "more than n-k=%u, but %s %u of its units are one codeword: kept as it is",
                     (unsigned long long)o->t.ino, (unsigned long long)s, dc_popcount32(erase),
                     lay->n - lay->k, check == all ? "all" : "the trusted",
                     dc_popcount32(check));
            b->erase[i] = 0;
            b->rewrite[i] = 0;
            continue;
        }
        b->by_parity[i] = true;
        b->erase[i] = parity;
        b->raw[i] = data & held;
        b->rewrite[i] = (parity & o->reach & ~o->untrusted) | b->raw[i];
    }
    return 0;
}

/* The positions stripe i of the batch decodes from: the first k units not
 * erased, in unit order (as dc_orphan_compute takes them). */
static uint32_t dc_orphan_sources(const dc_orphan *o, const dc_orphan_batch *b, uint64_t i)
{
    const layout *lay = &o->t.lay;
    uint32_t src = 0;
    unsigned got = 0;
    for (unsigned u = 0; u < lay->n && got < lay->k; u++) {
        unsigned pos = layout_unit_pos(lay, b->first + i, u);
        if (!((b->erase[i] >> pos) & 1u)) {
            src |= 1u << pos;
            got++;
        }
    }
    assert(got == lay->k);
    return src;
}

/* Whether a failed read of a unit says the unit is bad (read around it and
 * rewrite it) rather than its server out of reach. */
static bool dc_orphan_damage(int result)
{
    return result == -EBADMSG || result == -ENODATA || result == -EIO;
}

/* One pass of reads: every source unit of every stripe, the in-doubt data
 * units of parity-from-data stripes as stored. 0 when all arrived, else
 * the positions whose checked read failed in *failed (and of those, the
 * damaged units in *damaged); a failed read that cannot be read around is
 * an error. */
static int dc_orphan_read_once(dc_orphan *o, dc_orphan_batch *b, uint32_t *failed,
                               uint32_t *damaged)
{
    const layout *lay = &o->t.lay;
    dc_req rd[2][LAYOUT_MAX_N]; /* [1]: unverified */
    memset(rd, 0, sizeof rd);
    for (uint64_t i = 0; i < b->count; i++) {
        if (b->rewrite[i] == 0)
            continue;
        uint64_t s = b->first + i;
        uint32_t src = dc_orphan_sources(o, b, i);
        for (unsigned pos = 0; pos < lay->n; pos++) {
            if (!((src >> pos) & 1u))
                continue;
            dc_req *r = &rd[(b->raw[i] >> pos) & 1u][pos];
            if (!r->active) {
                dc_req_init(r, lay, pos, DEPFS__IO_OP__IO_READ);
                r->ignore_locks = true; /* ours: we hold the stripes */
                r->any_state = true;
                r->unverified = r == &rd[1][pos];
            }
            int rc = dc_req_add(r, layout_local_offset(lay, s), lay->su, dc_ob_unit(o, b, s, pos));
            assert(rc == 0); /* batch <= DC_ROUND_STRIPES_MAX extents */
            (void)rc;
        }
    }
    *failed = *damaged = 0;
    for (unsigned v = 0; v < 2; v++) {
        dc_io_run(o->fs, o->t.ino, rd[v], lay->n);
        for (unsigned p = 0; p < lay->n; p++) {
            const dc_req *r = &rd[v][p];
            if (!r->active || r->result == 0)
                continue;
            if (v == 1) {
                dc_set_error("orphan repair of inode %llu: reading server %u: %s",
                             (unsigned long long)o->t.ino, lay->servers[p],
                             r->result == DC_ERR_DOWN ? "unreachable" : strerror(-r->result));
                return r->result == DC_ERR_DOWN ? -EIO : r->result;
            }
            log_warn("orphan repair of inode %llu: server %u could not give its units (%s): "
                     "read around", (unsigned long long)o->t.ino, lay->servers[p],
                     r->result == DC_ERR_DOWN ? "unreachable" : strerror(-r->result));
            *failed |= 1u << p;
            if (dc_orphan_damage(r->result) && ((o->held >> p) & 1u))
                *damaged |= 1u << p;
        }
    }
    return 0;
}

/* The failed positions become erasures of the stripes that read them (the
 * damaged ones are rewritten too); -EIO when a stripe then has more than
 * n-k, or is computed from its data (no unit to spare). */
static int dc_orphan_erase_failed(dc_orphan *o, dc_orphan_batch *b, uint32_t failed,
                                  uint32_t damaged)
{
    const layout *lay = &o->t.lay;
    for (uint64_t i = 0; i < b->count; i++) {
        if (b->rewrite[i] == 0)
            continue;
        uint32_t hit = dc_orphan_sources(o, b, i) & failed;
        if (hit == 0)
            continue;
        b->erase[i] |= hit;
        b->rewrite[i] |= hit & damaged;
        if (b->by_parity[i] || dc_popcount32(b->erase[i]) > lay->n - lay->k) {
            dc_set_error("orphan repair of inode %llu: stripe %llu: units unreadable beyond "
                         "what n-k=%u covers (positions %#x in doubt or unread)",
                         (unsigned long long)o->t.ino, (unsigned long long)(b->first + i),
                         lay->n - lay->k, b->erase[i]);
            return -EIO;
        }
    }
    return 0;
}

/* Read the units each stripe decodes from, reading around units that fail
 * (each pass erases at least one more position: at most n-k+1 passes). */
static int dc_orphan_read(dc_orphan *o, dc_orphan_batch *b)
{
    const layout *lay = &o->t.lay;
    for (unsigned pass = 0; pass <= lay->n - lay->k; pass++) {
        uint32_t failed, damaged;
        int rc = dc_orphan_read_once(o, b, &failed, &damaged);
        if (rc < 0 || failed == 0)
            return rc;
        if ((rc = dc_orphan_erase_failed(o, b, failed, damaged)) < 0)
            return rc;
    }
    dc_set_error("orphan repair of inode %llu: reads kept failing", (unsigned long long)o->t.ino);
    return -EIO;
}

/* Rebuild the rewritten units of every stripe from the ones read. */
static int dc_orphan_compute(dc_orphan *o, dc_orphan_batch *b)
{
    const layout *lay = &o->t.lay;
    for (uint64_t s = b->first; s < b->first + b->count; s++) {
        uint64_t i = s - b->first;
        if (b->rewrite[i] == 0)
            continue;
        uint8_t *units[LAYOUT_MAX_N];
        bool present[LAYOUT_MAX_N];
        unsigned got = 0;
        for (unsigned u = 0; u < lay->n; u++) {
            unsigned pos = layout_unit_pos(lay, s, u);
            units[u] = dc_ob_unit(o, b, s, pos);
            present[u] = got < lay->k && !((b->erase[i] >> pos) & 1u);
            got += present[u];
        }
        if (b->by_parity[i]) {
            codec_encode(o->t.cd, lay->su, units, units + lay->k);
            continue;
        }
        int rc = codec_decode(o->t.cd, lay->su, units, present);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Write the rewritten units (the stripes stay locked by us). A position
 * that cannot be reached, or that fails to store its unit (it demotes
 * itself), goes into *missed: like an unreachable one it gets dirty records
 * on the others and its rejoin rebuilds the unit; the writes carry our lock
 * so that such a server stays out of service until the records exist. A
 * position that refused the write before storing anything still holds the
 * unit in doubt: an error, and the stripes stay locked. So do more missed
 * (or stale) positions than n-k: -EAGAIN. */
static int dc_orphan_write(dc_orphan *o, dc_orphan_batch *b, uint32_t *missed)
{
    const layout *lay = &o->t.lay;
    uint32_t all = (lay->n < 32 ? (1u << lay->n) : 0u) - 1u;
    dc_req wr[LAYOUT_MAX_N];
    memset(wr, 0, sizeof wr);
    bool any = false;
    for (uint64_t s = b->first; s < b->first + b->count; s++) {
        uint64_t i = s - b->first;
        for (unsigned p = 0; p < lay->n; p++) {
            if (!((b->rewrite[i] >> p) & 1u))
                continue;
            assert((o->held >> p) & 1u);
            if (!wr[p].active) {
                dc_req_init(&wr[p], lay, p, DEPFS__IO_OP__IO_WRITE);
                wr[p].ignore_locks = true; /* held by us, under another op id */
                wr[p].has_lock = true;
                wr[p].lock = o->mine;
                wr[p].any_state = true;
                wr[p].sync = true;
                for (unsigned q = 0; q < lay->n; q++)
                    if ((all & ~o->reach) >> q & 1u)
                        wr[p].down[wr[p].n_down++] = lay->servers[q];
            }
            int rc = dc_req_add(&wr[p], layout_local_offset(lay, s), lay->su,
                                dc_ob_unit(o, b, s, p));
            assert(rc == 0);
            (void)rc;
            any = true;
        }
    }
    if (!any)
        return 0;
    dc_test_pause(DC_PAUSE_ORPHAN_WRITE);
    dc_io_run(o->fs, o->t.ino, wr, lay->n);
    int err = 0;
    for (unsigned p = 0; p < lay->n; p++) {
        if (!wr[p].active || wr[p].result == 0)
            continue;
        if (wr[p].result == DC_ERR_DOWN || !dc_write_not_applied(wr[p].result)) {
            log_warn("orphan repair of inode %llu: server %u could not store its units (%s)",
                     (unsigned long long)o->t.ino,
                     lay->servers[p], wr[p].result == DC_ERR_DOWN ? "unreachable"
                                                                  : strerror(-wr[p].result));
            *missed |= 1u << p;
        } else if (err == 0) {
            err = wr[p].result;
            dc_set_error("orphan repair of inode %llu: server %u refused the write: %s",
                         (unsigned long long)o->t.ino, lay->servers[p], strerror(-err));
        }
    }
    if (err == 0 && dc_popcount32(*missed | o->untrusted) > lay->n - lay->k) {
        /* what the up-front check (dc_orphan_repair) keeps out, come about
         * during the write: recording so many dirty would leave more
         * untrusted units than n-k, and no rejoin could ever rebuild the
         * file. Those positions keep their units in doubt, locked by us:
         * the retry writes them again once they answer. */
        dc_set_error("orphan repair of inode %llu: %u of its %u servers missed the repaired "
                     "units or are stale, more than n-k=%u: retrying once they answer",
                     (unsigned long long)o->t.ino, dc_popcount32(*missed | o->untrusted),
                     lay->n, lay->n - lay->k);
        err = -EAGAIN;
    }
    return err;
}

/* Servers that could not be reached may hold the orphan's lock and a
 * half-written unit, and servers that failed to store a repaired unit hold
 * a stale one: record them dirty for the file on the others, so their
 * rejoin rebuilds it (and a lock still held there is repaired again once
 * they answer, as a unit that is no longer trusted). */
static int dc_orphan_mark_missed(dc_orphan *o, uint32_t missed)
{
    const layout *lay = &o->t.lay;
    int rc = 0;
    for (unsigned p = 0; p < lay->n && rc == 0; p++) {
        if (!((missed >> p) & 1u))
            continue;
        rc = dc_dirty_record(o->fs, lay->servers[p], o->t.ino);
        if (rc == 0)
            log_warn("orphan repair of inode %llu: server %u recorded dirty for a rebuild",
                     (unsigned long long)o->t.ino, lay->servers[p]);
    }
    return rc;
}

/* Release our lock: everywhere after a repair, or (keep_in_doubt, after a
 * failure) only where no orphan held anything, so that the positions still
 * in doubt stay locked and are reported (by age) for a later repair. A
 * failure's error text is kept: a server the unlock cannot reach either
 * would replace it with its own, which says less. */
static void dc_orphan_unlock(dc_orphan *o, bool keep_in_doubt)
{
    const layout *lay = &o->t.lay;
    char why[DC_ERR_MAX] = "";
    if (keep_in_doubt)
        snprintf(why, sizeof why, "%s", depfs_last_error());
    dc_req un[LAYOUT_MAX_N];
    memset(un, 0, sizeof un);
    for (unsigned p = 0; p < lay->n; p++) {
        if (!((o->held >> p) & 1u))
            continue;
        if (keep_in_doubt && (o->n_taken[p] > 0 || o->taken_all[p]))
            continue;
        dc_req_init(&un[p], lay, p, DEPFS__IO_OP__IO_UNLOCK);
        un[p].has_lock = true;
        un[p].lock = o->mine;
        un[p].any_state = true;
    }
    dc_io_run(o->fs, o->t.ino, un, lay->n);
    if (keep_in_doubt)
        dc_set_error("%s", why);
}

/* The end of the stripes the repair must look at: a lock may reach far past
 * the file ("every stripe from here on", as a rebuild's tail lock does), and
 * a stripe past every reached strip file and the file's size holds no unit
 * anywhere, which reads as zeros on every position: one codeword, nothing
 * to repair. Asked with the stripes locked, so no write extends them. */
static int dc_orphan_end(dc_orphan *o, uint64_t *end)
{
    const layout *lay = &o->t.lay;
    uint64_t max_bytes = 0;
    int rc = dc_strip_extent(o->fs, &o->t, o->reach, &max_bytes);
    if (rc < 0)
        return rc;
    uint64_t stripes = dc_div_up(o->t.size, layout_stripe_bytes(lay));
    if (dc_div_up(max_bytes, lay->su) > stripes)
        stripes = dc_div_up(max_bytes, lay->su);
    *end = o->first + o->count < stripes ? o->first + o->count : stripes;
    return 0;
}

static int dc_orphan_repair(dc_orphan *o)
{
    const layout *lay = &o->t.lay;
    int rc = dc_orphan_lock(o);
    /* which units are stale is asked once the stripes are ours: a write
     * around a server that landed before we held them recorded it first */
    if (rc == 0)
        rc = dc_untrusted_mask(o->fs, lay, o->t.ino, true, &o->untrusted);
    uint32_t all = (lay->n < 32 ? (1u << lay->n) : 0u) - 1u;
    uint32_t unreached = all & ~o->reach;
    if (rc == 0 && unreached != 0 &&
        dc_popcount32(unreached | o->untrusted) > lay->n - lay->k) {
        /* the servers not reached would be recorded dirty (they may hold a
         * unit in doubt): more untrusted units than n-k, and no rejoin could
         * ever rebuild the file. They keep their own intents: wait for them */
        dc_set_error("orphan repair of inode %llu: %u of its %u servers unreachable or stale, "
                     "more than n-k=%u: waiting until they answer", (unsigned long long)o->t.ino,
                     dc_popcount32(unreached | o->untrusted), lay->n, lay->n - lay->k);
        rc = -EAGAIN;
    }
    uint64_t end = o->first;
    if (rc == 0)
        rc = dc_orphan_end(o, &end);
    if (rc < 0) {
        dc_orphan_unlock(o, true);
        return rc;
    }
    dc_orphan_batch b = {.batch = dc_round_stripes(o->fs, lay)};
    if (b.batch > DC_ROUND_STRIPES_MAX)
        b.batch = DC_ROUND_STRIPES_MAX;
    b.units = malloc((uint64_t)lay->n * b.batch * lay->su);
    if (b.units == NULL)
        rc = -ENOMEM;
    bool in_doubt = false;
    uint32_t missed = unreached;
    for (uint64_t s = o->first; s < end && rc == 0; s += b.batch) {
        b.first = s;
        b.count = end - s < b.batch ? end - s : b.batch;
        rc = dc_orphan_plan(o, &b);
        for (uint64_t i = 0; i < b.count && rc == 0; i++)
            in_doubt |= b.rewrite[i] != 0;
        if (rc == 0)
            rc = dc_orphan_read(o, &b);
        if (rc == 0)
            rc = dc_orphan_compute(o, &b);
        if (rc == 0)
            rc = dc_orphan_write(o, &b, &missed);
    }
    free(b.units);
    if (rc == 0 && missed != 0)
        rc = dc_orphan_mark_missed(o, missed);
    /* on failure the positions in doubt stay locked by us, so no write
     * builds on them; depfs-recovery repairs its own stale locks too, and
     * that later repair takes them over (with more servers back) */
    dc_orphan_unlock(o, rc < 0);
    if (rc == 0)
        log_info("repaired orphan lock of client %llu op %llu on inode %llu stripes %llu+%llu "
                 "(%s; untrusted positions %#x)", (unsigned long long)o->owner_client,
                 (unsigned long long)o->owner_op, (unsigned long long)o->t.ino,
                 (unsigned long long)o->first, (unsigned long long)o->count,
                 in_doubt ? "units in doubt rewritten" : "nothing in doubt", o->untrusted);
    return rc;
}

/* Release a stale lock of a removed file wherever it may be held. */
static void dc_orphan_release_everywhere(depfs_t *fs, uint64_t ino, const Depfs__LockSpec *l)
{
    uint32_t ids[CONFIG_MAX_IOSERVERS];
    unsigned n = dc_live_servers(fs, UINT32_MAX, ids, CONFIG_MAX_IOSERVERS);
    dc_ctl *v = calloc(n ? n : 1, sizeof *v);
    if (v == NULL)
        return;
    for (unsigned i = 0; i < n; i++) {
        dc_ctl_init(&v[i], ids[i], DEPFS__IO_OP__IO_UNLOCK, ino);
        v[i].req.lock = (Depfs__LockSpec *)l;
    }
    dc_ctl_run(fs, v, n);
    dc_ctl_free(v, n);
    free(v);
}

int depfs_repair_orphan_lock(depfs_t *fs, uint64_t ino, uint64_t first_stripe,
                             uint64_t stripe_count, uint64_t owner_client, uint64_t owner_op)
{
    if (fs == NULL || stripe_count == 0 || first_stripe + stripe_count < first_stripe)
        return -EINVAL;
    dc_orphan *o = calloc(1, sizeof *o);
    if (o == NULL)
        return -ENOMEM;
    o->fs = fs;
    o->first = first_stripe;
    o->count = stripe_count;
    o->owner_client = owner_client;
    o->owner_op = owner_op;
    int rc = dc_target_load(fs, ino, &o->t);
    if (rc == -ENOENT) {
        Depfs__LockSpec l;
        depfs__lock_spec__init(&l);
        l.first_stripe = first_stripe;
        l.stripe_count = stripe_count;
        l.owner_client = owner_client;
        l.owner_op = owner_op;
        dc_orphan_release_everywhere(fs, ino, &l);
    } else if (rc == 0) {
        rc = dc_orphan_repair(o);
    }
    free(o);
    return rc;
}
