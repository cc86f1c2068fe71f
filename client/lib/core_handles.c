/* core_handles.c - libdepfs core: the table of inode handle tags
 * (core_handles.h): chained buckets over entries allocated in chunks, a
 * free list, and a clock hand that evicts unpinned entries not used since
 * it last passed them. */
#include "core_handles.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ino_hash.h"

#define HANDLES_NLOOKUP_MAX UINT32_MAX
#define HANDLES_OPENS_MAX UINT16_MAX
#define HANDLES_FIRST_CHUNKS 16u

_Static_assert(DC_HANDLES_BUCKETS == (1u << DC_HANDLES_BUCKET_BITS), "buckets are a power of two");
_Static_assert((DC_HANDLES_CHUNK & (DC_HANDLES_CHUNK - 1)) == 0, "chunks are a power of two");

static uint32_t bucket_of(uint64_t ino)
{
    return (uint32_t)(ino_hash(ino) >> (64u - DC_HANDLES_BUCKET_BITS));
}

static dc_handle *at(dc_handles *h, uint32_t idx)
{
    return &h->chunks[idx / DC_HANDLES_CHUNK][idx % DC_HANDLES_CHUNK];
}

static bool is_pinned(const dc_handle *e)
{
    return e->nlookup > 0 || e->opens > 0;
}

int dc_handles_init(dc_handles *h, uint32_t max_unpinned)
{
    assert(max_unpinned > 0);
    memset(h, 0, sizeof(*h));
    h->max_unpinned = max_unpinned;
    h->buckets = calloc(DC_HANDLES_BUCKETS, sizeof(*h->buckets));
    if (!h->buckets)
        return -ENOMEM;
    pthread_mutex_init(&h->lock, NULL);
    return 0;
}

void dc_handles_destroy(dc_handles *h)
{
    if (!h->buckets)
        return;
    for (uint32_t i = 0; i < h->n_chunks; i++)
        free(h->chunks[i]);
    free(h->chunks);
    free(h->buckets);
    pthread_mutex_destroy(&h->lock);
    memset(h, 0, sizeof(*h));
}

/* ------------------------------------------------ entries (lock held) */

/* ino's entry: its index + 1, 0 when there is none. */
static uint32_t find(dc_handles *h, uint64_t ino)
{
    for (uint32_t i = h->buckets[bucket_of(ino)]; i != 0; i = at(h, i - 1)->next)
        if (at(h, i - 1)->ino == ino)
            return i;
    return 0;
}

/* A free entry's index: from the free list, else the chunks (a new one
 * when they are full). false: out of memory. */
static bool take_free(dc_handles *h, uint32_t *idx)
{
    if (h->free_list) {
        *idx = h->free_list - 1;
        h->free_list = at(h, *idx)->next;
        return true;
    }
    if (h->used == UINT32_MAX - 1)
        return false;
    if (h->used == h->n_chunks * DC_HANDLES_CHUNK) {
        if (h->n_chunks == h->cap_chunks) {
            uint32_t cap = h->cap_chunks ? 2 * h->cap_chunks : HANDLES_FIRST_CHUNKS;
            dc_handle **c = realloc(h->chunks, cap * sizeof(*c));
            if (!c)
                return false;
            h->chunks = c;
            h->cap_chunks = cap;
        }
        h->chunks[h->n_chunks] = calloc(DC_HANDLES_CHUNK, sizeof(dc_handle));
        if (!h->chunks[h->n_chunks])
            return false;
        h->n_chunks++;
    }
    *idx = h->used++;
    return true;
}

/* Takes entry idx out of its bucket and onto the free list. */
static void drop(dc_handles *h, uint32_t idx)
{
    dc_handle *e = at(h, idx);
    uint32_t *link = &h->buckets[bucket_of(e->ino)];
    while (*link != idx + 1)
        link = &at(h, *link - 1)->next;
    *link = e->next;
    memset(e, 0, sizeof(*e));
    e->next = h->free_list;
    h->free_list = idx + 1;
    h->count--;
}

/* The clock, before an entry is added: at the bound of unpinned entries,
 * looks at up to DC_HANDLES_SCAN of them (passing at most
 * DC_HANDLES_SCAN_SLOTS slots) from the hand on, giving the used ones a
 * second chance and evicting up to DC_HANDLES_EVICT of the others (so an
 * excess that a scan of used entries left shrinks again). */
static void evict(dc_handles *h)
{
    unsigned evicted = 0, looked = 0;
    for (unsigned n = 0; n < DC_HANDLES_SCAN_SLOTS && looked < DC_HANDLES_SCAN &&
                         evicted < DC_HANDLES_EVICT && h->count - h->pinned >= h->max_unpinned;
         n++) {
        if (h->hand >= h->used)
            h->hand = 0;
        uint32_t idx = h->hand++;
        dc_handle *e = at(h, idx);
        if (e->ino == 0 || is_pinned(e))
            continue;
        looked++;
        if (e->referenced) {
            e->referenced = false;
            continue;
        }
        drop(h, idx);
        evicted++;
    }
}

