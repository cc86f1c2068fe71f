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
#include <stdint.h>
#include <sys/types.h>

#include "depfs.h"

#define DFUSE_MS_PER_S 1000.0
/* Largest read/write request we negotiate with the kernel (1 MiB). */
#define DFUSE_MAX_IO_BYTES (1024u * 1024u)
/* Everything the handlers share; fuse userdata points at it. */
typedef struct dfuse_ctx {
    depfs_t *fs;
    struct fuse_session *se;       /* for notifications to the kernel */
    double attr_timeout_s;
    double entry_timeout_s;
    unsigned layout_k;             /* layout= mount option (0: not given) */
    uint32_t layout_su;
    uint32_t default_blksize;      /* st_blksize of dirs etc.; set by init */
    struct dfuse_names *names;     /* names given to the kernel (kernel_names.h) */
} dfuse_ctx;

/* The handler table handed to fuse_session_new(). */
extern const struct fuse_lowlevel_ops dfuse_ops;

/* ctx->fs and the layout_* fields must be set: works out default_blksize
 * (one stripe of data of the mount's default layout). */
void dfuse_ctx_init(dfuse_ctx *ctx);

#endif
