/* kernel_names.c - depfs-fuse: names given to the kernel per inode, and
 * their drops when a name of the file went or moved (kernel_names.h).
 *
 * One mutex guards the table (a hash of inodes, each on an age list, the
 * oldest forgotten first) and the queue of drops; the drop thread takes a
 * drop off the queue and tells the kernel without it. An inode whose names
 * moved is marked (revalidate) until an open of it was answered ESTALE
 * once: an open's path walk may have taken the old entry just before its
 * drop, so whether the drop is done says nothing of the open at hand. But
 * not for the first move shown while the kernel walks the path again after
 * an ESTALE open of the inode (rewalk, until the next open or
 * rewalk_until_ms): that walk's own lookup may be what shows it, and a
 * second ESTALE would reach the caller (the kernel retries once). A marked
 * inode, one with drops pending or one being walked again stays in the
 * table. */
#define FUSE_USE_VERSION 312
#include "kernel_names.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"

#define NAMES_BUCKETS 4096u
#define NS_PER_MS 1000000ll
#define NS_PER_S 1000000000ll

typedef struct kn_name {
    uint64_t parent;
    char *name;
} kn_name;

typedef struct kn_inode {
    uint64_t ino;
    unsigned n;                          /* names[0..n) */
    kn_name names[DFUSE_NAMES_PER_INODE]; /* oldest first */
    unsigned n_was;                      /* was[0..n_was) */
    kn_name was[DFUSE_NAMES_PER_INODE];  /* a gone directory's names, as dropped last */
    unsigned pending;                    /* its drops not yet told to the kernel */
    bool revalidate;                     /* names moved: the next open is ESTALE */
    bool rewalk;                         /* the kernel walks its path again... */
    uint64_t rewalk_until_ms;            /* ...at most until then */
    struct kn_inode *hnext;              /* hash chain */
    struct kn_inode *older, *newer;      /* age list */
} kn_inode;

typedef struct kn_drop {
    uint64_t ino, parent;
    char *name;
    struct kn_drop *next;
} kn_drop;

struct dfuse_names {
    struct fuse_session *se;
    pthread_mutex_t mu;
    pthread_cond_t work;                 /* a drop was queued, or stop */
    pthread_cond_t done;                 /* a drop was told */
    kn_inode *buckets[NAMES_BUCKETS];
    kn_inode *oldest, *newest;
    unsigned count;
    kn_drop *head, **tail;
    bool stop;
    pthread_t thr;
};

static unsigned bucket_of(uint64_t ino) { return (unsigned)(ino % NAMES_BUCKETS); }

/* ------------------------------------------------- the table (mu held) */

static kn_inode *find(dfuse_names *n, uint64_t ino)
{
    kn_inode *e = n->buckets[bucket_of(ino)];
    while (e && e->ino != ino)
        e = e->hnext;
    return e;
}

static void age_unlink(dfuse_names *n, kn_inode *e)
{
    if (e->older)
        e->older->newer = e->newer;
    else
        n->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        n->newest = e->older;
    e->older = e->newer = NULL;
}

static void age_push_newest(dfuse_names *n, kn_inode *e)
{
    e->older = n->newest;
    e->newer = NULL;
    if (n->newest)
        n->newest->newer = e;
    else
        n->oldest = e;
    n->newest = e;
}

static void names_free(kn_name *names, unsigned *n)
{
    for (unsigned i = 0; i < *n; i++)
        free(names[i].name);
    *n = 0;
}

static void names_clear(kn_inode *e)
{
    names_free(e->names, &e->n);
    names_free(e->was, &e->n_was);
}

static void remove_inode(dfuse_names *n, kn_inode *e)
{
    kn_inode **pp = &n->buckets[bucket_of(e->ino)];
    while (*pp != e)
        pp = &(*pp)->hnext;
    *pp = e->hnext;
    age_unlink(n, e);
    names_clear(e);
    free(e);
    n->count--;
}

/* Forgets the oldest inode without drops pending (its names are then not
 * dropped: the kernel's entries last their entry_timeout). */
static void make_room(dfuse_names *n)
{
    uint64_t now = clock_now_ms();
    kn_inode *e = n->oldest;
    while (e && (e->pending > 0 || e->revalidate || (e->rewalk && now < e->rewalk_until_ms)))
        e = e->newer;
    if (e)
        remove_inode(n, e);
}

