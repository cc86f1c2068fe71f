/* api_path.c - libdepfs entry points: the path API. Labels (depfs@N@K[@SU]:/path) are
 * parsed and checked against the cluster here; paths are walked component
 * by component from the root with MDS lookups, following symbolic links
 * met on the way (at most DC_MAX_SYMLINKS, then ELOOP) and ".." through a
 * stack of the directories walked. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "label.h"
#include "log.h"
#include "wire_check.h"

#define DC_MAX_SYMLINKS 40u    /* as Linux's MAXSYMLINKS */
#define DC_WALK_MAX_DEPTH 512u /* directories deep; PATH_MAX/2 bounds it too */
#define DC_OPEN_ATTEMPTS 2u    /* create lost a race with another creator, or the name
                                * went to another file: walk and open again */

enum walk_flags {
    WALK_FOLLOW_LAST = 1u, /* a symlink as the last component is followed */
    WALK_PARENT_ONLY = 2u, /* stop before looking up the last component */
};

typedef struct walk_out {
    uint64_t parent;          /* directory holding the last component */
    char name[WIRE_NAME_MAX + 1];  /* last component; "" when the path names a
                               * directory by itself ("/", ".../.", "...//..") */
    bool missing_last;        /* -ENOENT came from the last component only */
    uint64_t ino;             /* found (not with WALK_PARENT_ONLY) */
    struct stat st;
} walk_out;

typedef struct walker {
    depfs_t *fs;
    char *buf;                /* PATH_MAX: the rest of the path to walk */
    size_t pos;
    uint64_t *stack;          /* directories walked; stack[0] = root */
    unsigned depth;
    unsigned links;
} walker;

/* Replace the walked part of the buffer by the link's target:
 * buf = target + rest, where rest (from the end of the link's component)
 * keeps its slashes. An absolute target restarts at the root. */
static int walk_expand_link(walker *w, uint64_t link_ino, size_t rest)
{
    if (++w->links > DC_MAX_SYMLINKS) {
        dc_set_error("too many levels of symbolic links");
        return -ELOOP;
    }
    char *target = malloc(PATH_MAX);
    if (!target)
        return -ENOMEM;
    int rc = depfs_readlink(w->fs, link_ino, target, PATH_MAX);
    if (rc < 0)
        goto out;
    size_t tlen = strlen(target), rlen = strlen(w->buf + rest);
    if (tlen + rlen + 1 > PATH_MAX) {
        dc_set_error("path too long after following a symbolic link");
        rc = -ENAMETOOLONG;
        goto out;
    }
    memmove(w->buf + tlen, w->buf + rest, rlen + 1);
    memcpy(w->buf, target, tlen);
    w->pos = 0;
    if (target[0] == '/')
        w->depth = 1;
out:
    free(target);
    return rc;
}

