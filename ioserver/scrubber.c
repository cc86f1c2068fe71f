/* scrubber.c - the background scrub of an I/O server (see scrubber.h).
 *
 * One thread: a pass walks the strip files (ios_strips_walk) and reads each
 * one in IOS_SCRUB_CHUNK_BYTES steps through the checked read path, which
 * verifies every block; a chunk that fails is read again in
 * IOS_SCRUB_PROBE_BYTES pieces to list exactly the damaged ones. Pacing:
 * after each chunk the thread sleeps until the pass's bytes over its
 * elapsed time are within the rate. Waits are on a monotonic condition
 * variable, so stopping is prompt. */
#include "scrubber.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"

struct ios_scrubber {
    ios_strips *strips;
    uint32_t rate;
    pthread_t th;
    bool started;
    ios_client_io *client_io; /* NULL: never yields */
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* CLOCK_MONOTONIC; stop */
    bool stopping;           /* guarded by mu */
    ios_scrub_stats st;      /* guarded by mu */
    ios_scrub_damage dmg[IOS_SCRUB_DAMAGE_MAX]; /* guarded by mu */
    size_t n_dmg;
    /* the thread's own */
    uint8_t *buf;            /* one chunk */
    uint64_t pass_start_ms, pass_bytes;
};

/* Waits ms unless stopped meanwhile; false once stopping. */
static bool scrub_wait(ios_scrubber *sc, uint64_t ms)
{
    pthread_mutex_lock(&sc->mu);
    if (!sc->stopping && ms > 0) {
        struct timespec until = clock_deadline_after_ms(ms);
        pthread_cond_timedwait(&sc->cv, &sc->mu, &until);
    }
    bool go = !sc->stopping;
    pthread_mutex_unlock(&sc->mu);
    return go;
}

/* Before a chunk: yield to clients, then keep the pass within the rate. */
static bool scrub_pace(ios_scrubber *sc)
{
    uint64_t waited = 0;
    while (waited < IOS_SCRUB_MAX_WAIT_MS) {
        if (!sc->client_io || ios_client_io_idle_ms(sc->client_io) >= IOS_SCRUB_YIELD_MS)
            break;
        if (!scrub_wait(sc, IOS_SCRUB_YIELD_MS))
            return false;
        waited += IOS_SCRUB_YIELD_MS;
    }
    uint64_t due_ms = sc->pass_bytes * CLOCK_MS_PER_S / sc->rate;
    uint64_t elapsed = clock_now_ms() - sc->pass_start_ms;
    return scrub_wait(sc, due_ms > elapsed ? due_ms - elapsed : 0);
}

/* Lists a damaged range, joined to a listed one it continues; false when
 * it is listed already. Caller holds mu. */
static bool damage_add_locked(ios_scrubber *sc, uint64_t file_id, uint64_t off, uint64_t len)
{
    for (size_t i = 0; i < sc->n_dmg; i++) {
        ios_scrub_damage *d = &sc->dmg[i];
        if (d->file_id != file_id)
            continue;
        if (d->length == 0 || (d->offset <= off && off + len <= d->offset + d->length))
            return false; /* the strip is listed as lost, or this range already */
        if (len != 0 && d->offset + d->length == off) {
            d->length += len;
            sc->st.blocks_damaged++;
            return true;
        }
    }
    sc->st.blocks_damaged++;
    if (sc->n_dmg < IOS_SCRUB_DAMAGE_MAX) /* else found again once the list has room */
        sc->dmg[sc->n_dmg++] = (ios_scrub_damage){ .file_id = file_id, .offset = off,
                                                   .length = len };
    return true;
}

static void damage_add(ios_scrubber *sc, uint64_t file_id, uint64_t off, uint64_t len, int err)
{
    pthread_mutex_lock(&sc->mu);
    bool fresh = damage_add_locked(sc, file_id, off, len);
    pthread_mutex_unlock(&sc->mu);
    if (fresh && len == 0)
        log_warn("background scrub: strip %016" PRIx64 " is lost (its checksums remain)",
                 file_id);
    else if (fresh)
        log_warn("background scrub: strip %016" PRIx64 " bytes [%" PRIu64 ",%" PRIu64
                 ") damaged: %s", file_id, off, off + len, strerror(-err));
}

static int scrub_read(ios_scrubber *sc, uint64_t file_id, uint64_t off, uint64_t len)
{
    assert(len <= IOS_SCRUB_CHUNK_BYTES); /* sc->buf's size */
    ios_extent e = { .offset = off, .length = len };
    return ios_strips_read(sc->strips, file_id, &e, 1, sc->buf, NULL, NULL);
}

