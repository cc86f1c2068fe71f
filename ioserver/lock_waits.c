/* lock_waits.c - lock requests parked until their stripes may be free
 * (lock_waits.h): a FIFO list, one thread that runs them again when their
 * file is kicked or their deadline passes. */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "lock_waits.h"

typedef struct wait_entry {
    ios_parked p;
    bool kicked; /* run it again: its file was kicked (or it was just parked) */
    bool busy;   /* the thread is running it (it stays listed meanwhile) */
    struct wait_entry *next;
} wait_entry;

struct ios_lock_waits {
    pthread_mutex_t m;
    pthread_cond_t cv;           /* CLOCK_MONOTONIC: the thread waits on it */
    wait_entry *head, **tail;    /* in the order they were parked */
    unsigned max;
    atomic_uint n;               /* parked (also read without m: kicks) */
    bool stopping;
    ios_lock_retry_fn retry;
    void *ctx;
    pthread_t thr;
};

static void entry_free(wait_entry *e)
{
    free(e->p.hdr);
    free(e);
}

static void unlink_entry(ios_lock_waits *w, wait_entry *e)
{
    wait_entry **pp = &w->head;
    while (*pp != e) {
        assert(*pp != NULL);
        pp = &(*pp)->next;
    }
    *pp = e->next;
    if (w->tail == &e->next)
        w->tail = pp;
    atomic_fetch_sub(&w->n, 1);
}

/* The first entry to run now, or NULL; *next_ms: the earliest deadline of
 * the others (UINT64_MAX: none). Under w->m. */
static wait_entry *pick(ios_lock_waits *w, uint64_t now_ms, uint64_t *next_ms)
{
    *next_ms = UINT64_MAX;
    for (wait_entry *e = w->head; e != NULL; e = e->next) {
        if (e->busy)
            continue;
        if (w->stopping || e->kicked || now_ms >= e->p.deadline_ms)
            return e;
        if (e->p.deadline_ms < *next_ms)
            *next_ms = e->p.deadline_ms;
    }
    return NULL;
}

static void *waits_thread(void *arg)
{
    ios_lock_waits *w = arg;
    pthread_mutex_lock(&w->m);
    for (;;) {
        uint64_t now_ms = clock_now_ms(), next_ms;
        wait_entry *e = pick(w, now_ms, &next_ms);
        if (e == NULL) {
            if (w->stopping)
                break; /* and nothing is left: pick takes every entry then */
            if (next_ms == UINT64_MAX) {
                pthread_cond_wait(&w->cv, &w->m);
            } else {
                struct timespec ts = clock_deadline_after_ms(next_ms - now_ms);
                pthread_cond_timedwait(&w->cv, &w->m, &ts);
            }
            continue;
        }
        bool expired = w->stopping || now_ms >= e->p.deadline_ms;
        e->busy = true;
        e->kicked = false; /* a kick while it runs sets it again */
        pthread_mutex_unlock(&w->m);
        bool answered = w->retry(w->ctx, &e->p, expired);
        assert(answered || !expired);
        if (answered)
            rpc_replier_release(e->p.r);
        pthread_mutex_lock(&w->m);
        e->busy = false;
        if (answered) {
            unlink_entry(w, e);
            entry_free(e);
        }
    }
    assert(w->head == NULL);
    pthread_mutex_unlock(&w->m);
    return NULL;
}

int ios_lock_waits_start(unsigned max_parked, ios_lock_retry_fn retry, void *ctx,
                         ios_lock_waits **out)
{
    assert(retry != NULL);
    ios_lock_waits *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    pthread_mutex_init(&w->m, NULL);
    clock_cond_init(&w->cv);
    w->tail = &w->head;
    w->max = max_parked ? max_parked : IOS_LOCK_WAITS_MAX;
    w->retry = retry;
    w->ctx = ctx;
    int rc = pthread_create(&w->thr, NULL, waits_thread, w);
    if (rc) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->m);
        free(w);
        return -rc;
    }
    *out = w;
    return 0;
}

void ios_lock_waits_stop(ios_lock_waits *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->m);
    w->stopping = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->m);
    pthread_join(w->thr, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->m);
    free(w);
}

int ios_lock_waits_park(ios_lock_waits *w, const rpc_msg *req, rpc_replier *r,
                        uint64_t file_id, uint64_t first, uint64_t count, ios_lock_owner owner,
                        unsigned wait_ms)
{
    assert(wait_ms > 0 && count > 0);
    wait_entry *e = calloc(1, sizeof(*e));
    uint8_t *hdr = malloc(req->hdr_len ? req->hdr_len : 1);
    if (!e || !hdr) {
        free(e);
        free(hdr);
        return -ENOMEM;
    }
    memcpy(hdr, req->hdr, req->hdr_len);
    e->p = (ios_parked){.type = req->type, .req_id = req->req_id, .hdr = hdr,
                        .hdr_len = req->hdr_len, .r = r, .peer = req->peer, .who = req->who,
                        .file_id = file_id, .first = first, .count = count, .owner = owner,
                        .deadline_ms = clock_now_ms() + wait_ms};
    /* run once right away: the stripes may have been released between
     * its refusal and now, and no kick would come for that */
    e->kicked = true;
    pthread_mutex_lock(&w->m);
    int rc = 0;
    if (w->stopping)
        rc = -ESHUTDOWN;
    else if (atomic_load(&w->n) >= w->max)
        rc = -EBUSY;
    if (rc) {
        pthread_mutex_unlock(&w->m);
        entry_free(e);
        return rc;
    }
    rpc_replier_hold(r);
    *w->tail = e;
    w->tail = &e->next;
    atomic_fetch_add(&w->n, 1);
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->m);
    return 0;
}

void ios_lock_waits_kick(ios_lock_waits *w, uint64_t file_id)
{
    if (!w || atomic_load(&w->n) == 0)
        return; /* one parked after this load was marked to run at once */
    bool any = false;
    pthread_mutex_lock(&w->m);
    for (wait_entry *e = w->head; e != NULL; e = e->next) {
        if (e->p.file_id == file_id) {
            e->kicked = true;
            any = true;
        }
    }
    if (any)
        pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->m);
}

unsigned ios_lock_waits_parked(ios_lock_waits *w)
{
    return w ? atomic_load(&w->n) : 0;
}
