/* kernel_names.h - depfs-fuse: the names of regular files and directories
 * this mount gave the kernel, per inode, and dropping them from the
 * kernel's cache when a name of the file went or moved elsewhere, or the
 * directory is gone.
 *
 * Why. An open through a name the kernel cached carries the inode's name
 * generation its lookup gave (libdepfs), and the MDS refuses it (ESTALE)
 * once a name of the file went or moved: the kernel then looks the name up
 * again. But the generation is kept per inode: once this mount was given
 * the moved file under its new name (a listing, a lookup of the new name),
 * the generation is the new one, and the kernel's old entry (ckpt, now
 * another client's ckpt.old) would pass. So when a reply shows that an
 * inode's names changed since this mount last saw them (libdepfs's
 * names_moved hook), the kernel is told to drop every name this mount gave
 * it for that inode (FUSE notify_inval_entry); its next use looks the name
 * up. Dropping a name that is still right costs one lookup, nothing else.
 *
 * The drops run on a thread of their own: the kernel holds the directory's
 * lock while it waits for the reply that showed the change (a lookup or a
 * listing in it), and a drop takes that lock. The next open of the inode
 * waits for them (at most DFUSE_NAMES_WAIT_MS) and is then answered ESTALE,
 * so the kernel walks the path again past the dropped entries, looking
 * each name up (dfuse_names_settle): its walk may have taken an old entry
 * just before the drop.
 *
 * A directory another client removed (and perhaps made again under its
 * name), or moved away, is ESTALE to every request naming it as a parent
 * through the old path (the MDS). The
 * kernel walks the path again for most of them (open, stat, unlink,
 * rename...), but not when a create's lookup of the new name is what
 * failed (mkdir, mknod, symlink): depfs-fuse answers such a lookup ENOENT
 * when it can (ops.c lookup_in_stale: the names dropped are the path it
 * checks), and the create's own request is refused and retried. The
 * directory's names are dropped before any such answer, so the kernel's
 * next walk looks the directory up instead of failing the same way until
 * entry_timeout, or passing through the old name: the MDS lets the caller
 * it refused go on through the moved directory (a process whose working
 * directory it is), and only that caller.
 *
 * Bounded: DFUSE_NAMES_PER_INODE names per inode (the newest), the oldest
 * of DFUSE_NAMES_INODES_MAX inodes forgotten first; a forgotten name is
 * only not dropped (the kernel's entry then lasts its entry_timeout). */
#ifndef DFUSE_KERNEL_NAMES_H
#define DFUSE_KERNEL_NAMES_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

struct fuse_session;

#define DFUSE_NAMES_PER_INODE 4u
#define DFUSE_NAMES_INODES_MAX (1u << 16)
#define DFUSE_NAMES_WAIT_MS 200u
/* After an ESTALE open the kernel walks the path again (once): the first
 * move its lookups show meanwhile (within this bound, before the next
 * open) does not make the retried open ESTALE again. */
#define DFUSE_NAMES_REWALK_MS 1000u

typedef struct dfuse_names dfuse_names;

/* Starts the drop thread for session se (after fuse_daemonize: threads do
 * not survive its fork). 0 or -errno. */
int dfuse_names_start(struct fuse_session *se, dfuse_names **out);
/* Stops the thread (queued drops are discarded) and frees everything. */
void dfuse_names_stop(dfuse_names *n);
/* The kernel was given name in directory parent for ino (a regular file
 * or a directory). */
void dfuse_names_given(dfuse_names *n, uint64_t ino, uint64_t parent, const char *name);
/* A name of ino went or moved since this mount gave the kernel its names:
 * queue their drops. Never blocks on the kernel. */
void dfuse_names_moved(dfuse_names *n, uint64_t ino);
/* A name the kernel had: name in directory parent. */
typedef struct dfuse_name {
    uint64_t parent;
    char name[NAME_MAX + 1];
} dfuse_name;

/* Directory ino is gone or moved (a request naming it as a parent was
 * answered ESTALE): drops its names, and waits for them (at most
 * DFUSE_NAMES_WAIT_MS) so that the caller, told ESTALE after, walks to the
 * new directory when it tries again (a second try through the old name
 * would pass: it is the caller the MDS refused, core_names_pass.h).
 * had (room for DFUSE_NAMES_PER_INODE; NULL: not wanted): the names the
 * kernel had of it, as this or an earlier drop found them; returns how
 * many (0: none known). */
unsigned dfuse_names_gone(dfuse_names *n, uint64_t ino, dfuse_name *had);
/* Before an open of ino: false unless its names moved since the last open
 * that was answered ESTALE; else waits for its drops (bounded) and returns
 * true: answer the open ESTALE. */
bool dfuse_names_settle(dfuse_names *n, uint64_t ino);
/* An open of ino was answered ESTALE (by the MDS): the kernel walks its
 * path again now. */
void dfuse_names_rewalk(dfuse_names *n, uint64_t ino);

#endif
