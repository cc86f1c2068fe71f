/* core_statahead.c - the directories' entries kept for statahead
 * (core_statahead.h): the pages, their lookup, and what each of this
 * client's calls drops. The pages are fetched by depfs_lookup_aged
 * (api_namespace.c). */
#include "core_statahead.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "ino_hash.h"

/* FNV-1a: names are short; the hash only spreads them over buckets. */
static uint32_t name_hash(const char *name)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h;
}

void dc_sa_init(dc_statahead *sa, unsigned max_age_ms)
{
    memset(sa, 0, sizeof(*sa));
    pthread_mutex_init(&sa->lock, NULL);
    sa->max_age_ms = max_age_ms;
}

static uint32_t ino_bucket(uint64_t ino)
{
    return (uint32_t)(ino_hash(ino) >> 40) % DC_SA_BUCKETS;
}

/* Under lock: forgets what d holds, keeps its allocation. */
static void dir_empty(dc_sa_dir *d)
{
    for (uint32_t i = 0; i < d->n; i++)
        free(d->ents[i].name);
    d->n = 0;
    if (d->by_name)
        for (uint32_t b = 0; b < 2 * DC_SA_BUCKETS; b++)
            d->by_name[b] = DC_SA_NONE; /* and by_ino, after it */
}

/* Under lock: frees d, the slot free again. */
static void dir_free(dc_sa_dir *d)
{
    dir_empty(d);
    free(d->ents);
    free(d->by_name);
    memset(d, 0, sizeof(*d));
}

void dc_sa_destroy(dc_statahead *sa)
{
    for (unsigned i = 0; i < DC_SA_DIRS; i++)
        dir_free(&sa->dirs[i]);
    pthread_mutex_destroy(&sa->lock);
}

/* Under lock. */
static dc_sa_dir *dir_find(dc_statahead *sa, uint64_t ino)
{
    for (unsigned i = 0; i < DC_SA_DIRS; i++)
        if (sa->dirs[i].ino == ino)
            return &sa->dirs[i];
    return NULL;
}

/* Under lock: ino's slot, taking the least recently used one (not being
 * filled) for it when it has none; NULL when every slot is being filled. */
static dc_sa_dir *dir_get(dc_statahead *sa, uint64_t ino, uint64_t now)
{
    dc_sa_dir *d = dir_find(sa, ino), *lru = NULL;
    if (d)
        return d;
    for (unsigned i = 0; i < DC_SA_DIRS; i++) {
        dc_sa_dir *c = &sa->dirs[i];
        if (!c->filling && (!lru || c->used_ms < lru->used_ms))
            lru = c;
    }
    if (!lru)
        return NULL;
    dir_free(lru);
    lru->ino = ino;
    lru->used_ms = now;
    lru->trigger = DC_SA_TRIGGER;
    return lru;
}

/* Under lock: the entry of name in d not dropped, or NULL. */
static dc_sa_entry *entry_find(const dc_sa_dir *d, const char *name)
{
    if (d->n == 0)
        return NULL;
    uint32_t h = name_hash(name);
    for (uint32_t i = d->by_name[h % DC_SA_BUCKETS]; i != DC_SA_NONE; i = d->ents[i].next) {
        const dc_sa_entry *e = &d->ents[i];
        if (!e->gone && e->hash == h && strcmp(e->name, name) == 0)
            return &d->ents[i];
    }
    return NULL;
}

int dc_sa_lookup(depfs_t *fs, uint64_t parent, const char *name, struct stat *st,
                 Depfs__Attr *attr, unsigned *age_ms)
{
    dc_statahead *sa = &fs->statahead;
    if (sa->max_age_ms == 0)
        return -ENOENT;
    Depfs__Attr a;
    Depfs__Layout shape = DEPFS__LAYOUT__INIT;
    bool has_shape = false;
    uint64_t age = 0;
    int rc = -ENOENT;
    uint64_t now = dc_now_ms();
    pthread_mutex_lock(&sa->lock);
    dc_sa_dir *d = dir_find(sa, parent);
    const dc_sa_entry *e = d ? entry_find(d, name) : NULL;
    if (e && now - e->fetched_ms < sa->max_age_ms) {
        d->used_ms = now;
        d->hits++;
        a = e->attr;
        has_shape = e->has_shape;
        shape.n = e->n;
        shape.k = e->k;
        shape.stripe_unit = e->su;
        age = now - e->fetched_ms;
        sa->answered++;
        rc = 0;
    }
    pthread_mutex_unlock(&sa->lock);
    if (rc < 0)
        return rc;
    dc_attr_layout_to_stat(fs, &a, has_shape ? &shape : NULL, st);
    *attr = a;
    *age_ms = (unsigned)age;
    return 0;
}