static kn_inode *find_or_add(dfuse_names *n, uint64_t ino)
{
    kn_inode *e = find(n, ino);
    if (e) {
        age_unlink(n, e);
        age_push_newest(n, e);
        return e;
    }
    if (n->count >= DFUSE_NAMES_INODES_MAX)
        make_room(n);
    e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->ino = ino;
    e->hnext = n->buckets[bucket_of(ino)];
    n->buckets[bucket_of(ino)] = e;
    age_push_newest(n, e);
    n->count++;
    return e;
}

/* ------------------------------------------------------------ the API */

void dfuse_names_given(dfuse_names *n, uint64_t ino, uint64_t parent, const char *name)
{
    if (!n || ino == 0 || !name)
        return;
    char *copy = strdup(name);
    if (!copy)
        return; /* not kept: its entry lasts its entry_timeout */
    pthread_mutex_lock(&n->mu);
    kn_inode *e = find_or_add(n, ino);
    if (!e) {
        pthread_mutex_unlock(&n->mu);
        free(copy);
        return;
    }
    for (unsigned i = 0; i < e->n; i++) {
        if (e->names[i].parent == parent && strcmp(e->names[i].name, copy) == 0) {
            pthread_mutex_unlock(&n->mu);
            free(copy);
            return; /* known already */
        }
    }
    if (e->n == DFUSE_NAMES_PER_INODE) { /* the oldest name goes */
        free(e->names[0].name);
        memmove(&e->names[0], &e->names[1], sizeof(e->names[0]) * (e->n - 1));
        e->n--;
    }
    e->names[e->n++] = (kn_name){ .parent = parent, .name = copy };
    pthread_mutex_unlock(&n->mu);
}

/* Under mu: queues the drops of every name kept of e (inode ino); keep:
 * they stay known as what the kernel had (was), a gone directory's. */
static void queue_drops(dfuse_names *n, kn_inode *e, uint64_t ino, bool keep)
{
    if (keep && e->n > 0)
        names_free(e->was, &e->n_was);
    for (unsigned i = 0; i < e->n; i++) {
        kn_drop *d = malloc(sizeof(*d));
        char *name = keep ? strdup(e->names[i].name) : e->names[i].name;
        if (keep)
            e->was[e->n_was++] = e->names[i];
        if (!d || !name) {
            free(d);
            free(name); /* not dropped: lasts its entry_timeout */
            continue;
        }
        *d = (kn_drop){ .ino = ino, .parent = e->names[i].parent, .name = name };
        *n->tail = d;
        n->tail = &d->next;
        e->pending++;
    }
    e->n = 0; /* the names went with their drops (and to was) */
    pthread_cond_signal(&n->work);
}

void dfuse_names_moved(dfuse_names *n, uint64_t ino)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->mu);
    kn_inode *e = find(n, ino);
    if (e) {
        queue_drops(n, e, ino, false);
        if (e->rewalk && clock_now_ms() < e->rewalk_until_ms)
            e->rewalk = false; /* the walk after an ESTALE open showed it */
        else
            e->revalidate = true;
    }
    pthread_mutex_unlock(&n->mu);
    log_debug("inode %llu: a name of it went or moved elsewhere: %s", (unsigned long long)ino,
              e ? "dropping the kernel's names of it" : "no name of it kept here");
}

/* The time DFUSE_NAMES_WAIT_MS from now, on pthread_cond_timedwait's clock. */
static struct timespec wait_until(void)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    int64_t ns = until.tv_nsec + (int64_t)DFUSE_NAMES_WAIT_MS * NS_PER_MS;
    until.tv_sec += (time_t)(ns / NS_PER_S);
    until.tv_nsec = (long)(ns % NS_PER_S);
    return until;
}

/* Under mu: waits until ino's drops were told to the kernel, at most
 * until `until` (mu is let go meanwhile, so ino's entry is looked up
 * again each time). true: none pending. */
static bool wait_drops(dfuse_names *n, uint64_t ino, const struct timespec *until)
{
    kn_inode *e;
    while ((e = find(n, ino)) && e->pending > 0 && !n->stop)
        if (pthread_cond_timedwait(&n->done, &n->mu, until) == ETIMEDOUT)
            break;
    e = find(n, ino);
    return !e || e->pending == 0;
}

