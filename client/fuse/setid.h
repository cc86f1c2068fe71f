/* setid.h - depfs-fuse: clearing set-user-ID / set-group-ID bits when the
 * kernel leaves that to us (FUSE_HANDLE_KILLPRIV_V2, see init_flags.c), and
 * the per-inode note of which files have such bits, so a write does not
 * cost a metadata round trip to find out. */
#ifndef DFUSE_SETID_H
#define DFUSE_SETID_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "depfs.h"

/* Records the mode of an inode as it is told to the kernel (every attr and
 * entry reply goes through here). */
void dfuse_setid_note(uint64_t ino, mode_t mode);

/* Whether the last mode told to the kernel for ino had bits a write by an
 * unprivileged caller clears (also true when we cannot know). */
bool dfuse_setid_suspect(uint64_t ino);

/* The mode with the bits a write/truncate/chown clears removed: S_ISUID,
 * and S_ISGID when the group may execute (without S_IXGRP it marks
 * mandatory locking, which stays). Regular files only. */
mode_t dfuse_setid_killed_mode(mode_t mode);

/* st: fresh attributes of ino. Clears the bits on the MDS when there are
 * any (st then holds the new attributes) and notes the result. 1 when bits
 * were cleared, 0 when there were none, or -errno. */
int dfuse_setid_kill(depfs_t *fs, uint64_t ino, struct stat *st);

/* Looks ino up on the MDS and clears its bits when it has any (as above). */
int dfuse_setid_kill_ino(depfs_t *fs, uint64_t ino);

#endif