bool dc_sa_no_xattrs(depfs_t *fs, uint64_t ino)
{
    dc_statahead *sa = &fs->statahead;
    if (sa->max_age_ms == 0)
        return false;
    bool none = false;
    uint64_t now = dc_now_ms();
    pthread_mutex_lock(&sa->lock);
    for (unsigned i = 0; i < DC_SA_DIRS && !none; i++) {
        const dc_sa_dir *d = &sa->dirs[i];
        if (d->n == 0)
            continue;
        for (uint32_t j = d->by_ino[ino_bucket(ino)]; j != DC_SA_NONE; j = d->ents[j].ino_next) {
            const dc_sa_entry *e = &d->ents[j];
            if (e->attr.ino == ino && !e->gone && now - e->fetched_ms < sa->max_age_ms &&
                e->no_xattrs) {
                none = true;
                break;
            }
        }
    }
    if (none)
        sa->xattrs_answered++;
    pthread_mutex_unlock(&sa->lock);
    return none;
}

bool dc_sa_missed(depfs_t *fs, uint64_t parent, uint64_t *cookie, uint64_t *gen)
{
    dc_statahead *sa = &fs->statahead;
    if (sa->max_age_ms == 0)
        return false;
    bool fetch = false;
    uint64_t now = dc_now_ms();
    pthread_mutex_lock(&sa->lock);
    dc_sa_dir *d = dir_get(sa, parent, now);
    if (d && !d->filling && ++d->misses >= d->trigger) {
        /* pages that answered fewer names than were missed since: looked
         * up at random, fetch less often (DC_SA_TRIGGER_MAX) */
        bool paying = d->n == 0 || d->hits >= d->misses;
        d->trigger = paying ? DC_SA_TRIGGER
                            : (d->trigger * 2 > DC_SA_TRIGGER_MAX ? DC_SA_TRIGGER_MAX : d->trigger * 2);
        bool full = d->n + DC_SA_PAGE_ENTRIES > DC_SA_MAX_ENTRIES;
        if (full && paying && now - d->started_ms < sa->max_age_ms) {
            /* what is kept still answers most names: keep it rather than
             * start over for the few past it */
            d->misses = d->hits = 0;
            goto out;
        }
        /* from the start again once the pages kept are old or the last
         * reached the end (the names missed came since) */
        if (d->n == 0 || d->eof || now - d->started_ms >= sa->max_age_ms) {
            dir_empty(d);
            d->next_cookie = 0;
            d->eof = false;
            d->started_ms = now;
        }
        d->misses = d->hits = 0;
        d->filling = true;
        d->used_ms = now;
        *cookie = d->next_cookie;
        *gen = sa->gen;
        fetch = true;
    }
out:
    pthread_mutex_unlock(&sa->lock);
    return fetch;
}

/* Under lock: room for `more` entries in d (allocated at the first page). */
static int dir_reserve(dc_sa_dir *d, uint32_t more)
{
    if (!d->by_name) {
        d->by_name = malloc(2 * DC_SA_BUCKETS * sizeof(*d->by_name));
        if (!d->by_name)
            return -ENOMEM;
        d->by_ino = d->by_name + DC_SA_BUCKETS;
        for (uint32_t b = 0; b < 2 * DC_SA_BUCKETS; b++)
            d->by_name[b] = DC_SA_NONE;
    }
    if (d->n + more > DC_SA_MAX_ENTRIES)
        dir_empty(d); /* a directory larger than what is kept: start over */
    if (d->n + more <= d->cap)
        return 0;
    /* doubling: small pages (dc_sa_offer's) do not copy the entries each */
    uint32_t cap = d->cap * 2 > d->n + more ? d->cap * 2 : d->n + more;
    if (cap > DC_SA_MAX_ENTRIES)
        cap = DC_SA_MAX_ENTRIES;
    assert(d->n + more <= cap);
    dc_sa_entry *ents = realloc(d->ents, cap * sizeof(*ents));
    if (!ents)
        return -ENOMEM;
    d->ents = ents;
    d->cap = cap;
    return 0;
}

/* Under lock: keeps one entry the page gave (those without attributes, and
 * "." and "..", are not kept: the kernel resolves those itself). */
