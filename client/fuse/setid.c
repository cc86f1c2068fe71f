/* setid.c - depfs-fuse: who clears set-user-ID / set-group-ID bits, and
 * when. Owns the set of inodes whose mode, as last told to the kernel, has
 * bits a write clears.
 *
 * With FUSE_HANDLE_KILLPRIV_V2 granted (init_flags.c) the kernel no longer
 * clears the bits: it tells us to on every write, O_TRUNC open and truncate
 * of a caller without CAP_FSETID, and expects chown to clear them as well.
 * Linux's own rule (and what FUSE documents): S_ISUID always, S_ISGID only
 * with S_IXGRP. Set-id files are rare, and the kernel asks on every write,
 * so a write only pays for a getattr+setattr when the mode we last told the
 * kernel had such bits: the same knowledge the kernel itself decides with
 * when it clears them (its cached i_mode). Another client's chmod is seen
 * at the next lookup/getattr, as everywhere else (close-to-open).
 *
 * File capabilities (security.capability) need no removal: ops.c refuses
 * to store them and answers every lookup of them with ENODATA, so through
 * a mount no DePFS file ever has one. */
#include "setid.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define DFUSE_SETID_BUCKETS 256u
#define DFUSE_PERM_BITS 07777u
/* Past this many set-id inodes we stop tracking and suspect every inode
 * (correct, one getattr per unprivileged write: only on absurd trees). */
#define DFUSE_SETID_MAX 65536u

typedef struct setid_node {
    uint64_t ino;
    struct setid_node *next;
} setid_node;

typedef struct setid_set {
    pthread_mutex_t lock;
    setid_node *buckets[DFUSE_SETID_BUCKETS];
    atomic_uint count;       /* nodes in the set: 0 keeps lookups lock-free */
    atomic_bool overflowed;  /* a note was dropped: suspect everyone */
} setid_set;

static setid_set setids = {.lock = PTHREAD_MUTEX_INITIALIZER};

static setid_node **bucket_of(uint64_t ino)
{
    return &setids.buckets[ino % DFUSE_SETID_BUCKETS];
}

/* The link pointing at ino's node, or at the NULL ending its chain. */
static setid_node **find_link(uint64_t ino)
{
    setid_node **link = bucket_of(ino);
    while (*link && (*link)->ino != ino)
        link = &(*link)->next;
    return link;
}

mode_t dfuse_setid_killed_mode(mode_t mode)
{
    if (!S_ISREG(mode))
        return mode;
    mode_t out = mode & ~(mode_t)S_ISUID;
    if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
        out &= ~(mode_t)S_ISGID;
    return out;
}

static void set_add(uint64_t ino)
{
    setid_node *node = NULL;
    pthread_mutex_lock(&setids.lock);
    setid_node **link = find_link(ino);
    if (*link)
        goto out; /* already there */
    if (atomic_load(&setids.count) >= DFUSE_SETID_MAX) {
        if (!atomic_exchange(&setids.overflowed, true))
            log_warn("more than %u set-id files in use: every unprivileged write now "
                     "checks its file's mode", DFUSE_SETID_MAX);
        goto out;
    }
    node = malloc(sizeof(*node));
    if (!node) {
        atomic_store(&setids.overflowed, true);
        goto out;
    }
    node->ino = ino;
    node->next = NULL;
    *link = node;
    atomic_fetch_add(&setids.count, 1);
out:
    pthread_mutex_unlock(&setids.lock);
}

static void set_remove(uint64_t ino)
{
    if (atomic_load(&setids.count) == 0)
        return;
    pthread_mutex_lock(&setids.lock);
    setid_node **link = find_link(ino);
    setid_node *node = *link;
    if (node) {
        *link = node->next;
        atomic_fetch_sub(&setids.count, 1);
    }
    pthread_mutex_unlock(&setids.lock);
    free(node);
}

void dfuse_setid_note(uint64_t ino, mode_t mode)
{
    if (dfuse_setid_killed_mode(mode) != mode)
        set_add(ino);
    else
        set_remove(ino);
}

bool dfuse_setid_suspect(uint64_t ino)
{
    if (atomic_load(&setids.overflowed))
        return true;
    if (atomic_load(&setids.count) == 0)
        return false;
    pthread_mutex_lock(&setids.lock);
    bool found = *find_link(ino) != NULL;
    pthread_mutex_unlock(&setids.lock);
    return found;
}

int dfuse_setid_kill(depfs_t *fs, uint64_t ino, struct stat *st)
{
    mode_t killed = dfuse_setid_killed_mode(st->st_mode);
    if (killed == st->st_mode) {
        dfuse_setid_note(ino, st->st_mode);
        return 0;
    }
    mode_t old = st->st_mode;
    struct stat in;
    memset(&in, 0, sizeof(in));
    in.st_mode = killed;
    int rc = depfs_setattr(fs, ino, &in, DEPFS_SET_MODE, st);
    if (rc < 0) {
        log_warn("clearing the set-id bits of inode %llu failed: %s", (unsigned long long)ino,
                 depfs_last_error());
        return rc;
    }
    log_debug("inode %llu: set-id bits cleared (mode %o -> %o)", (unsigned long long)ino,
              (unsigned)old & DFUSE_PERM_BITS, (unsigned)st->st_mode & DFUSE_PERM_BITS);
    dfuse_setid_note(ino, st->st_mode);
    return 1;
}

int dfuse_setid_kill_ino(depfs_t *fs, uint64_t ino)
{
    struct stat st;
    int rc = depfs_getattr(fs, ino, &st);
    if (rc < 0)
        return rc;
    return dfuse_setid_kill(fs, ino, &st);
}