/* A chunk that failed: which probe pieces are damaged. */
static void scrub_probe(ios_scrubber *sc, uint64_t file_id, uint64_t off, uint64_t len)
{
    for (uint64_t at = off; at < off + len; at += IOS_SCRUB_PROBE_BYTES) {
        uint64_t n = off + len - at < IOS_SCRUB_PROBE_BYTES ? off + len - at : IOS_SCRUB_PROBE_BYTES;
        int rc = scrub_read(sc, file_id, at, n);
        if (rc == -ENODATA) {
            damage_add(sc, file_id, 0, 0, rc);
            return;
        }
        if (rc < 0)
            damage_add(sc, file_id, at, n, rc);
    }
}

static void scrub_count(ios_scrubber *sc, uint64_t bytes)
{
    sc->pass_bytes += bytes;
    pthread_mutex_lock(&sc->mu);
    sc->st.bytes_verified += bytes;
    pthread_mutex_unlock(&sc->mu);
}

/* ios_strip_walk_fn: verify one strip file; false to stop the walk. */
static bool scrub_file(void *arg, uint64_t file_id, bool lost)
{
    ios_scrubber *sc = arg;
    if (lost) {
        damage_add(sc, file_id, 0, 0, -ENODATA);
        return scrub_pace(sc);
    }
    uint64_t adopted = 0;
    int rc = ios_strips_adopt(sc->strips, file_id, &adopted);
    if (rc < 0)
        log_warn("background scrub: strip %016" PRIx64 ": cannot add checksums to it: %s",
                 file_id, strerror(-rc));
    else if (adopted > 0)
        log_info("background scrub: strip %016" PRIx64 " predates checksums: %" PRIu64
                 " blocks have theirs now", file_id, adopted);
    uint64_t size = 0;
    rc = ios_strips_checked_size(sc->strips, file_id, &size);
    if (rc == -ENODATA)
        damage_add(sc, file_id, 0, 0, rc);
    if (rc < 0)
        return scrub_pace(sc);
    for (uint64_t off = 0; off < size;) {
        if (!scrub_pace(sc))
            return false;
        uint64_t len = size - off < IOS_SCRUB_CHUNK_BYTES ? size - off : IOS_SCRUB_CHUNK_BYTES;
        int rc = scrub_read(sc, file_id, off, len);
        if (rc == -ENODATA) {
            damage_add(sc, file_id, 0, 0, rc);
            return true;
        }
        if (rc < 0)
            scrub_probe(sc, file_id, off, len);
        scrub_count(sc, len);
        off += len;
    }
    return true;
}

/* Whether a listed range reads fine now, a chunk at a time (adjacent
 * damaged pieces join into one range of any length). */
static bool range_reads(ios_scrubber *sc, const ios_scrub_damage *d)
{
    for (uint64_t at = d->offset; at < d->offset + d->length; at += IOS_SCRUB_CHUNK_BYTES) {
        uint64_t left = d->offset + d->length - at;
        if (scrub_read(sc, d->file_id, at, left < IOS_SCRUB_CHUNK_BYTES ? left : IOS_SCRUB_CHUNK_BYTES) < 0)
            return false;
    }
    return true;
}

/* At a pass's start: listed ranges that read fine now were rewritten some
 * other way (or the failure passed): drop them. */
static void recheck_listed(ios_scrubber *sc)
{
    ios_scrub_damage v[IOS_SCRUB_DAMAGE_MAX];
    size_t n = ios_scrubber_damage(sc, v, IOS_SCRUB_DAMAGE_MAX);
    for (size_t i = 0; i < n; i++) {
        if (v[i].length == 0 || !range_reads(sc, &v[i]))
            continue;
        pthread_mutex_lock(&sc->mu);
        for (size_t j = 0; j < sc->n_dmg; j++) {
            if (memcmp(&sc->dmg[j], &v[i], sizeof v[i]) == 0) {
                sc->dmg[j] = sc->dmg[--sc->n_dmg];
                break;
            }
        }
        pthread_mutex_unlock(&sc->mu);
    }
}

