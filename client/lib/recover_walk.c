/* recover_walk.c - depfs_files_on_server: the namespace walk a
 * reconstruction starts from (every regular file whose layout has the
 * server, hard links once). */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "recover.h"
#include "ino_hash.h"
#include "log.h"

/* Namespace walk: directories deeper than this are skipped (logged). */
#define DC_WALK_DEPTH_MAX 1024u

#define DC_INOSET_MIN_SLOTS 1024u

/* A set of inode numbers (open addressing; 0 is the empty slot). */
typedef struct dc_inoset {
    uint64_t *slot;
    size_t cap, n;
} dc_inoset;

static size_t dc_ino_hash(uint64_t ino, size_t cap)
{
    return (size_t)(ino_hash(ino) >> 17) & (cap - 1);
}

/* 1 when newly added, 0 when present, -ENOMEM. */
static int dc_inoset_add(dc_inoset *s, uint64_t ino)
{
    assert(ino != 0);
    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : DC_INOSET_MIN_SLOTS;
        uint64_t *slot = calloc(cap, sizeof *slot);
        if (slot == NULL)
            return -ENOMEM;
        for (size_t i = 0; i < s->cap; i++) {
            if (s->slot[i] == 0)
                continue;
            size_t h = dc_ino_hash(s->slot[i], cap);
            while (slot[h] != 0)
                h = (h + 1) & (cap - 1);
            slot[h] = s->slot[i];
        }
        free(s->slot);
        s->slot = slot;
        s->cap = cap;
    }
    size_t h = dc_ino_hash(ino, s->cap);
    while (s->slot[h] != 0) {
        if (s->slot[h] == ino)
            return 0;
        h = (h + 1) & (s->cap - 1);
    }
    s->slot[h] = ino;
    s->n++;
    return 1;
}

typedef struct dc_walk_ent {
    uint64_t ino;
    mode_t type;
    unsigned depth;
} dc_walk_ent;

typedef struct dc_walk {
    dc_walk_ent *v;           /* stack of directories still to read */
    size_t n, cap;
    dc_walk_ent *batch;       /* entries of the directory being read */
    size_t bn, bcap;
    unsigned depth;
    int err;
} dc_walk;

static int dc_walk_push(dc_walk_ent **v, size_t *n, size_t *cap, dc_walk_ent e)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        dc_walk_ent *nv = realloc(*v, c * sizeof *nv);
        if (nv == NULL)
            return -ENOMEM;
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = e;
    return 0;
}

/* readdir callback: collect only (no library calls from inside it). */
static int dc_walk_collect(void *arg, const char *name, uint64_t ino, mode_t type, uint64_t cookie)
{
    (void)cookie;
    dc_walk *w = arg;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return 0;
    dc_walk_ent e = {.ino = ino, .type = type, .depth = w->depth + 1};
    w->err = dc_walk_push(&w->batch, &w->bn, &w->bcap, e);
    return w->err != 0;
}

/* One entry: a directory goes on the stack, a regular file on S to fn. */
static int dc_walk_entry(depfs_t *fs, dc_walk *w, dc_inoset *seen, const dc_walk_ent *e,
                         uint32_t server, depfs_file_fn fn, void *arg)
{
    if (e->type == S_IFDIR) {
        if (e->depth > DC_WALK_DEPTH_MAX) {
            log_warn("files on server %u: directory %llu deeper than %u levels skipped", server,
                     (unsigned long long)e->ino, DC_WALK_DEPTH_MAX);
            return 0;
        }
        return dc_walk_push(&w->v, &w->n, &w->cap, *e);
    }
    if (e->type != 0 && e->type != S_IFREG)
        return 0;
    Depfs__MdsReply *rep = NULL;
    int rc = dc_getattr_rep(fs, e->ino, &rep);
    if (rc == -ENOENT) /* removed since the listing */
        rc = 0;
    else if (rc == 0 && S_ISDIR(rep->attr->mode))
        rc = dc_walk_push(&w->v, &w->n, &w->cap, (dc_walk_ent){e->ino, S_IFDIR, e->depth});
    else if (rc == 0 && S_ISREG(rep->attr->mode) && rep->layout != NULL) {
        layout lay;
        dc_layout_from_pb(rep->layout, &lay);
        bool first_link = rep->attr->nlink <= 1 || dc_inoset_add(seen, e->ino) == 1;
        if (first_link && dc_pos_of(&lay, server) >= 0 && fn(arg, e->ino, rep->attr->size) != 0)
            rc = 1; /* the caller stops the walk */
    }
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rc;
}

int depfs_files_on_server(depfs_t *fs, uint32_t server_id, depfs_file_fn fn, void *arg)
{
    if (fs == NULL || fn == NULL)
        return -EINVAL;
    dc_walk w = {0};
    dc_inoset seen = {0};
    int rc = dc_walk_push(&w.v, &w.n, &w.cap, (dc_walk_ent){DEPFS_ROOT_INO, S_IFDIR, 0});
    while (rc == 0 && w.n > 0) {
        dc_walk_ent dir = w.v[--w.n];
        w.bn = 0;
        w.depth = dir.depth;
        rc = depfs_readdir(fs, dir.ino, 0, dc_walk_collect, &w);
        if (rc == -ENOENT || rc == -ESTALE) /* removed while we walked */
            rc = 0;
        if (rc == 0)
            rc = w.err;
        for (size_t i = 0; i < w.bn && rc == 0; i++)
            rc = dc_walk_entry(fs, &w, &seen, &w.batch[i], server_id, fn, arg);
    }
    free(w.v);
    free(w.batch);
    free(seen.slot);
    return rc > 0 ? 0 : rc;
}