static void dir_add(dc_sa_dir *d, const Depfs__Dirent *de, uint64_t asked_ms)
{
    const Depfs__Attr *a = de->attr;
    if (!a || a->ino != de->ino || !strcmp(de->name, ".") || !strcmp(de->name, "..") ||
        entry_find(d, de->name))
        return;
    char *name = strdup(de->name);
    if (!name)
        return;
    assert(d->n < d->cap);
    dc_sa_entry *e = &d->ents[d->n];
    memset(e, 0, sizeof(*e));
    e->name = name;
    e->hash = name_hash(name);
    e->fetched_ms = asked_ms;
    e->attr = *a;
    e->attr.base.n_unknown_fields = 0; /* scalars only: nothing owned */
    e->attr.base.unknown_fields = NULL;
    e->no_xattrs = de->has_no_xattrs && de->no_xattrs;
    const Depfs__Layout *l = de->layout;
    if (l && S_ISREG(a->mode)) {
        e->has_shape = true;
        e->n = l->n;
        e->k = l->k;
        e->su = l->stripe_unit;
    }
    uint32_t b = e->hash % DC_SA_BUCKETS, ib = ino_bucket(a->ino);
    e->next = d->by_name[b];
    e->ino_next = d->by_ino[ib];
    d->by_name[b] = d->by_ino[ib] = d->n++;
}

/* Under lock: drops every kept entry of inode ino (its slot stays until
 * the directory's pages go). */
static void drop_ino(dc_statahead *sa, uint64_t ino)
{
    for (unsigned i = 0; i < DC_SA_DIRS; i++) {
        dc_sa_dir *d = &sa->dirs[i];
        if (d->n == 0)
            continue;
        for (uint32_t j = d->by_ino[ino_bucket(ino)]; j != DC_SA_NONE; j = d->ents[j].ino_next)
            if (d->ents[j].attr.ino == ino)
                d->ents[j].gone = true;
    }
}

/* Under lock: drops name in directory dir, and every entry of the inode it
 * had (its other names' link counts changed with it). */
static void drop_name(dc_statahead *sa, uint64_t dir, const char *name)
{
    dc_sa_dir *d = dir_find(sa, dir);
    dc_sa_entry *e = d ? entry_find(d, name) : NULL;
    if (!e)
        return;
    e->gone = true;
    drop_ino(sa, e->attr.ino);
}

/* Under lock: everything dropped; a page in flight is not kept. */
static void drop_all(dc_statahead *sa)
{
    for (unsigned i = 0; i < DC_SA_DIRS; i++)
        if (!sa->dirs[i].filling)
            dir_free(&sa->dirs[i]);
        else
            dir_empty(&sa->dirs[i]); /* its filler finds it by ino */
}

/* Under lock. */
static void drop_apply(dc_statahead *sa, const dc_sa_drop *x)
{
    switch (x->kind) {
    case DC_SA_DROP_NAME: drop_name(sa, x->ino, x->name); break;
    case DC_SA_DROP_INO: drop_ino(sa, x->ino); break;
    case DC_SA_DROP_ALL: drop_all(sa); break;
    }
}

/* Under lock: applies one drop of the change sa->gen and logs it. */
static void drop(dc_statahead *sa, dc_sa_drop_kind kind, uint64_t ino, const char *name)
{
    dc_sa_drop *x = &sa->log[sa->log_next++ % DC_SA_LOG];
    x->gen = sa->gen;
    x->kind = kind;
    x->ino = ino;
    size_t len = name ? strnlen(name, WIRE_NAME_MAX + 1) : 0;
    x->name[0] = '\0';
    if (name && len <= WIRE_NAME_MAX)
        memcpy(x->name, name, len + 1);
    else if (kind == DC_SA_DROP_NAME) /* not a name the MDS takes: drop it all */
        x->kind = DC_SA_DROP_ALL;
    drop_apply(sa, x);
}

/* Under lock: whether the log still holds every drop of the changes after
 * gen (the oldest it holds is older). */
static bool log_covers(const dc_statahead *sa, uint64_t gen)
{
    if (sa->gen == gen)
        return true;
    if (sa->log_next < DC_SA_LOG)
        return true; /* nothing overwritten yet */
    const dc_sa_drop *oldest = &sa->log[sa->log_next % DC_SA_LOG];
    return oldest->gen <= gen;
}