/* ino's entry (index + 1), made (used, without a tag or pins) when there
 * is none, the clock making room first; 0: out of memory. */
static uint32_t find_or_add(dc_handles *h, uint64_t ino)
{
    uint32_t i = find(h, ino), idx;
    if (i != 0)
        return i;
    evict(h);
    if (!take_free(h, &idx))
        return 0;
    dc_handle *e = at(h, idx);
    memset(e, 0, sizeof(*e));
    e->ino = ino;
    e->referenced = true;
    uint32_t b = bucket_of(ino);
    e->next = h->buckets[b];
    h->buckets[b] = idx + 1;
    h->count++;
    return idx + 1;
}

/* Entry i's counts changed from pinned `was`: the pinned count follows,
 * and an entry left with nothing (no tag, no pin) goes. */
static void repinned(dc_handles *h, uint32_t i, bool was)
{
    dc_handle *e = at(h, i - 1);
    bool now = is_pinned(e);
    if (was && !now)
        h->pinned--;
    else if (!was && now)
        h->pinned++;
    if (!now && !e->has_tag)
        drop(h, i - 1);
}

static void learn_locked(dc_handles *h, uint64_t ino, uint64_t tag)
{
    uint32_t i = find_or_add(h, ino);
    if (i == 0)
        return; /* out of memory: a request for it goes without (refused for users) */
    dc_handle *e = at(h, i - 1);
    e->tag = tag;
    e->has_tag = true;
    e->referenced = true;
}

static bool get_locked(dc_handles *h, uint64_t ino, uint64_t *tag)
{
    uint32_t i = find(h, ino);
    if (i == 0 || !at(h, i - 1)->has_tag)
        return false;
    dc_handle *e = at(h, i - 1);
    e->referenced = true;
    *tag = e->tag;
    return true;
}

/* ------------------------------------------------------------ the API */

void dc_handles_learn(dc_handles *h, uint64_t ino, uint64_t tag)
{
    if (ino == 0)
        return;
    pthread_mutex_lock(&h->lock);
    learn_locked(h, ino, tag);
    pthread_mutex_unlock(&h->lock);
}

bool dc_handles_get(dc_handles *h, uint64_t ino, uint64_t *tag)
{
    pthread_mutex_lock(&h->lock);
    bool found = get_locked(h, ino, tag);
    pthread_mutex_unlock(&h->lock);
    return found;
}

/* Under lock: what seen says of held entry e's names. true when it
 * replaced another name generation of an inode the kernel held before
 * the `lookups` just added. */
static bool note_names_locked(dc_handle *e, const dc_names_seen *seen, uint64_t lookups)
{
    bool moved = false;
    if (seen->has_name_gen) {
        moved = e->has_name_gen && e->name_gen != seen->name_gen && e->nlookup > lookups;
        e->name_gen = seen->name_gen;
        e->has_name_gen = true;
    }
    if (seen->has_epoch && (!e->has_names_epoch || e->names_epoch < seen->epoch)) {
        e->names_epoch = seen->epoch;
        e->has_names_epoch = true;
    }
    if (seen->via != 0)
        e->names_via = seen->via;
    return moved;
}

/* n more (add) or fewer lookups, and/or one more or fewer open, of ino
 * (tag, seen: its tag and names as a reply just gave them, NULL: none):
 * each count saturates (held for good then), never goes below 0. true
 * when a name generation replaced another one of an inode the kernel held
 * before these lookups. */
static bool change_pins(dc_handles *h, uint64_t ino, const uint64_t *tag, const dc_names_seen *seen,
                        bool add, uint64_t lookups, bool open)
{
    bool moved = false;
    if (ino == 0 || (lookups == 0 && !open))
        return moved;
    pthread_mutex_lock(&h->lock);
    uint32_t i = add ? find_or_add(h, ino) : find(h, ino);
    if (i != 0) {
        dc_handle *e = at(h, i - 1);
        bool was = is_pinned(e);
        uint64_t room = add ? HANDLES_NLOOKUP_MAX - e->nlookup : e->nlookup;
        uint32_t full = add ? HANDLES_NLOOKUP_MAX : 0; /* where it stops */
        if (e->nlookup != HANDLES_NLOOKUP_MAX)
            e->nlookup = lookups >= room ? full
                         : add       ? e->nlookup + (uint32_t)lookups
                                     : e->nlookup - (uint32_t)lookups;
        if (open && e->opens != HANDLES_OPENS_MAX && (add || e->opens > 0))
            e->opens = (uint16_t)(add ? e->opens + 1 : e->opens - 1);
        e->referenced = true; /* just closed or forgotten: may come back soon */
        if (tag) {
            e->tag = *tag;
            e->has_tag = true;
        }
        if (seen)
            moved = note_names_locked(e, seen, lookups);
        repinned(h, i, was);
    }
    pthread_mutex_unlock(&h->lock);
    return moved;
}

