/* core_names_pass.h - libdepfs core: which kernel callers go on through
 * the kernel's old names of an inode after the MDS refused them once.
 *
 * A mount that counts lookups (depfs-fuse) shows the MDS the names epoch
 * of the names its kernel holds, and a directory another client moved
 * since makes the request ESTALE (core_mds.c names_epoch_stamp). The
 * kernel then walks the path again. A request that names that inode again
 * comes either from a caller that cannot walk (a process whose working
 * directory, or a directory it has open, is the moved one: it goes on
 * there, as on a local file system), or from another caller whose walk
 * took the old name before depfs-fuse dropped it: ranks on one node that
 * mkdir in `ckpt` at once, right after another node rotated it (`mv ckpt
 * ckpt.old; mkdir ckpt`). Those must be refused as well, or their
 * directories land in ckpt.old. So a refusal lets only the caller it
 * refused (depfs_act_caller: for depfs-fuse the kernel thread) go on
 * through the inodes it named, at the epoch the MDS gave with it.
 *
 * Bounded: DC_NAMES_PASS_MAX (inode, caller) pairs, the least recently
 * used replaced (that caller is then refused once more). Thread-safe. */
#ifndef DEPFS_CLIENT_CORE_NAMES_PASS_H
#define DEPFS_CLIENT_CORE_NAMES_PASS_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define DC_NAMES_PASS_MAX 64u

typedef struct dc_names_pass_entry {
    uint64_t ino;    /* 0: free */
    uint64_t caller;
    uint64_t epoch;  /* the MDS's names epoch when it refused the caller */
    uint64_t used;   /* the table's clock when last noted or used */
} dc_names_pass_entry;

typedef struct dc_names_pass {
    pthread_mutex_t lock;       /* guards clock and e */
    atomic_uint count;          /* pairs kept: none, no lock taken to look */
    uint64_t clock;
    dc_names_pass_entry e[DC_NAMES_PASS_MAX];
} dc_names_pass;

void dc_names_pass_init(dc_names_pass *p);
void dc_names_pass_destroy(dc_names_pass *p);
/* The MDS refused caller's request through ino at names epoch `epoch`
 * (its current one): caller goes on through ino at that epoch. */
void dc_names_pass_note(dc_names_pass *p, uint64_t ino, uint64_t caller, uint64_t epoch);
/* caller no longer goes on through ino (no pair: nothing). */
void dc_names_pass_forget(dc_names_pass *p, uint64_t ino, uint64_t caller);
/* true and *epoch when caller was refused through ino before at an epoch
 * above `shown` (what the request would show without it): the epoch to
 * show instead. A pair not above it is of no more use (the kernel's names
 * of ino caught up) and is forgotten, so the table empties again and
 * requests look at it without its lock (count). */
bool dc_names_pass_epoch(dc_names_pass *p, uint64_t ino, uint64_t caller, uint64_t shown,
                         uint64_t *epoch);

#endif