/* Under lock: the drops of the changes after gen again (on a page kept). */
static void log_replay(dc_statahead *sa, uint64_t gen)
{
    uint32_t n = sa->log_next < DC_SA_LOG ? sa->log_next : DC_SA_LOG;
    for (uint32_t i = sa->log_next - n; i != sa->log_next; i++) {
        const dc_sa_drop *x = &sa->log[i % DC_SA_LOG];
        if (x->gen > gen)
            drop_apply(sa, x);
    }
}

/* The newest names epoch rep's attributes show (0: none). */
static uint64_t reply_names_epoch(const Depfs__MdsReply *rep)
{
    uint64_t e = 0;
    if (rep->attr && rep->attr->has_names_epoch)
        e = rep->attr->names_epoch;
    for (size_t i = 0; i < rep->n_entries; i++) {
        const Depfs__Attr *a = rep->entries[i]->attr;
        if (a && a->has_names_epoch && a->names_epoch > e)
            e = a->names_epoch;
    }
    return e;
}

/* Under lock: keeps page rep (asked at asked_ms, the changes up to gen
 * seen) in d, less what the changes since dropped; not a page from before
 * the newest names epoch seen (core_statahead.h). */
static void keep_page(dc_statahead *sa, dc_sa_dir *d, uint64_t gen, uint64_t asked_ms,
                      const Depfs__MdsReply *rep)
{
    if (!rep || rep->err != 0 || rep->n_entries > DC_SA_PAGE_ENTRIES || !log_covers(sa, gen) ||
        reply_names_epoch(rep) < atomic_load(&sa->names_epoch))
        return;
    if (dir_reserve(d, (uint32_t)rep->n_entries) < 0)
        return;
    for (size_t i = 0; i < rep->n_entries; i++) {
        dir_add(d, rep->entries[i], asked_ms);
        if (rep->entries[i]->cookie > d->next_cookie)
            d->next_cookie = rep->entries[i]->cookie;
    }
    d->eof = rep->has_eof && rep->eof;
    sa->pages++;
    log_replay(sa, gen); /* what changed while the page was on its way */
}

void dc_sa_keep(depfs_t *fs, uint64_t parent, uint64_t gen, uint64_t asked_ms,
                const Depfs__MdsReply *rep)
{
    dc_statahead *sa = &fs->statahead;
    pthread_mutex_lock(&sa->lock);
    dc_sa_dir *d = dir_find(sa, parent);
    if (d) { /* always there while filling: slots being filled are not taken */
        d->filling = false;
        keep_page(sa, d, gen, asked_ms, rep);
    }
    pthread_mutex_unlock(&sa->lock);
}

uint64_t dc_sa_gen(depfs_t *fs)
{
    dc_statahead *sa = &fs->statahead;
    pthread_mutex_lock(&sa->lock);
    uint64_t gen = sa->gen;
    pthread_mutex_unlock(&sa->lock);
    return gen;
}

void dc_sa_offer(depfs_t *fs, uint64_t parent, uint64_t from, uint64_t gen, uint64_t asked_ms,
                 const Depfs__MdsReply *rep)
{
    dc_statahead *sa = &fs->statahead;
    if (sa->max_age_ms == 0)
        return;
    uint64_t now = dc_now_ms();
    pthread_mutex_lock(&sa->lock);
    dc_sa_dir *d = dir_get(sa, parent, now);
    if (!d || d->filling)
        goto out;
    bool young = d->n > 0 && now - d->started_ms < sa->max_age_ms;
    if (from == 0) { /* a listing from its start: the pages kept start over */
        dir_empty(d);
        d->next_cookie = 0;
        d->eof = false;
        d->started_ms = asked_ms;
    } else if (!young || d->eof || from != d->next_cookie) {
        goto out; /* not what follows the pages kept */
    }
    d->used_ms = now;
    keep_page(sa, d, gen, asked_ms, rep);
out:
    pthread_mutex_unlock(&sa->lock);
}

/* Ops that change nothing a kept entry says. */
static bool op_keeps_all(Depfs__MdsOp op, const Depfs__MdsRequest *req)
{
    if (op == DEPFS__MDS_OP__MDS_OPEN) /* for reading, not truncating */
        return req->has_flags && (req->flags & O_ACCMODE) == O_RDONLY && !(req->flags & O_TRUNC);
    return dc_mds_op_reads_only(op);
}

