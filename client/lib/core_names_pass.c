/* core_names_pass.c - libdepfs core: the callers let through the kernel's
 * old names after one refusal (core_names_pass.h): a small table of
 * (inode, caller) pairs scanned under one lock, the least recently used
 * replaced when full. */
#include "core_names_pass.h"

#include <assert.h>
#include <string.h>

void dc_names_pass_init(dc_names_pass *p)
{
    memset(p, 0, sizeof(*p));
    pthread_mutex_init(&p->lock, NULL);
    atomic_init(&p->count, 0);
}

void dc_names_pass_destroy(dc_names_pass *p)
{
    pthread_mutex_destroy(&p->lock);
}

/* Under lock: the pair's entry, or NULL. */
static dc_names_pass_entry *find(dc_names_pass *p, uint64_t ino, uint64_t caller)
{
    for (unsigned i = 0; i < DC_NAMES_PASS_MAX; i++)
        if (p->e[i].ino == ino && p->e[i].caller == caller)
            return &p->e[i];
    return NULL;
}

/* Under lock: a free entry, else the least recently used one. */
static dc_names_pass_entry *take_slot(dc_names_pass *p)
{
    dc_names_pass_entry *lru = &p->e[0];
    for (unsigned i = 0; i < DC_NAMES_PASS_MAX; i++) {
        if (p->e[i].ino == 0) {
            atomic_fetch_add(&p->count, 1);
            return &p->e[i];
        }
        if (p->e[i].used < lru->used)
            lru = &p->e[i];
    }
    return lru;
}

void dc_names_pass_note(dc_names_pass *p, uint64_t ino, uint64_t caller, uint64_t epoch)
{
    if (ino == 0)
        return;
    pthread_mutex_lock(&p->lock);
    dc_names_pass_entry *e = find(p, ino, caller);
    if (!e) {
        e = take_slot(p);
        *e = (dc_names_pass_entry){ .ino = ino, .caller = caller };
    }
    if (e->epoch < epoch)
        e->epoch = epoch;
    e->used = ++p->clock;
    assert(atomic_load(&p->count) <= DC_NAMES_PASS_MAX);
    pthread_mutex_unlock(&p->lock);
}

/* Under lock: e becomes free. */
static void release(dc_names_pass *p, dc_names_pass_entry *e)
{
    *e = (dc_names_pass_entry){ 0 };
    atomic_fetch_sub(&p->count, 1);
}

void dc_names_pass_forget(dc_names_pass *p, uint64_t ino, uint64_t caller)
{
    if (ino == 0 || atomic_load(&p->count) == 0)
        return;
    pthread_mutex_lock(&p->lock);
    dc_names_pass_entry *e = find(p, ino, caller);
    if (e)
        release(p, e);
    pthread_mutex_unlock(&p->lock);
}

bool dc_names_pass_epoch(dc_names_pass *p, uint64_t ino, uint64_t caller, uint64_t shown,
                         uint64_t *epoch)
{
    if (ino == 0 || atomic_load(&p->count) == 0)
        return false;
    pthread_mutex_lock(&p->lock);
    dc_names_pass_entry *e = find(p, ino, caller);
    bool above = e && e->epoch > shown;
    if (above) {
        *epoch = e->epoch;
        e->used = ++p->clock;
    } else if (e) {
        release(p, e);
    }
    pthread_mutex_unlock(&p->lock);
    return above;
}