/* One component at w->pos. Returns 1 to go on, 0 when done, <0 on error. */
static int walk_step(walker *w, unsigned flags, walk_out *out)
{
    while (w->buf[w->pos] == '/')
        w->pos++;
    uint64_t dir = w->stack[w->depth - 1];
    if (!w->buf[w->pos]) { /* the path names the current directory */
        out->parent = dir;
        out->name[0] = '\0';
        out->ino = dir;
        if (flags & WALK_PARENT_ONLY)
            return 0;
        return depfs_getattr(w->fs, dir, &out->st);
    }
    size_t len = strcspn(w->buf + w->pos, "/");
    if (len > WIRE_NAME_MAX) {
        dc_set_error("path component longer than %u bytes", WIRE_NAME_MAX);
        return -ENAMETOOLONG;
    }
    char comp[WIRE_NAME_MAX + 1];
    memcpy(comp, w->buf + w->pos, len);
    comp[len] = '\0';
    size_t after = w->pos + len;
    bool slash = w->buf[after] == '/';
    while (w->buf[after] == '/')
        after++;
    bool last = !w->buf[after];

    if (strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0) {
        if (comp[1] == '.' && w->depth > 1)
            w->depth--;
        w->pos = after;
        return 1;
    }
    if (last && (flags & WALK_PARENT_ONLY)) {
        out->parent = dir;
        memcpy(out->name, comp, len + 1);
        return 0;
    }
    struct stat st;
    int rc = depfs_lookup(w->fs, dir, comp, &st);
    if (rc < 0) {
        if (rc == -ENOENT && last) {
            out->parent = dir;
            memcpy(out->name, comp, len + 1);
            out->missing_last = true;
        }
        return rc;
    }
    if (S_ISLNK(st.st_mode) && (!last || slash || (flags & WALK_FOLLOW_LAST))) {
        rc = walk_expand_link(w, (uint64_t)st.st_ino, w->pos + len);
        return rc < 0 ? rc : 1;
    }
    if (!last) {
        if (!S_ISDIR(st.st_mode)) {
            dc_set_error("'%s' is not a directory", comp);
            return -ENOTDIR;
        }
        if (w->depth >= DC_WALK_MAX_DEPTH) {
            dc_set_error("path deeper than %u directories", DC_WALK_MAX_DEPTH);
            return -ENAMETOOLONG;
        }
        w->stack[w->depth++] = (uint64_t)st.st_ino;
        w->pos = after;
        return 1;
    }
    if (slash && !S_ISDIR(st.st_mode)) {
        dc_set_error("'%s' is not a directory", comp);
        return -ENOTDIR;
    }
    out->parent = dir;
    memcpy(out->name, comp, len + 1);
    out->ino = (uint64_t)st.st_ino;
    out->st = st;
    return 0;
}

/* ESTALE from a call naming a directory of the path by number: that
 * directory was removed after the walk passed it (the MDS: a stale
 * parent). To a caller holding a path, the path does not exist. */
static int path_gone(int rc)
{
    return rc == -ESTALE ? -ENOENT : rc;
}

static int walk(depfs_t *fs, const char *path, unsigned flags, walk_out *out)
{
    memset(out, 0, sizeof *out);
    if (!path || path[0] != '/') {
        dc_set_error("path '%s' is not absolute", path ? path : "(null)");
        return -EINVAL;
    }
    if (strlen(path) >= PATH_MAX) {
        dc_set_error("path longer than %d bytes", PATH_MAX - 1);
        return -ENAMETOOLONG;
    }
    walker w = { .fs = fs, .depth = 1 };
    w.buf = malloc(PATH_MAX);
    w.stack = malloc(DC_WALK_MAX_DEPTH * sizeof *w.stack);
    int rc = -ENOMEM;
    if (!w.buf || !w.stack)
        goto out;
    strcpy(w.buf, path);
    w.stack[0] = DEPFS_ROOT_INO;
    do
        rc = walk_step(&w, flags, out);
    while (rc == 1);
out:
    free(w.buf);
    free(w.stack);
    return path_gone(rc);
}

/* Parse a label and check its n against the cluster. */
static int parse_label(depfs_t *fs, const char *s, depfs_label *lab)
{
    char err[256];
    if (!s) {
        dc_set_error("no path");
        return -EINVAL;
    }
    if (label_parse(s, lab, err, sizeof err) < 0) {
        dc_set_error("bad label in '%s': %s", s, err);
        return -EINVAL;
    }
    if (lab->n && label_check_cluster(lab->n, fs->nservers, err, sizeof err) < 0) {
        dc_set_error("bad label in '%s': %s", s, err);
        return -EINVAL;
    }
    return 0;
}

static int open_create(depfs_t *fs, const depfs_label *lab, const walk_out *w, int flags, mode_t mode,
                       depfs_fh_t **fh)
{
    depfs_layout_info want;
    memset(&want, 0, sizeof want);
    want.n = lab->n;
    want.k = lab->k;
    want.stripe_unit = lab->su;
    return depfs_create(fs, w->parent, w->name, mode, flags, NULL, &want, NULL, fh);
}