/* Ops whose every effect is on what their request and reply name. */
static bool op_changes_named(Depfs__MdsOp op)
{
    switch (op) {
    case DEPFS__MDS_OP__MDS_SETATTR:
    case DEPFS__MDS_OP__MDS_CREATE:
    case DEPFS__MDS_OP__MDS_MKNOD:
    case DEPFS__MDS_OP__MDS_MKDIR:
    case DEPFS__MDS_OP__MDS_UNLINK:
    case DEPFS__MDS_OP__MDS_RMDIR:
    case DEPFS__MDS_OP__MDS_RENAME:
    case DEPFS__MDS_OP__MDS_SYMLINK:
    case DEPFS__MDS_OP__MDS_LINK:
    case DEPFS__MDS_OP__MDS_SETXATTR:
    case DEPFS__MDS_OP__MDS_REMOVEXATTR:
    case DEPFS__MDS_OP__MDS_EXTEND:
    case DEPFS__MDS_OP__MDS_OPEN:
    case DEPFS__MDS_OP__MDS_RELEASE:
        return true;
    default:
        return false;
    }
}

void dc_sa_after_call(depfs_t *fs, Depfs__MdsOp op, const Depfs__MdsRequest *req,
                      const Depfs__MdsReply *rep)
{
    dc_statahead *sa = &fs->statahead;
    /* an inode named by number that is gone (ENOENT), unlinked (nlink 0)
     * or replaced at its name (ESTALE: another client's migrate), or a
     * parent directory that is gone (ESTALE): what is kept of it is stale,
     * and the lookup the caller does next (the kernel's re-lookup of the
     * name) must reach the MDS */
    bool stale_ino = rep && req->has_ino &&
                     (rep->err == ESTALE || rep->err == ENOENT ||
                      (rep->attr && rep->attr->nlink == 0));
    bool stale_parent = rep && rep->err == ESTALE && (req->has_parent || req->has_new_parent);
    /* refused for an old names epoch (a directory renamed): any page may
     * hold names from before, and the kernel's walk again must not get them */
    bool stale_names = rep && rep->has_names_epoch;
    bool keeps_all = op_keeps_all(op, req);
    bool drops_nothing = keeps_all && !stale_ino && !stale_parent && !stale_names;
    uint64_t epoch = rep && sa->max_age_ms ? reply_names_epoch(rep) : 0;
    if (sa->max_age_ms == 0 || (drops_nothing && epoch <= atomic_load(&sa->names_epoch)))
        return;
    pthread_mutex_lock(&sa->lock);
    if (epoch > atomic_load(&sa->names_epoch)) {
        /* a directory was renamed since the pages kept were fetched: none
         * answers (a page in flight is of the old epoch: not kept) */
        atomic_store(&sa->names_epoch, epoch);
        drop_all(sa);
    }
    if (drops_nothing)
        goto out;
    sa->gen++;
    if (stale_names) {
        drop(sa, DC_SA_DROP_ALL, 0, NULL);
        goto out;
    }
    if (keeps_all) {
        if (stale_ino)
            drop(sa, DC_SA_DROP_INO, req->ino, NULL);
        if (stale_parent && req->has_parent)
            drop(sa, DC_SA_DROP_INO, req->parent, NULL);
        if (stale_parent && req->has_new_parent)
            drop(sa, DC_SA_DROP_INO, req->new_parent, NULL);
        goto out;
    }
    if (!op_changes_named(op)) {
        drop(sa, DC_SA_DROP_ALL, 0, NULL);
        goto out;
    }
    /* a change that failed may still have happened: its reply, if any, only
     * adds what it names */
    if (req->has_parent && req->name)
        drop(sa, DC_SA_DROP_NAME, req->parent, req->name);
    if (req->has_new_parent && req->new_name)
        drop(sa, DC_SA_DROP_NAME, req->new_parent, req->new_name);
    if (req->has_parent) /* the directories' own attributes changed */
        drop(sa, DC_SA_DROP_INO, req->parent, NULL);
    if (req->has_new_parent)
        drop(sa, DC_SA_DROP_INO, req->new_parent, NULL);
    if (req->has_ino)
        drop(sa, DC_SA_DROP_INO, req->ino, NULL);
    if (rep && rep->attr)
        drop(sa, DC_SA_DROP_INO, rep->attr->ino, NULL);
    if (rep && rep->has_removed_ino && rep->removed_ino)
        drop(sa, DC_SA_DROP_INO, rep->removed_ino, NULL);
out:
    pthread_mutex_unlock(&sa->lock);
}