static void *scrub_main(void *arg)
{
    ios_scrubber *sc = arg;
    while (scrub_wait(sc, IOS_SCRUB_PASS_GAP_MS)) {
        recheck_listed(sc);
        sc->pass_start_ms = clock_now_ms();
        sc->pass_bytes = 0;
        int rc = ios_strips_walk(sc->strips, scrub_file, sc);
        pthread_mutex_lock(&sc->mu);
        if (rc == 0 && !sc->stopping) {
            sc->st.passes++;
            sc->st.last_pass_bytes = sc->pass_bytes;
            sc->st.last_pass_ms = clock_now_ms() - sc->pass_start_ms;
            sc->st.last_pass_end_s = (uint64_t)(clock_real_ns() / (int64_t)CLOCK_NS_PER_S);
        }
        pthread_mutex_unlock(&sc->mu);
        if (rc < 0)
            log_warn("background scrub: cannot list the strip files: %s", strerror(-rc));
    }
    return NULL;
}

int ios_scrubber_start(ios_strips *s, uint32_t rate, ios_client_io *client_io,
                       ios_scrubber **out)
{
    ios_scrubber *sc = calloc(1, sizeof(*sc));
    if (!sc)
        return -ENOMEM;
    sc->strips = s;
    sc->rate = rate;
    sc->st.rate = rate;
    sc->client_io = client_io;
    pthread_mutex_init(&sc->mu, NULL);
    clock_cond_init(&sc->cv);
    if (rate > 0) {
        sc->buf = malloc(IOS_SCRUB_CHUNK_BYTES);
        int rc = sc->buf ? -pthread_create(&sc->th, NULL, scrub_main, sc) : -ENOMEM;
        if (rc) {
            ios_scrubber_stop(sc);
            return rc;
        }
        sc->started = true;
    }
    *out = sc;
    return 0;
}

void ios_scrubber_stop(ios_scrubber *sc)
{
    if (!sc)
        return;
    pthread_mutex_lock(&sc->mu);
    sc->stopping = true;
    pthread_cond_broadcast(&sc->cv);
    pthread_mutex_unlock(&sc->mu);
    if (sc->started)
        pthread_join(sc->th, NULL);
    pthread_cond_destroy(&sc->cv);
    pthread_mutex_destroy(&sc->mu);
    free(sc->buf);
    free(sc);
}

void ios_scrubber_note_write(ios_scrubber *sc, uint64_t file_id, uint64_t offset,
                             uint64_t length)
{
    if (!sc)
        return;
    uint64_t end = offset + length;
    pthread_mutex_lock(&sc->mu);
    for (size_t i = 0; i < sc->n_dmg;) {
        ios_scrub_damage *d = &sc->dmg[i];
        uint64_t d_end = d->offset + d->length;
        if (d->file_id != file_id || (d->length != 0 && (end <= d->offset || d_end <= offset))) {
            i++;
            continue;
        }
        if (d->length == 0) { /* a lost strip file: written again, it exists */
            sc->st.blocks_repaired++;
        } else if (offset <= d->offset && d_end <= end) {
            sc->st.blocks_repaired += (d->length + IOS_SCRUB_PROBE_BYTES - 1) / IOS_SCRUB_PROBE_BYTES;
        } else if (offset <= d->offset) { /* its head was rewritten */
            sc->st.blocks_repaired += (end - d->offset) / IOS_SCRUB_PROBE_BYTES;
            d->length = d_end - end;
            d->offset = end;
            i++;
            continue;
        } else if (d_end <= end) { /* its tail */
            sc->st.blocks_repaired += (d_end - offset) / IOS_SCRUB_PROBE_BYTES;
            d->length = offset - d->offset;
            i++;
            continue;
        } else { /* inside it: the rest is found again by the next pass */
            i++;
            continue;
        }
        sc->dmg[i] = sc->dmg[--sc->n_dmg];
    }
    pthread_mutex_unlock(&sc->mu);
}

void ios_scrubber_note_remove(ios_scrubber *sc, uint64_t file_id)
{
    if (!sc)
        return;
    pthread_mutex_lock(&sc->mu);
    for (size_t i = 0; i < sc->n_dmg;) {
        if (sc->dmg[i].file_id == file_id)
            sc->dmg[i] = sc->dmg[--sc->n_dmg];
        else
            i++;
    }
    pthread_mutex_unlock(&sc->mu);
}

void ios_scrubber_stats(ios_scrubber *sc, ios_scrub_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!sc)
        return;
    pthread_mutex_lock(&sc->mu);
    *out = sc->st;
    pthread_mutex_unlock(&sc->mu);
}

size_t ios_scrubber_damage(ios_scrubber *sc, ios_scrub_damage *out, size_t max)
{
    if (!sc)
        return 0;
    pthread_mutex_lock(&sc->mu);
    size_t n = sc->n_dmg < max ? sc->n_dmg : max;
    memcpy(out, sc->dmg, n * sizeof(*out));
    pthread_mutex_unlock(&sc->mu);
    return n;
}