unsigned dfuse_names_gone(dfuse_names *n, uint64_t ino, dfuse_name *had)
{
    if (!n)
        return 0;
    struct timespec until = wait_until();
    pthread_mutex_lock(&n->mu);
    kn_inode *e = find(n, ino);
    bool kept = e != NULL, dropped = true;
    unsigned n_had = 0;
    if (e) {
        queue_drops(n, e, ino, true);
        dropped = wait_drops(n, ino, &until);
        e = find(n, ino);
    }
    for (unsigned i = 0; had && e && i < e->n_was; i++) {
        if (strlen(e->was[i].name) >= sizeof(had[0].name))
            continue; /* longer than a name the kernel gives: not one */
        had[n_had].parent = e->was[i].parent;
        strcpy(had[n_had].name, e->was[i].name);
        n_had++;
    }
    pthread_mutex_unlock(&n->mu);
    log_debug("directory %llu is gone or moved: %s", (unsigned long long)ino,
              !kept ? "no name of it kept here"
              : dropped ? "the kernel's names of it dropped"
                        : "the kernel's names of it not dropped yet (the wait's bound)");
    return n_had;
}

bool dfuse_names_settle(dfuse_names *n, uint64_t ino)
{
    if (!n)
        return false;
    struct timespec until = wait_until();
    pthread_mutex_lock(&n->mu);
    kn_inode *e = find(n, ino);
    bool stale = e && e->revalidate; /* kept while marked */
    if (stale) {
        wait_drops(n, ino, &until);
        e = find(n, ino);
        e->revalidate = false;
        e->rewalk = true;
        e->rewalk_until_ms = clock_now_ms() + DFUSE_NAMES_REWALK_MS;
    } else if (e) {
        e->rewalk = false; /* the walk is over: this is its open */
    }
    pthread_mutex_unlock(&n->mu);
    if (stale)
        log_debug("inode %llu: its names moved elsewhere: open answered ESTALE, the kernel "
                  "looks the name up again", (unsigned long long)ino);
    return stale;
}

void dfuse_names_rewalk(dfuse_names *n, uint64_t ino)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->mu);
    kn_inode *e = find_or_add(n, ino);
    if (e) {
        e->rewalk = true;
        e->rewalk_until_ms = clock_now_ms() + DFUSE_NAMES_REWALK_MS;
    }
    pthread_mutex_unlock(&n->mu);
}

/* ----------------------------------------------------- the drop thread */

static void *drop_thread(void *arg)
{
    dfuse_names *n = arg;
    pthread_mutex_lock(&n->mu);
    for (;;) {
        while (!n->stop && !n->head)
            pthread_cond_wait(&n->work, &n->mu);
        if (n->stop)
            break;
        kn_drop *d = n->head;
        n->head = d->next;
        if (!n->head)
            n->tail = &n->head;
        pthread_mutex_unlock(&n->mu);
        int rc = fuse_lowlevel_notify_inval_entry(n->se, d->parent, d->name, strlen(d->name));
        if (rc != 0 && rc != -ENOENT)
            log_warn("inode %llu: cannot make the kernel drop its name '%s': %s",
                     (unsigned long long)d->ino, d->name, strerror(-rc));
        pthread_mutex_lock(&n->mu);
        kn_inode *e = find(n, d->ino);
        if (e && e->pending > 0)
            e->pending--;
        pthread_cond_broadcast(&n->done);
        free(d->name);
        free(d);
    }
    pthread_mutex_unlock(&n->mu);
    return NULL;
}

int dfuse_names_start(struct fuse_session *se, dfuse_names **out)
{
    *out = NULL;
    dfuse_names *n = calloc(1, sizeof(*n));
    if (!n)
        return -ENOMEM;
    n->se = se;
    n->tail = &n->head;
    pthread_mutex_init(&n->mu, NULL);
    pthread_cond_init(&n->work, NULL);
    pthread_cond_init(&n->done, NULL);
    int rc = pthread_create(&n->thr, NULL, drop_thread, n);
    if (rc != 0) {
        pthread_cond_destroy(&n->done);
        pthread_cond_destroy(&n->work);
        pthread_mutex_destroy(&n->mu);
        free(n);
        return -rc;
    }
    *out = n;
    return 0;
}

void dfuse_names_stop(dfuse_names *n)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->mu);
    n->stop = true;
    pthread_cond_broadcast(&n->work);
    pthread_cond_broadcast(&n->done);
    pthread_mutex_unlock(&n->mu);
    pthread_join(n->thr, NULL);
    while (n->head) {
        kn_drop *d = n->head;
        n->head = d->next;
        free(d->name);
        free(d);
    }
    while (n->oldest)
        remove_inode(n, n->oldest);
    pthread_cond_destroy(&n->done);
    pthread_cond_destroy(&n->work);
    pthread_mutex_destroy(&n->mu);
    free(n);
}
