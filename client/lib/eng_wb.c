/* eng_wb.c - write-behind and durability: per-inode aggregation of
 * writes (dc_wb_*) and dc_data_fsync (fsync of every strip file).
 *
 * Two parts, never overlapping each other:
 *   run      one contiguous run [off, off+len) of an inode's bytes (the
 *            current sequential stream), at most a few stripes (max(4
 *            stripes, 4 MiB), capped at 64 MiB); written out when it
 *            reaches a stripe boundary at its capacity (whole stripes: no
 *            pre-read), so streaming writes leave the client as full stripes.
 *   scatter  small writes that are not sequential (a run shorter than a
 *            stripe that a non-sequential write ended): a sorted set of
 *            disjoint extents, at most DC_WB_SCATTER_EXTENTS_MAX of them and
 *            DC_WB_SCATTER_BYTES_MAX bytes; written out together, in as few
 *            lock rounds as the requests allow, when full. Random small
 *            writes thus cost two round trips per round of ~28 stripes
 *            instead of two per write.
 *   flight   a full scatter set, or a run that reached its boundary, is
 *            handed to a background thread (the "flight") and written out
 *            while new writes fill a fresh set or run: the writer does not
 *            wait for the servers, so a streaming writer's next bytes are
 *            copied in while the last run is encoded and sent. One flight
 *            at a time; every other write-out of the inode (run, scatter,
 *            large writes, flush, fsync, reads of buffered ranges, close,
 *            truncate) first waits for it to land, so newer bytes never
 *            land before older ones. Its error is kept for the handles,
 *            as is that of every write-out of buffered bytes, a write's
 *            included (dc_wb_flush in engines.h). Memory: at most two
 *            scatter sets and two run buffers (the second one allocated by
 *            the first run flight).
 * Everything is written out before an overlapping read or write-through,
 * and on flush/fsync/close/truncate; or handed over (dc_wb_hand_partial):
 * the stripes held whole are written out, the pieces of the others go to
 * the caller, which gathers such pieces from several clients to write
 * each stripe once (the ROMIO driver's MPI_File_sync and close). A small
 * write (under a stripe) that overlaps the scatter set is merged into it,
 * its bytes over the older ones (random writes hit buffered blocks again
 * often: 1000 random 4 KiB writes to a 64 MiB file repeat ~30 blocks, and
 * flushing the whole set for each made such writes cost a flush every ~30
 * writes); a larger one flushes the set first. Either way the newest bytes win. Handles opened
 * O_DIRECT/O_SYNC/O_DSYNC (and the recovery client) write through.
 * in->wb is set once (atomically) and freed by dc_wb_release; wb->lock
 * serializes everything else, except the flight's extents (wb->fl) and run
 * (wb->fbuf): the flight thread writes them out without the lock (nobody
 * changes them while wb->flying) and empties them under it. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "engines.h"
#include "log.h"

#define DC_WB_MIN_STRIPES 4u
#define DC_WB_MIN_BYTES (4u << 20)
#define DC_WB_MAX_BYTES (64u << 20)
#define DC_WB_SCATTER_EXTENTS_MAX 1024u
#define DC_WB_SCATTER_BYTES_MAX (8u << 20)
/* A flight is cut into this many lanes of whole stripes, written out at
 * once: a set of random 4 KiB writes spans hundreds of stripes, and one
 * lock round covers a few dozen, so one lane waits out round trip after
 * round trip. Lanes never share a stripe: their locks do not meet. */
#define DC_WB_FLIGHT_LANES 4u

/* One buffered extent, in the shape of the pieces it may be handed over
 * as (depfs.h depfs_piece): data malloc'd, len bytes. */
typedef depfs_piece dc_wb_ext;

typedef struct dc_wb {
    pthread_mutex_t lock;
    pthread_cond_t landed; /* the flight finished */
    uint8_t *buf;
    uint64_t cap;    /* bytes */
    uint64_t off;    /* file offset of buf[0] */
    uint64_t len;    /* buffered bytes */
    dc_wb_ext *sc;   /* scatter set: DC_WB_SCATTER_EXTENTS_MAX slots, sorted, disjoint */
    unsigned sc_n;
    uint64_t sc_bytes;
    dc_wb_ext *fl;   /* the flight: a former scatter set being written out */
    unsigned fl_n;
    uint8_t *fbuf;   /* or the flight: a former run buffer (cap bytes, NULL */
    uint64_t foff;   /* until the first run flight), fbuf[0] at file offset */
    uint64_t flen;   /* foff; flen bytes, 0 when the flight is extents */
    bool flying;
    int err;          /* the last write-out failure ... */
    uint64_t err_seq; /* ... and how many there were: a handle's mark */
} dc_wb;