int depfs_open(depfs_t *fs, const char *path, int flags, mode_t mode, depfs_fh_t **fh)
{
    *fh = NULL;
    depfs_label lab;
    int rc = parse_label(fs, path, &lab);
    if (rc < 0)
        return rc;
    unsigned wflags = (flags & O_NOFOLLOW) ? 0 : WALK_FOLLOW_LAST;
    for (unsigned attempt = 0; attempt < DC_OPEN_ATTEMPTS; attempt++) {
        walk_out w;
        rc = walk(fs, lab.path, wflags, &w);
        if (rc == 0) {
            if ((flags & O_CREAT) && (flags & O_EXCL)) {
                dc_set_error("'%s' exists", lab.path);
                return -EEXIST;
            }
            if (S_ISLNK(w.st.st_mode)) {
                dc_set_error("'%s' is a symbolic link (O_NOFOLLOW)", lab.path);
                return -ELOOP;
            }
            rc = depfs_open_ino(fs, w.ino, flags & ~(O_CREAT | O_EXCL), fh);
            if (rc != -ESTALE)
                return rc;
            continue; /* the name went to another file meanwhile: walk again */
        }
        if (rc != -ENOENT || !(flags & O_CREAT) || !w.missing_last)
            return rc;
        rc = path_gone(open_create(fs, &lab, &w, flags, mode, fh));
        if (rc != -EEXIST || (flags & O_EXCL))
            return rc; /* else someone created it meanwhile: open it */
    }
    return rc;
}

int depfs_resolve(depfs_t *fs, const char *path, uint64_t *ino, struct stat *st)
{
    depfs_label lab;
    int rc = parse_label(fs, path, &lab);
    if (rc < 0)
        return rc;
    walk_out w;
    rc = walk(fs, lab.path, 0, &w);
    if (rc < 0)
        return rc;
    if (ino)
        *ino = w.ino;
    if (st)
        *st = w.st;
    return 0;
}

/* A label on mkdir sets the new directory's layout (inherited by children). */
static int mkdir_set_layout(depfs_t *fs, uint64_t dir, const depfs_label *lab)
{
    char spec[64];
    unsigned k = lab->k ? lab->k : fs->default_k;
    if (lab->su)
        label_format_spec(spec, sizeof spec, lab->n, k, lab->su);
    else
        snprintf(spec, sizeof spec, "%u@%u", lab->n, k);
    return depfs_setxattr(fs, dir, DEPFS_LAYOUT_XATTR, spec, strlen(spec), 0);
}

int depfs_mkdir_path(depfs_t *fs, const char *path, mode_t mode)
{
    depfs_label lab;
    int rc = parse_label(fs, path, &lab);
    if (rc < 0)
        return rc;
    walk_out w;
    rc = walk(fs, lab.path, WALK_PARENT_ONLY, &w);
    if (rc < 0)
        return rc;
    if (!w.name[0]) {
        dc_set_error("'%s' exists", lab.path);
        return -EEXIST;
    }
    struct stat st;
    rc = path_gone(depfs_mkdir(fs, w.parent, w.name, mode, NULL, &st));
    if (rc == 0 && lab.n)
        rc = mkdir_set_layout(fs, (uint64_t)st.st_ino, &lab);
    return rc;
}

int depfs_unlink_path(depfs_t *fs, const char *path)
{
    depfs_label lab;
    int rc = parse_label(fs, path, &lab);
    if (rc < 0)
        return rc;
    walk_out w;
    rc = walk(fs, lab.path, WALK_PARENT_ONLY, &w);
    if (rc < 0)
        return rc;
    if (!w.name[0]) {
        dc_set_error("'%s' is a directory", lab.path);
        return -EISDIR;
    }
    return path_gone(depfs_unlink(fs, w.parent, w.name));
}