bool dc_handles_hold(dc_handles *h, uint64_t ino, const uint64_t *tag, const dc_names_seen *seen,
                     uint64_t n)
{
    return change_pins(h, ino, tag, seen, true, n, false);
}

void dc_handles_forget(dc_handles *h, uint64_t ino, uint64_t n)
{
    change_pins(h, ino, NULL, NULL, false, n, false);
}

void dc_handles_pin(dc_handles *h, uint64_t ino)
{
    change_pins(h, ino, NULL, NULL, true, 0, true);
}

void dc_handles_unpin(dc_handles *h, uint64_t ino)
{
    change_pins(h, ino, NULL, NULL, false, 0, true);
}

void dc_handles_note_names(dc_handles *h, uint64_t ino, const dc_names_seen *seen)
{
    pthread_mutex_lock(&h->lock);
    uint32_t i = find(h, ino);
    if (i != 0 && at(h, i - 1)->nlookup > 0)
        note_names_locked(at(h, i - 1), seen, 0);
    pthread_mutex_unlock(&h->lock);
}

bool dc_handles_names(dc_handles *h, uint64_t ino, dc_names_seen *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&h->lock);
    uint32_t i = find(h, ino);
    bool found = false;
    if (i != 0 && at(h, i - 1)->nlookup > 0) {
        const dc_handle *e = at(h, i - 1);
        found = true;
        *out = (dc_names_seen){ .has_name_gen = e->has_name_gen, .name_gen = e->name_gen,
                                .has_epoch = e->has_names_epoch, .epoch = e->names_epoch,
                                .via = e->names_via };
    }
    pthread_mutex_unlock(&h->lock);
    return found;
}

void dc_handles_counts(dc_handles *h, uint32_t *count, uint32_t *pinned)
{
    pthread_mutex_lock(&h->lock);
    *count = h->count;
    *pinned = h->pinned;
    pthread_mutex_unlock(&h->lock);
}

bool dc_handles_entry(dc_handles *h, uint64_t ino, uint32_t *nlookup, uint16_t *opens)
{
    pthread_mutex_lock(&h->lock);
    uint32_t i = find(h, ino);
    if (i != 0) {
        *nlookup = at(h, i - 1)->nlookup;
        *opens = at(h, i - 1)->opens;
    }
    pthread_mutex_unlock(&h->lock);
    return i != 0;
}

/* ------------------------------------------- MDS requests and replies */

static void learn_attr(dc_handles *h, const Depfs__Attr *a)
{
    if (a && a->has_tag && a->ino != 0)
        learn_locked(h, a->ino, a->tag);
}

void dc_handles_learn_reply(dc_handles *h, const Depfs__MdsReply *rep)
{
    bool any = rep->attr || rep->dir_attr;
    for (size_t i = 0; i < rep->n_entries && !any; i++)
        any = rep->entries[i]->has_tag;
    if (!any)
        return; /* most replies name no inode: no lock taken */
    pthread_mutex_lock(&h->lock);
    learn_attr(h, rep->attr);
    learn_attr(h, rep->dir_attr);
    for (size_t i = 0; i < rep->n_entries; i++) {
        const Depfs__Dirent *d = rep->entries[i];
        if (d->has_tag && d->ino != 0)
            learn_locked(h, d->ino, d->tag);
    }
    pthread_mutex_unlock(&h->lock);
}

/* One inode-number field of a request and its tag. */
static void tag_field(dc_handles *h, protobuf_c_boolean has, uint64_t ino, uint64_t root_ino,
                      protobuf_c_boolean *has_tag, uint64_t *tag)
{
    if (has && ino != root_ino && !*has_tag)
        *has_tag = get_locked(h, ino, tag);
}

void dc_handles_tag_request(dc_handles *h, Depfs__MdsRequest *r, uint64_t root_ino)
{
    if (!((r->has_ino && r->ino != root_ino) || (r->has_parent && r->parent != root_ino) ||
          (r->has_new_parent && r->new_parent != root_ino) || r->has_migrate_ino ||
          (r->has_names_via && r->names_via != root_ino) || r->n_releases > 0))
        return; /* names no inode that needs a tag: no lock taken */
    pthread_mutex_lock(&h->lock);
    tag_field(h, r->has_ino, r->ino, root_ino, &r->has_ino_tag, &r->ino_tag);
    tag_field(h, r->has_parent, r->parent, root_ino, &r->has_parent_tag, &r->parent_tag);
    tag_field(h, r->has_new_parent, r->new_parent, root_ino, &r->has_new_parent_tag,
              &r->new_parent_tag);
    tag_field(h, r->has_migrate_ino, r->migrate_ino, root_ino, &r->has_migrate_ino_tag,
              &r->migrate_ino_tag);
    tag_field(h, r->has_names_via, r->names_via, root_ino, &r->has_names_via_tag,
              &r->names_via_tag);
    for (size_t i = 0; i < r->n_releases; i++)
        tag_field(h, true, r->releases[i]->ino, root_ino, &r->releases[i]->has_ino_tag,
                  &r->releases[i]->ino_tag);
    pthread_mutex_unlock(&h->lock);
}