/* Under wb->lock: a write-out of buffered bytes failed (a flight's, a
 * flush's, or one a write had to make first). Those bytes were
 * acknowledged by earlier writes: every handle is told (engines.h
 * dc_wb_flush). Returns rc. */
static int dc_wb_note_err(dc_wb *wb, int rc)
{
    if (rc < 0) {
        wb->err = rc;
        wb->err_seq++;
    }
    return rc;
}

static uint64_t dc_wb_capacity(const layout *lay)
{
    uint64_t sb = layout_stripe_bytes(lay);
    uint64_t stripes = DC_WB_MIN_STRIPES;
    while (stripes * sb < DC_WB_MIN_BYTES)
        stripes++;
    uint64_t cap = stripes * sb;
    if (cap > DC_WB_MAX_BYTES)
        cap = sb <= DC_WB_MAX_BYTES ? (DC_WB_MAX_BYTES / sb) * sb : DC_WB_MAX_BYTES;
    return cap;
}

static dc_wb *dc_wb_peek(dc_inode *in)
{
    return __atomic_load_n((dc_wb **)&in->wb, __ATOMIC_ACQUIRE);
}

static dc_wb *dc_wb_get(dc_inode *in)
{
    dc_wb *wb = dc_wb_peek(in);
    if (wb != NULL)
        return wb;
    dc_wb *fresh = calloc(1, sizeof *fresh);
    if (fresh == NULL)
        return NULL;
    fresh->cap = dc_wb_capacity(&in->lay);
    fresh->buf = malloc(fresh->cap);
    fresh->sc = calloc(DC_WB_SCATTER_EXTENTS_MAX, sizeof *fresh->sc);
    fresh->fl = calloc(DC_WB_SCATTER_EXTENTS_MAX, sizeof *fresh->fl);
    if (fresh->buf == NULL || fresh->sc == NULL || fresh->fl == NULL) {
        free(fresh->fl);
        free(fresh->sc);
        free(fresh->buf);
        free(fresh);
        return NULL;
    }
    pthread_mutex_init(&fresh->lock, NULL);
    pthread_cond_init(&fresh->landed, NULL);
    dc_wb *expected = NULL;
    if (__atomic_compare_exchange_n((dc_wb **)&in->wb, &expected, fresh, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
        return fresh;
    pthread_cond_destroy(&fresh->landed);
    pthread_mutex_destroy(&fresh->lock);
    free(fresh->fl);
    free(fresh->sc);
    free(fresh->buf);
    free(fresh);
    return expected;
}

bool dc_wb_enabled(const depfs_fh_t *fh)
{
    return !(fh->flags & (O_DIRECT | O_SYNC | O_DSYNC)) && !fh->fs->ignore_locks &&
           !dc_test_hooks_get()->write_behind_off;
}

static bool dc_fh_sync(const depfs_fh_t *fh) { return (fh->flags & (O_SYNC | O_DSYNC)) != 0; }

/* Wait until no flight is in the air. wb->lock held (released meanwhile). */
static void dc_wb_wait_landed(dc_wb *wb)
{
    while (wb->flying)
        pthread_cond_wait(&wb->landed, &wb->lock);
}

/* Write one run's bytes out (no lock needed: the caller owns them). */
static int dc_wb_write_run(depfs_t *fs, dc_inode *in, const uint8_t *buf, uint64_t off,
                           uint64_t len)
{
    int rc = dc_write_range(fs, in, buf, off, len, false);
    if (rc < 0)
        log_warn("write-behind of inode %llu [%llu, +%llu) failed: %s",
                 (unsigned long long)in->ino, (unsigned long long)off,
                 (unsigned long long)len, strerror(-rc));
    return rc;
}

/* Write the run out and empty it (even on failure: the error is the
 * caller's to report). wb->lock held. */
static int dc_wb_flush_run(depfs_t *fs, dc_inode *in, dc_wb *wb)
{
    if (wb->len == 0)
        return 0;
    dc_wb_wait_landed(wb); /* older bytes of this range may be in the air */
    int rc = dc_wb_write_run(fs, in, wb->buf, wb->off, wb->len);
    wb->len = 0;
    return dc_wb_note_err(wb, rc);
}

/* ---------------------------------------------------------- scatter set */

static void dc_wb_exts_free(dc_wb_ext *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(x[i].data);
}

static void dc_wb_scatter_clear(dc_wb *wb)
{
    dc_wb_exts_free(wb->sc, wb->sc_n);
    wb->sc_n = 0;
    wb->sc_bytes = 0;
}

/* Write n buffered extents out (no lock needed: the caller owns them). */
static int dc_wb_write_exts(depfs_t *fs, dc_inode *in, const dc_wb_ext *x, unsigned n)
{
    dc_wext *ext = malloc(n * sizeof *ext);
    int rc = -ENOMEM;
    uint64_t bytes = 0;
    if (ext != NULL) {
        for (unsigned i = 0; i < n; i++) {
            ext[i] = (dc_wext){.off = x[i].off, .len = x[i].len, .data = x[i].data};
            bytes += x[i].len;
        }
        rc = dc_write_extents(fs, in, ext, n, false);
        free(ext);
    }
    if (rc < 0)
        log_warn("write-behind of inode %llu (%u scattered extents, %llu bytes) failed: %s",
                 (unsigned long long)in->ino, n, (unsigned long long)bytes, strerror(-rc));
    return rc;
}

/* Write the scatter set out and empty it (even on failure). wb->lock held. */
static int dc_wb_flush_scatter(depfs_t *fs, dc_inode *in, dc_wb *wb)
{
    if (wb->sc_n == 0)
        return 0;
    dc_wb_wait_landed(wb);
    int rc = dc_wb_write_exts(fs, in, wb->sc, wb->sc_n);
    dc_wb_scatter_clear(wb);
    return dc_wb_note_err(wb, rc);
}

typedef struct dc_wb_flight {
    depfs_t *fs;
    dc_inode *in;
    dc_wb *wb;
} dc_wb_flight;

typedef struct dc_wb_lane {
    depfs_t *fs;
    dc_inode *in;
    const dc_wb_ext *x;
    unsigned n;
    int rc;
} dc_wb_lane;

static void *dc_wb_lane_main(void *arg)
{
    dc_wb_lane *l = arg;
    l->rc = dc_wb_write_exts(l->fs, l->in, l->x, l->n);
    return NULL;
}

/* Where the lane after extent index `from` may start: the first extent at
 * or after `want` that shares no stripe with the one before it. */
static unsigned dc_wb_lane_cut(const layout *lay, const dc_wb_ext *x, unsigned n, unsigned from,
                               unsigned want)
{
    unsigned j = want > from ? want : from + 1;
    while (j < n && layout_stripe_of(lay, x[j].off) ==
                        layout_stripe_of(lay, x[j - 1].off + x[j - 1].len - 1))
        j++;
    return j;
}

/* Write n extents out in up to DC_WB_FLIGHT_LANES lanes at once. */
static int dc_wb_write_lanes(depfs_t *fs, dc_inode *in, const dc_wb_ext *x, unsigned n)
{
    dc_wb_lane lane[DC_WB_FLIGHT_LANES];
    pthread_t th[DC_WB_FLIGHT_LANES];
    bool started[DC_WB_FLIGHT_LANES] = {false};
    unsigned nl = 0, from = 0;
    while (from < n && nl < DC_WB_FLIGHT_LANES) {
        unsigned to = nl + 1 == DC_WB_FLIGHT_LANES
                          ? n
                          : dc_wb_lane_cut(&in->lay, x, n, from, (unsigned)((uint64_t)n * (nl + 1) /
                                                                           DC_WB_FLIGHT_LANES));
        lane[nl] = (dc_wb_lane){.fs = fs, .in = in, .x = x + from, .n = to - from};
        from = to;
        nl++;
    }
    for (unsigned i = 1; i < nl; i++) /* lane 0 runs here */
        started[i] = pthread_create(&th[i], NULL, dc_wb_lane_main, &lane[i]) == 0;
    dc_wb_lane_main(&lane[0]);
    int rc = lane[0].rc;
    for (unsigned i = 1; i < nl; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        else
            dc_wb_lane_main(&lane[i]); /* no thread: in turn */
        if (rc == 0)
            rc = lane[i].rc;
    }
    return rc;
}

static void *dc_wb_flight_main(void *arg)
{
    dc_wb_flight f = *(dc_wb_flight *)arg;
    free(arg);
    dc_wb *wb = f.wb;
    int rc = wb->flen > 0 ? dc_wb_write_run(f.fs, f.in, wb->fbuf, wb->foff, wb->flen)
                          : dc_wb_write_lanes(f.fs, f.in, wb->fl, wb->fl_n);
    pthread_mutex_lock(&wb->lock);
    dc_wb_exts_free(wb->fl, wb->fl_n);
    wb->fl_n = 0;
    wb->flen = 0;
    dc_wb_note_err(wb, rc); /* told at the handles' next flush/fsync/close */
    wb->flying = false;
    pthread_cond_broadcast(&wb->landed);
    pthread_mutex_unlock(&wb->lock);
    return NULL;
}

/* Start the flight thread for what wb->fl or wb->fbuf holds (wb->flying
 * set by the caller). Returns 0, or an error when no thread could be had:
 * then nothing flies and the caller writes it out itself. wb->lock held. */
static int dc_wb_launch(depfs_t *fs, dc_inode *in, dc_wb *wb)
{
    assert(wb->flying && (wb->fl_n > 0) != (wb->flen > 0));
    dc_wb_flight *f = malloc(sizeof *f);
    if (f == NULL) {
        wb->flying = false;
        return -ENOMEM;
    }
    *f = (dc_wb_flight){.fs = fs, .in = in, .wb = wb};
    pthread_attr_t at;
    pthread_t th;
    int rc = pthread_attr_init(&at);
    if (rc == 0) {
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        rc = pthread_create(&th, &at, dc_wb_flight_main, f);
        pthread_attr_destroy(&at);
    }
    if (rc == 0)
        return 0;
    free(f);
    wb->flying = false;
    return -rc;
}

/* Hand the (full) scatter set to a background flight and start an empty
 * one; written out in place when no thread can be had. wb->lock held. */
static int dc_wb_send_scatter(depfs_t *fs, dc_inode *in, dc_wb *wb)
{
    if (wb->sc_n == 0)
        return 0;
    dc_wb_wait_landed(wb);
    dc_wb_ext *t = wb->fl;
    wb->fl = wb->sc;
    wb->fl_n = wb->sc_n;
    wb->sc = t;
    wb->sc_n = 0;
    wb->sc_bytes = 0;
    wb->flying = true;
    if (dc_wb_launch(fs, in, wb) == 0)
        return 0;
    int rc = dc_wb_write_exts(fs, in, wb->fl, wb->fl_n); /* no thread: here */
    dc_wb_exts_free(wb->fl, wb->fl_n);
    wb->fl_n = 0;
    return dc_wb_note_err(wb, rc);
}

/* Hand the run (at its boundary) to a background flight and start an empty
 * one in the other buffer; written out in place when no second buffer or
 * thread can be had. wb->lock held. */
static int dc_wb_send_run(depfs_t *fs, dc_inode *in, dc_wb *wb)
{
    if (wb->len == 0)
        return 0;
    dc_wb_wait_landed(wb);
    if (wb->fbuf == NULL && (wb->fbuf = malloc(wb->cap)) == NULL)
        return dc_wb_flush_run(fs, in, wb);
    uint8_t *t = wb->fbuf;
    wb->fbuf = wb->buf;
    wb->foff = wb->off;
    wb->flen = wb->len;
    wb->buf = t;
    wb->len = 0;
    wb->flying = true;
    if (dc_wb_launch(fs, in, wb) == 0)
        return 0;
    int rc = dc_wb_write_run(fs, in, wb->fbuf, wb->foff, wb->flen); /* no thread: here */
    wb->flen = 0;
    return dc_wb_note_err(wb, rc);
}

/* First of n sorted, disjoint extents whose end is after off (n when none). */
static unsigned dc_wb_exts_find(const dc_wb_ext *x, unsigned n, uint64_t off)
{
    unsigned lo = 0, hi = n;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (x[mid].off + x[mid].len <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool dc_wb_exts_overlap(const dc_wb_ext *x, unsigned n, uint64_t off, uint64_t len)
{
    unsigned i = dc_wb_exts_find(x, n, off);
    return i < n && x[i].off < off + len;
}

/* Whether the flight in the air holds bytes of [off, off+len). wb->lock
 * held (the flight's extents and run stay put until it lands: its thread
 * empties them under wb->lock). */
static bool dc_wb_flight_overlaps(const dc_wb *wb, uint64_t off, uint64_t len)
{
    if (!wb->flying)
        return false;
    if (wb->flen > 0)
        return off < wb->foff + wb->flen && wb->foff < off + len;
    return dc_wb_exts_overlap(wb->fl, wb->fl_n, off, len);
}

static unsigned dc_wb_scatter_find(const dc_wb *wb, uint64_t off)
{
    return dc_wb_exts_find(wb->sc, wb->sc_n, off);
}

static bool dc_wb_scatter_overlaps(const dc_wb *wb, uint64_t off, uint64_t len)
{
    return dc_wb_exts_overlap(wb->sc, wb->sc_n, off, len);
}

/* The extent holding all of [off, off+len), or NULL. */
static dc_wb_ext *dc_wb_scatter_within(dc_wb *wb, uint64_t off, uint64_t len)
{
    unsigned i = dc_wb_scatter_find(wb, off);
    if (i < wb->sc_n && wb->sc[i].off <= off && off + len <= wb->sc[i].off + wb->sc[i].len)
        return &wb->sc[i];
    return NULL;
}

/* Add [off, off+len) as one extent, merged with the extents it overlaps or
 * touches; its bytes win over theirs. The caller made room (at most one
 * more extent and len more bytes). */
static int dc_wb_scatter_add(dc_wb *wb, const uint8_t *buf, uint64_t off, uint64_t len)
{
    dc_wb_ext *in = dc_wb_scatter_within(wb, off, len);
    if (in != NULL) {
        memcpy(in->data + (off - in->off), buf, len); /* a rewrite: no new memory */
        return 0;
    }
    unsigned first = dc_wb_scatter_find(wb, off > 0 ? off - 1 : 0); /* may touch at off */
    unsigned last = first; /* one past the extents merged */
    while (last < wb->sc_n && wb->sc[last].off <= off + len)
        last++;
    uint64_t a = off, b = off + len;
    if (last > first) {
        a = wb->sc[first].off < a ? wb->sc[first].off : a;
        uint64_t e = wb->sc[last - 1].off + wb->sc[last - 1].len;
        b = e > b ? e : b;
    }
    assert(last > first || wb->sc_n < DC_WB_SCATTER_EXTENTS_MAX);
    uint8_t *data = malloc(b - a);
    if (data == NULL)
        return -ENOMEM;
    for (unsigned i = first; i < last; i++) {
        memcpy(data + (wb->sc[i].off - a), wb->sc[i].data, wb->sc[i].len);
        free(wb->sc[i].data);
        wb->sc_bytes -= wb->sc[i].len;
    }
    memcpy(data + (off - a), buf, len); /* last: the newest bytes win */
    unsigned removed = last - first;
    if (removed != 1) {
        /* replace [first, last) by one slot */
        memmove(&wb->sc[first + 1], &wb->sc[last], (wb->sc_n - last) * sizeof *wb->sc);
        wb->sc_n = wb->sc_n - removed + 1;
    }
    wb->sc[first] = (dc_wb_ext){.off = a, .len = b - a, .data = data};
    wb->sc_bytes += b - a;
    return 0;
}

/* Whether [off, off+len) may join the scatter set without going over its
 * bounds (it adds at most one extent and len bytes). */
static bool dc_wb_scatter_room(const dc_wb *wb, uint64_t len)
{
    return wb->sc_n < DC_WB_SCATTER_EXTENTS_MAX && wb->sc_bytes + len <= DC_WB_SCATTER_BYTES_MAX;
}

/* The run ends (a non-sequential write came): a short run joins the
 * scatter set, a long one is written out. */
static int dc_wb_retire_run(depfs_t *fs, dc_inode *in, dc_wb *wb)
{
    if (wb->len == 0)
        return 0;
    if (wb->len >= layout_stripe_bytes(&in->lay))
        return dc_wb_flush_run(fs, in, wb);
    int rc = 0;
    if (!dc_wb_scatter_room(wb, wb->len))
        rc = dc_wb_send_scatter(fs, in, wb);
    if (rc == 0)
        rc = dc_wb_scatter_add(wb, wb->buf, wb->off, wb->len);
    if (rc == -ENOMEM)
        return dc_wb_flush_run(fs, in, wb);
    wb->len = 0;
    return rc;
}

/* Everything out. wb->lock held. */
static int dc_wb_flush_locked(depfs_t *fs, dc_inode *in, dc_wb *wb)
{
    dc_wb_wait_landed(wb);
    int rc = dc_wb_flush_run(fs, in, wb);
    int rc2 = dc_wb_flush_scatter(fs, in, wb);
    return rc < 0 ? rc : rc2;
}

/* End of the buffer when it starts at wb->off: the last stripe boundary
 * within capacity (or the capacity itself for stripes larger than it). */
static uint64_t dc_wb_limit_end(const dc_inode *in, const dc_wb *wb)
{
    uint64_t sb = layout_stripe_bytes(&in->lay);
    uint64_t end = ((wb->off + wb->cap) / sb) * sb;
    return end > wb->off ? end : wb->off + wb->cap;
}

/* Append to the buffer, flushing each time it fills to its boundary. */
static int dc_wb_append(depfs_t *fs, dc_inode *in, dc_wb *wb, const uint8_t *buf, uint64_t off,
                        uint64_t len)
{
    while (len > 0) {
        if (wb->len == 0)
            wb->off = off;
        assert(off == wb->off + wb->len);
        uint64_t limit = dc_wb_limit_end(in, wb);
        uint64_t room = limit - off;
        uint64_t chunk = len < room ? len : room;
        assert(chunk > 0 && wb->len + chunk <= wb->cap);
        memcpy(wb->buf + wb->len, buf, chunk);
        wb->len += chunk;
        buf += chunk;
        off += chunk;
        len -= chunk;
        if (off == limit) {
            int rc = dc_wb_send_run(fs, in, wb);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}

static int dc_wb_write_buffered(depfs_t *fs, dc_inode *in, dc_wb *wb, const uint8_t *buf,
                                uint64_t off, uint64_t len)
{
    uint64_t sb = layout_stripe_bytes(&in->lay);
    pthread_mutex_lock(&wb->lock);
    int rc = 0;
    if (wb->len > 0 && off >= wb->off && off + len <= wb->off + wb->len) {
        memcpy(wb->buf + (off - wb->off), buf, len); /* rewrite inside the run */
        pthread_mutex_unlock(&wb->lock);
        return 0;
    }
    if (wb->len > 0 && off != wb->off + wb->len)
        rc = dc_wb_retire_run(fs, in, wb); /* not sequential */
    if (rc == 0 && dc_wb_scatter_overlaps(wb, off, len)) {
        if (len < sb) {
            /* the run must not overlap the set: it ends here too */
            rc = dc_wb_retire_run(fs, in, wb);
            if (rc == 0 && !dc_wb_scatter_room(wb, len))
                rc = dc_wb_send_scatter(fs, in, wb); /* no overlap left, then */
            if (rc == 0 && dc_wb_scatter_overlaps(wb, off, len)) {
                rc = dc_wb_scatter_add(wb, buf, off, len);
                pthread_mutex_unlock(&wb->lock);
                return rc;
            }
        }
        if (rc == 0)
            rc = dc_wb_flush_scatter(fs, in, wb); /* older bytes there must land first */
    }
    if (rc == 0 && wb->len == 0 && len >= wb->cap) {
        /* large write: whole stripes go straight from the caller's buffer */
        uint64_t direct_end = ((off + len) / sb) * sb;
        if (direct_end > off) {
            dc_wb_wait_landed(wb);
            rc = dc_write_range(fs, in, buf, off, direct_end - off, false);
            buf += direct_end - off;
            len -= direct_end - off;
            off = direct_end;
        }
    }
    if (rc == 0)
        rc = dc_wb_append(fs, in, wb, buf, off, len);
    pthread_mutex_unlock(&wb->lock);
    return rc;
}

static int dc_wb_write_any(depfs_fh_t *fh, const uint8_t *buf, uint64_t off, uint64_t len)
{
    depfs_t *fs = fh->fs;
    dc_inode *in = fh->inode;
    if (dc_wb_enabled(fh)) {
        dc_wb *wb = dc_wb_get(in);
        if (wb != NULL)
            return dc_wb_write_buffered(fs, in, wb, buf, off, len);
    }
    /* write-through: buffered bytes of this range must land first */
    int rc = dc_wb_flush_range(fs, in, off, len);
    if (rc < 0)
        return rc;
    return dc_write_range(fs, in, buf, off, len, dc_fh_sync(fh));
}

int dc_wb_write(depfs_fh_t *fh, const uint8_t *buf, uint64_t off, uint64_t len)
{
    return dc_wb_write_any(fh, buf, off, len);
}

int dc_wb_flush_range(depfs_t *fs, dc_inode *in, uint64_t off, uint64_t len)
{
    dc_wb *wb = dc_wb_peek(in);
    if (wb == NULL)
        return 0;
    pthread_mutex_lock(&wb->lock);
    if (dc_wb_flight_overlaps(wb, off, len))
        dc_wb_wait_landed(wb);
    int rc = 0;
    if (wb->len > 0 && off < wb->off + wb->len && wb->off < off + len)
        rc = dc_wb_flush_run(fs, in, wb);
    if (rc == 0 && dc_wb_scatter_overlaps(wb, off, len))
        rc = dc_wb_flush_scatter(fs, in, wb);
    pthread_mutex_unlock(&wb->lock);
    return rc;
}

/* ------------------------------------------------------ handing over */

void dc_pieces_free(depfs_piece *p, size_t n)
{
    if (p == NULL)
        return;
    dc_wb_exts_free(p, n);
    free(p);
}

/* Copies [off, off+len) (src[0] is byte off) into p[*n...], one piece per
 * stripe it touches. The caller sized p. 0 or -ENOMEM. */
static int dc_wb_hand_copy(depfs_piece *p, size_t *n, uint64_t sb, const uint8_t *src,
                           uint64_t off, uint64_t len)
{
    while (len > 0) {
        uint64_t stripe_end = (off / sb + 1) * sb;
        uint64_t chunk = len < stripe_end - off ? len : stripe_end - off;
        uint8_t *data = malloc(chunk);
        if (data == NULL)
            return -ENOMEM;
        memcpy(data, src, chunk);
        p[(*n)++] = (depfs_piece){.off = off, .len = chunk, .data = data};
        src += chunk;
        off += chunk;
        len -= chunk;
    }
    return 0;
}

/* The run and the scatter set as one ascending list (they never overlap):
 * n = sc_n, plus one with a run. */
static void dc_wb_all_exts(const dc_wb *wb, dc_wb_ext *all)
{
    unsigned at = wb->len > 0 ? dc_wb_scatter_find(wb, wb->off) : wb->sc_n, n = at;
    memcpy(all, wb->sc, at * sizeof *all);
    if (wb->len > 0)
        all[n++] = (dc_wb_ext){.off = wb->off, .len = wb->len, .data = wb->buf};
    memcpy(all + n, wb->sc + at, (wb->sc_n - at) * sizeof *all);
}

/* dc_wb_hand_partial with wb->lock held and nothing in the air. Each
 * buffered extent [a, b) holds the whole stripes [A, B) (A, B: a and b
 * rounded up and down to stripes) and at most one piece before and one
 * after them; an extent without a whole stripe spans at most two stripes.
 * So 2 pieces per extent bound the list. Out of memory: everything is
 * written out, as a flush would, and nothing handed over. */
static int dc_wb_hand_locked(depfs_t *fs, dc_inode *in, dc_wb *wb, depfs_piece **out,
                             size_t *n_out)
{
    uint64_t sb = layout_stripe_bytes(&in->lay);
    unsigned ne = wb->sc_n + (wb->len > 0 ? 1u : 0u), nw = 0;
    if (ne == 0)
        return 0;
    dc_wb_ext *all = malloc(ne * sizeof *all), *whole = malloc(ne * sizeof *whole);
    depfs_piece *p = calloc(2 * (size_t)ne, sizeof *p);
    size_t np = 0;
    int rc = all && whole && p ? 0 : -ENOMEM;
    if (rc == 0)
        dc_wb_all_exts(wb, all);
    for (unsigned i = 0; i < ne && rc == 0; i++) {
        uint64_t a = all[i].off, b = all[i].off + all[i].len;
        uint64_t A = (a + sb - 1) / sb * sb, B = b / sb * sb;
        if (A >= B) {
            rc = dc_wb_hand_copy(p, &np, sb, all[i].data, a, b - a);
            continue;
        }
        whole[nw++] = (dc_wb_ext){.off = A, .len = B - A, .data = all[i].data + (A - a)};
        rc = dc_wb_hand_copy(p, &np, sb, all[i].data, a, A - a);
        if (rc == 0)
            rc = dc_wb_hand_copy(p, &np, sb, all[i].data + (B - a), B, b - B);
    }
    if (rc < 0) {
        dc_pieces_free(p, np);
        free(whole);
        free(all);
        return dc_wb_flush_locked(fs, in, wb);
    }
    assert(np <= 2 * (size_t)ne);
    rc = nw > 0 ? dc_wb_note_err(wb, dc_wb_write_exts(fs, in, whole, nw)) : 0;
    dc_wb_scatter_clear(wb); /* written out or handed over, even on failure */
    wb->len = 0;
    free(whole);
    free(all);
    if (np == 0) {
        free(p);
        p = NULL;
    }
    *out = p;
    *n_out = np;
    return rc;
}

int dc_wb_hand_partial(depfs_t *fs, dc_inode *in, uint64_t *mark, depfs_piece **out,
                       size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    dc_wb *wb = dc_wb_peek(in);
    if (wb == NULL)
        return 0;
    pthread_mutex_lock(&wb->lock);
    dc_wb_wait_landed(wb);
    int rc = dc_wb_hand_locked(fs, in, wb, out, n_out); /* failures noted */
    if (mark != NULL && *mark != wb->err_seq)
        rc = wb->err; /* reported as a flush reports it: the mark stays */
    pthread_mutex_unlock(&wb->lock);
    return rc;
}

int dc_wb_write_pieces(depfs_t *fs, dc_inode *in, const depfs_piece *p, unsigned n)
{
    if (n == 0)
        return 0;
    /* buffered bytes of this range are older: they land first */
    int rc = dc_wb_flush_range(fs, in, p[0].off, p[n - 1].off + p[n - 1].len - p[0].off);
    return rc < 0 ? rc : dc_wb_write_exts(fs, in, p, n);
}

uint64_t dc_wb_err_mark(dc_inode *in)
{
    dc_wb *wb = dc_wb_peek(in);
    if (wb == NULL)
        return 0;
    pthread_mutex_lock(&wb->lock);
    uint64_t seq = wb->err_seq;
    pthread_mutex_unlock(&wb->lock);
    return seq;
}

int dc_wb_flush(depfs_t *fs, dc_inode *in, uint64_t *mark, bool advance)
{
    dc_wb *wb = dc_wb_peek(in);
    if (wb == NULL)
        return 0;
    pthread_mutex_lock(&wb->lock);
    int rc = dc_wb_flush_locked(fs, in, wb); /* failures noted */
    if (mark != NULL && *mark != wb->err_seq) {
        rc = wb->err;
        if (advance)
            *mark = wb->err_seq;
    }
    pthread_mutex_unlock(&wb->lock);
    return rc;
}

void dc_wb_release(dc_inode *in)
{
    dc_wb *wb = __atomic_exchange_n((dc_wb **)&in->wb, NULL, __ATOMIC_ACQ_REL);
    if (wb == NULL)
        return;
    pthread_mutex_lock(&wb->lock);
    dc_wb_wait_landed(wb); /* flushed before release, normally: then nothing flies */
    pthread_mutex_unlock(&wb->lock);
    if (wb->len > 0 || wb->sc_n > 0)
        log_warn("inode %llu: %llu buffered bytes dropped (released without flush)",
                 (unsigned long long)in->ino, (unsigned long long)(wb->len + wb->sc_bytes));
    dc_wb_scatter_clear(wb);
    pthread_cond_destroy(&wb->landed);
    pthread_mutex_destroy(&wb->lock);
    free(wb->fl);
    free(wb->sc);
    free(wb->fbuf);
    free(wb->buf);
    free(wb);
}

/* ------------------------------------------------------------ durability */

int dc_data_fsync(depfs_t *fs, dc_inode *in, bool *measured, uint64_t *alloc_bytes)
{
    const layout *lay = &in->lay;
    *measured = false;
    dc_req *reqs = calloc(lay->n, sizeof *reqs);
    if (reqs == NULL)
        return -ENOMEM;
    for (unsigned p = 0; p < lay->n; p++) {
        dc_req_init(&reqs[p], lay, p, DEPFS__IO_OP__IO_FSYNC);
        reqs[p].keep_reply = true; /* its alloc_bytes */
    }
    dc_io_run(fs, in->ino, reqs, lay->n);
    int rc = 0;
    unsigned down = 0;
    uint64_t sum = 0;
    bool all = true;
    for (unsigned p = 0; p < lay->n; p++) {
        if (reqs[p].result == DC_ERR_DOWN)
            down++;
        else if (reqs[p].result < 0 && reqs[p].result != -ENOENT && rc == 0)
            rc = reqs[p].result;
        if (reqs[p].result != 0 || !dc_alloc_add(&sum, reqs[p].reply))
            all = false;
        dc_req_free_reply(&reqs[p]);
    }
    if (rc == 0 && down > lay->n - lay->k)
        rc = -EIO;
    if (rc < 0)
        dc_set_error("fsync of inode %llu failed: %s", (unsigned long long)in->ino, strerror(-rc));
    else if (all) {
        *measured = true;
        *alloc_bytes = sum;
    }
    free(reqs);
    return rc;
}

