/* unstored.c - failed stores still under their writer's lock (unstored.h). */
#include "unstored.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

typedef struct unstored_note {
    uint64_t file_id, first, count;
    ios_lock_owner owner;
} unstored_note;

struct ios_unstored {
    pthread_mutex_t mu;
    unstored_note v[IOS_UNSTORED_MAX];
    size_t n;
    bool overflow; /* a note was lost: wait for an empty lock table */
};

int ios_unstored_create(ios_unstored **out)
{
    ios_unstored *u = calloc(1, sizeof(*u));
    if (!u)
        return -ENOMEM;
    pthread_mutex_init(&u->mu, NULL);
    *out = u;
    return 0;
}

void ios_unstored_free(ios_unstored *u)
{
    if (!u)
        return;
    pthread_mutex_destroy(&u->mu);
    free(u);
}

void ios_unstored_note(ios_unstored *u, uint64_t file_id, uint64_t first, uint64_t count,
                       ios_lock_owner owner)
{
    pthread_mutex_lock(&u->mu);
    size_t i;
    for (i = 0; i < u->n; i++) {
        const unstored_note *e = &u->v[i];
        if (e->file_id == file_id && e->first == first && e->count == count &&
            e->owner.client == owner.client && e->owner.op == owner.op)
            break; /* noted already */
    }
    if (i == u->n) {
        if (u->n < IOS_UNSTORED_MAX)
            u->v[u->n++] = (unstored_note){file_id, first, count, owner};
        else
            u->overflow = true;
    }
    pthread_mutex_unlock(&u->mu);
}

size_t ios_unstored_pending(ios_unstored *u, ios_locks *locks)
{
    pthread_mutex_lock(&u->mu);
    size_t w = 0;
    for (size_t i = 0; i < u->n; i++)
        if (ios_locks_holds_any(locks, u->v[i].file_id, u->v[i].first, u->v[i].count,
                                u->v[i].owner))
            u->v[w++] = u->v[i];
    u->n = w;
    if (u->overflow) {
        ios_lock_stats st;
        ios_locks_stats(locks, &st);
        u->overflow = st.held > 0;
    }
    size_t pending = u->n + (u->overflow ? 1 : 0);
    assert(u->n <= IOS_UNSTORED_MAX);
    pthread_mutex_unlock(&u->mu);
    return pending;
}
