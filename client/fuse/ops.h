/* ops.h - depfs-fuse: the FUSE low-level operations over libdepfs.
 *
 * FUSE inode numbers are DePFS (MDS) inode numbers; the root is 1 on both
 * sides. fi->fh carries a depfs_fh_t *. Every handler answers with the
 * library's result: a reply on success, fuse_reply_err(positive errno) on
 * failure; nothing the kernel sends can crash the daemon. */
#ifndef DFUSE_OPS_H
#define DFUSE_OPS_H
#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "depfs.h"

/* Largest read/write request we negotiate with the kernel (1 MiB). */
#define DFUSE_MAX_IO_BYTES (1024u * 1024u)
/* Slots of the ino -> st_blksize cache (direct mapped). */
#define DFUSE_BLKSIZE_CACHE_SLOTS 4096u

typedef struct dfuse_blksize_slot {
    uint64_t ino;        /* 0 = empty */
    uint32_t blksize;    /* k * stripe unit of that file */
} dfuse_blksize_slot;

/* Everything the handlers share; fuse userdata points at it. */
typedef struct dfuse_ctx {
    depfs_t *fs;
    double attr_timeout_s;
    double entry_timeout_s;
    uint32_t default_blksize;      /* dirs and files without a layout */
    pthread_mutex_t blksize_lock;
    dfuse_blksize_slot blksize_cache[DFUSE_BLKSIZE_CACHE_SLOTS];
} dfuse_ctx;

/* The handler table handed to fuse_session_new(). */
extern const struct fuse_lowlevel_ops dfuse_ops;

/* ctx->fs must be set; initialises the rest except the timeouts. 0 or -errno. */
int dfuse_ctx_init(dfuse_ctx *ctx);
void dfuse_ctx_destroy(dfuse_ctx *ctx);

#endif
