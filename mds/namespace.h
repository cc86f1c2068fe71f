/* namespace.h - the MDS namespace as plain functions over the store: inodes,
 * directory entries, symlinks, xattrs, layouts, counters. No RPC here.
 *
 * Every mutation is one atomic kv_batch, decided and written (without sync)
 * under one lock that serialises mutations; reads share the lock. The
 * mutation is made durable after the lock is released (kv_sync, a group
 * commit), before the function returns - or, after mds_ns_defer_sync, by
 * the caller before it acknowledges anything. Semantics follow Linux.
 * Return convention: 0 or a negative errno; on failure `why` (MDS_WHY_MAX
 * bytes, may be NULL) may hold a human-readable reason.
 *
 * Permissions: the operations a user asks for take the acting caller
 * (`who`, caller.h; for new objects mds_new.who) and check it with perm.h
 * under the namespace lock, against the inodes they change. who NULL is
 * the MDS itself or a test: nothing is checked. */
#ifndef DEPFS_MDS_NAMESPACE_H
#define DEPFS_MDS_NAMESPACE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "caller.h"
#include "config.h"
#include "holds.h"
#include "kvstore.h"
#include "store_keys.h"
#include "wire.h" /* DEPFS_SET_* setattr bits */
#include "wire_check.h"

#define MDS_ROOT_INO WIRE_ROOT_INO
#define MDS_WHY_MAX 256u
#define MDS_READDIR_MAX 1024u      /* entries per readdir reply */
/* name, symlink and xattr limits: wire_check.h (WIRE_*) */
#define MDS_LINK_MAX 65000u        /* nlink limit (EMLINK) */
#define MDS_LAYOUT_XATTR "user.depfs.layout"

#define MDS_RENAME_NOREPLACE 1u
#define MDS_RENAME_EXCHANGE 2u
#define MDS_XATTR_CREATE 1u
#define MDS_XATTR_REPLACE 2u

/* setattr mask: DEPFS_SET_* (wire.h; == proto SetMask == FUSE_SET_ATTR_*). */

typedef struct mds_ns mds_ns;

/* What the namespace needs to know about the cluster. */
typedef struct mds_ns_params {
    unsigned n_servers;
    uint32_t server_ids[CONFIG_MAX_IOSERVERS];
    unsigned default_n, default_k;
    uint32_t default_su;
} mds_ns_params;

/* Fills params from a loaded config. */
void mds_ns_params_from_config(const depfs_config *cfg, mds_ns_params *p);

/* kv stays owned by the caller and must outlive ns. Creates the root inode
 * and counters on first use. */
int mds_ns_open(kvstore *kv, const mds_ns_params *p, mds_ns **out, char *why);
void mds_ns_close(mds_ns *ns);

/* The names epoch: it moves on whenever a directory is renamed (moved or
 * exchanged), and at every start of the MDS (its high bits count the
 * starts: MDS_NAMES_EPOCH_BOOT_SHIFT), so it only ever grows. A name a
 * client was given while the epoch was e was the path's name then; once a
 * directory above it moved (the epoch past e), the name may lead elsewhere
 * (`mv ckpt ckpt.old; mkdir ckpt`: a cached ckpt/f is ckpt.old/f). Read it
 * before resolving a name, so that a reply never carries an epoch newer
 * than the namespace its name came from. */
#define MDS_NAMES_EPOCH_BOOT_SHIFT 32u
uint64_t mds_ns_names_epoch(mds_ns *ns);
/* Whether names given at epoch `epoch` to client below directory dir
 * still lead where they did: -ESTALE (why set) when dir or a directory
 * above it was moved after epoch by another client (the mover's kernel
 * followed its own move); 0 otherwise, also when dir is gone or no
 * directory (the request fails on its own then). Walks at most
 * MDS_NAMES_WALK_MAX directories up. */
#define MDS_NAMES_WALK_MAX 4096u
int mds_ns_names_current(mds_ns *ns, uint64_t dir, uint64_t epoch, uint64_t client, char *why);
/* The namespace's random id, fixed at its creation (handles.h binds the
 * inode handle tags to it). */
uint64_t mds_ns_id(const mds_ns *ns);

/* From now on mutations return once written, not yet durable: the caller
 * must kv_sync the store before it acknowledges a mutation (the MDS daemon
 * hands such replies to mds/syncer.c). Call before any concurrent use. */
void mds_ns_defer_sync(mds_ns *ns);
/* Mutations (transactions) the calling thread has written so far: compare
 * two readings to learn whether an operation wrote anything. */
uint64_t mds_ns_thread_writes(void);

/* A new object. */
typedef struct mds_new {
    const mds_caller *who;   /* NULL: unchecked; else the owner is who's */
    uint64_t parent;
    const char *name;
    uint32_t mode;           /* permission bits (+ type for mknod) */
    uint32_t uid, gid;
    uint64_t rdev;           /* mknod */
    const char *target;      /* symlink */
    unsigned want_n, want_k; /* create: 0 = inherit / default */
    uint32_t want_su;
    bool unlinked;           /* create: no name (O_TMPFILE), queued for purge at once */
    uint64_t held_until_s;   /* unlinked: its creator's hold, recorded with its entry */
    mds_inode *dir_out;      /* out, NULL: not wanted: on success, the parent as
                              * the change left it (proto MdsReply.dir_attr) */
} mds_new;

/* An inode whose last link went away (removed_ino 0: none). */
typedef struct mds_removed {
    uint64_t ino;
    bool has_layout;
    bool may_have_data; /* strip files may exist (see mds_inode.may_have_data) */
    layout lay;
    bool queued;        /* a regular file: kept by inode number (nlink 0) and
                         * queued for the removal of its strip files */
    bool has_dir;       /* mds_ns_unlink: dir is the directory as the unlink
                         * left it (proto MdsReply.dir_attr) */
    mds_inode dir;
} mds_removed;

/* Values for setattr (fields picked by the mask). No ctime: as on Linux
 * nobody sets it, every change sets it to the MDS's now, and
 * DEPFS_SET_CTIME (FUSE_SET_ATTR_CTIME: the kernel flushing the time it
 * took for a change) is that too, whatever time the request carries. */
typedef struct mds_setattr_in {
    uint32_t mode, uid, gid;
    uint64_t size;
    const uint64_t *alloc_bytes; /* with DEPFS_SET_SIZE: the strip files'
                                  * allocation measured after the cut (NULL:
                                  * none; a shrink then only bounds it) */
    int64_t atime_ns, mtime_ns;
} mds_setattr_in;

typedef int (*mds_dirent_fn)(void *arg, const char *name, size_t name_len, uint64_t ino,
                             uint32_t mode, uint64_t cookie);
/* The same with the entry's inode as the listing saw it, and whether it has
 * stored xattrs (mds_ns_has_xattrs); NULL and false for every entry when
 * the caller may not search the directory. */
typedef int (*mds_dirent_attr_fn)(void *arg, const char *name, size_t name_len, uint64_t ino,
                                  uint32_t mode, uint64_t cookie, const mds_inode *in,
                                  bool xattrs);

int mds_ns_lookup(mds_ns *ns, const mds_caller *who, uint64_t parent, const char *name, mds_inode *out, char *why);
int mds_ns_getattr(mds_ns *ns, uint64_t ino, mds_inode *out, char *why);
/* How an opener reached the inode: through a name (linked), looked up
 * when the inode's name_gen was name_gen (if has_name_gen). */
typedef struct mds_open_name {
    bool linked;
    bool has_name_gen;
    uint64_t name_gen;
} mds_open_name;
/* An open of a regular file for flags (O_ACCMODE, O_TRUNC): its attributes
 * once who may (other types: their attributes, unchecked; the client
 * refuses to open them). An opener that came through a name (on->linked)
 * is told -ESTALE (look the name up again) for a regular file that has no
 * name now or whose names changed since it looked it up (name_gen). */
int mds_ns_open_file(mds_ns *ns, const mds_caller *who, uint64_t ino, uint32_t flags,
                     const mds_open_name *on, mds_inode *out, char *why);
int mds_ns_setattr(mds_ns *ns, const mds_caller *who, uint64_t ino, uint32_t mask, const mds_setattr_in *in,
                   mds_inode *out, char *why);
/* flags: O_EXCL: EEXIST if present; else an existing regular file is
 * returned once nw->who may open it for flags (O_ACCMODE, O_TRUNC).
 * nw->unlinked: a new file without a name (nw->name unused), nlink 0,
 * queued for purge in the same batch with nw->held_until_s as its holds. */
int mds_ns_create(mds_ns *ns, const mds_new *nw, uint32_t flags, mds_inode *out, char *why);
int mds_ns_mknod(mds_ns *ns, const mds_new *nw, mds_inode *out, char *why);
int mds_ns_mkdir(mds_ns *ns, const mds_new *nw, mds_inode *out, char *why);
int mds_ns_symlink(mds_ns *ns, const mds_new *nw, mds_inode *out, char *why);
int mds_ns_unlink(mds_ns *ns, const mds_caller *who, uint64_t parent, const char *name, mds_removed *rm, char *why);
int mds_ns_rmdir(mds_ns *ns, const mds_caller *who, uint64_t parent, const char *name, char *why);
/* moved (NULL: not wanted): the inode that moved, as the rename left it
 * (ino 0 when nothing moved: both names were one inode's). */
int mds_ns_rename(mds_ns *ns, const mds_caller *who, uint64_t parent, const char *name, uint64_t new_parent,
                  const char *new_name, unsigned flags, mds_removed *rm, mds_inode *moved, char *why);
int mds_ns_link(mds_ns *ns, const mds_caller *who, uint64_t ino, uint64_t new_parent, const char *new_name,
                mds_inode *out, char *why);
/* Entries with cookie > `cookie` ("." is 1, ".." 2), at most max_entries
 * (bounded by MDS_READDIR_MAX). fn returning non-zero stops early (not eof).
 * dir_out (NULL: not wanted): the directory as the listing saw it (the
 * handlers give the entries' handle tags by its search permission). */
int mds_ns_readdir(mds_ns *ns, const mds_caller *who, uint64_t ino, uint64_t cookie, unsigned max_entries,
                   mds_dirent_fn fn, void *arg, bool *eof, mds_inode *dir_out, char *why);
/* mds_ns_readdir with each entry's inode, loaded under the listing's own
 * read lock (READDIR with_attrs: a client's statahead). */
int mds_ns_readdir_attrs(mds_ns *ns, const mds_caller *who, uint64_t ino, uint64_t cookie,
                         unsigned max_entries, mds_dirent_attr_fn fn, void *arg, bool *eof,
                         mds_inode *dir_out, char *why);
/* *target is malloc'd, NUL-terminated. */
int mds_ns_readlink(mds_ns *ns, uint64_t ino, char **target, char *why);
/* A writer's report: size = max(size, given); mtime = mtime_ns (bounded
 * for a writer who is neither owner nor root: perm.h) and ctime = now
 * when has_mtime (else unchanged: a time set explicitly since the
 * writes); alloc_bytes (may be NULL: unchanged) = the strip files'
 * allocation the writer measured after its writes (the latest report
 * stands, cut to every unit of the stripes of the file's size). */
int mds_ns_extend(mds_ns *ns, const mds_caller *who, uint64_t ino, uint64_t size, bool has_mtime, int64_t mtime_ns,
                  const uint64_t *alloc_bytes, mds_inode *out, char *why);
void mds_ns_statfs(mds_ns *ns, uint64_t *files, uint64_t *logical_bytes);
int mds_ns_register(mds_ns *ns, uint64_t *client_id, char *why);

int mds_ns_setxattr(mds_ns *ns, const mds_caller *who, uint64_t ino, const char *name, const void *value, size_t len,
                    unsigned flags, char *why);
/* *value is malloc'd (may be NULL when len is 0). */
int mds_ns_getxattr(mds_ns *ns, const mds_caller *who, uint64_t ino, const char *name, void **value, size_t *len, char *why);
/* *names: malloc'd array of *count malloc'd strings; free with mds_ns_free_names. */
int mds_ns_listxattr(mds_ns *ns, const mds_caller *who, uint64_t ino, char ***names, size_t *count, char *why);
void mds_ns_free_names(char **names, size_t count);
int mds_ns_removexattr(mds_ns *ns, const mds_caller *who, uint64_t ino, const char *name, char *why);

/* ------------------------------------------------------- the purge queue
 * (ns_purge.c). A regular file whose last link goes (unlink, rename over)
 * stays as an inode with nlink 0, reachable by inode number only, and is
 * queued in the same batch; it counts in statfs until it is dropped. Who
 * may still use it is the daemon's business (holds.h): these functions only
 * keep the queue. */

/* The holds a file's queue entry records when its last link goes (its
 * holds' latest end, holds.h). NULL: none. Call before any concurrent use. */
void mds_ns_set_holds(mds_ns *ns, mds_holds *holds);

/* fn(arg, in, held_until_s) for queued inodes with ino > after_ino in ino order, at most
 * scan_max of them (bounded by MDS_PURGE_SCAN_MAX), under the namespace's
 * read lock: fn returns 0 to go on, > 0 to stop, < 0 an error (returned).
 * *last_ino: the last inode passed to fn (after_ino when none); *eof: the
 * queue's end was reached. */
#define MDS_PURGE_SCAN_MAX 4096u
typedef int (*mds_purge_fn)(void *arg, const mds_inode *in, uint64_t held_until_s);
int mds_ns_purge_scan(mds_ns *ns, uint64_t after_ino, unsigned scan_max, mds_purge_fn fn, void *arg,
                      uint64_t *last_ino, bool *eof, char *why);
/* Drops the queued inodes of inos[0..n) (their strip files are gone), in
 * one batch: each inode, its xattrs and its queue entry, with the
 * counters. An ino that is not queued, or that keep(arg, ino,
 * held_until_s) keeps (NULL: none), is left as it is. n is at most
 * WIRE_PURGE_LIST_MAX. *dropped: how many went. */
typedef bool (*mds_purge_keep_fn)(void *arg, uint64_t ino, uint64_t held_until_s);
int mds_ns_purge_done(mds_ns *ns, const uint64_t *inos, size_t n, mds_purge_keep_fn keep, void *arg,
                      unsigned *dropped, char *why);
/* Queued ino's recorded hold end becomes until_s when later (a hold
 * renewed), or anyway with lower (no hold is left). No write when it is
 * unchanged. -ENOENT when ino is not queued. */
int mds_ns_purge_hold(mds_ns *ns, uint64_t ino, uint64_t until_s, bool lower, char *why);
/* What queued ino's entry recorded of its holds (held_until_s), or
 * -ENOENT when ino is not queued. */
int mds_ns_purge_recorded(mds_ns *ns, uint64_t ino, uint64_t *held_until_s, char *why);
/* Files queued and their bytes (sizes). */
void mds_ns_purge_stats(mds_ns *ns, uint64_t *files, uint64_t *bytes);

/* ------------------------------------------- holds journal (ns_holds.c)
 * The holds table (holds.h) journals every hold it keeps here, one record
 * per (file, client) with its end and whether it is a writer's, written
 * without a sync before the open it answers is answered, and deleted at
 * the release. An unsynced write is in the kernel when it returns
 * (kvstore.h), so a crash of the MDS process loses none of them; a crash
 * of the machine may. So the records name every hold of the run that
 * wrote them when that run stopped cleanly, or crashed under the same
 * kernel boot (the boot record: /proc/sys/kernel/random/boot_id, written
 * durably at each start). The floor record: holds that run could not
 * name one by one (holds.h floors) end by then.
 * These write through the store alone, never under the namespace's lock
 * (the holds table calls them under its own, which the namespace takes
 * under its lock). */
#define MDS_BOOT_ID_MAX 64u /* a boot id's bytes at most (the kernel's: 36) */

/* What the previous run left (mds_ns_holds_begin). */
typedef struct mds_holds_prev {
    bool clean;          /* it stopped cleanly (mds_ns_put_holds_until) ... */
    uint64_t until_s;    /* ... and its holds ended by then */
    bool journalled;     /* it journalled its holds (false: a store from
                          * before the journal, or a new namespace) */
    bool same_boot;      /* ... under the kernel boot this run started in */
    uint64_t floor_s;    /* its floor record (0: none) */
} mds_holds_prev;
/* Reads what the previous run left; boot_id: this kernel boot's ("":
 * unknown, never the same). */
int mds_ns_holds_begin(mds_ns *ns, const char *boot_id, mds_holds_prev *prev, char *why);
/* fn(arg, ino, client, until_s, writer) for each journalled hold live at
 * now_s (within grace_s past its end); records of expired holds are
 * deleted (as are undecodable ones, logged). *loaded, *dropped: counts. */
typedef void (*mds_ns_hold_fn)(void *arg, uint64_t ino, uint64_t client, uint64_t until_s, bool writer);
int mds_ns_holds_load(mds_ns *ns, uint64_t now_s, uint64_t grace_s, mds_ns_hold_fn fn, void *arg,
                      unsigned *loaded, unsigned *dropped, char *why);
/* This run journals its holds: the boot record becomes boot_id, the floor
 * record floor_s, and the clean stop's record goes, durably (so a crash
 * of this run is not taken for a clean stop). Before any hold is given. */
int mds_ns_holds_commit_start(mds_ns *ns, const char *boot_id, uint64_t floor_s, char *why);
/* A clean stop: the latest end of a hold this run gave, durably. */
int mds_ns_put_holds_until(mds_ns *ns, uint64_t until_s, char *why);
/* The journal's records (unsynced; 0 or -EIO). */
int mds_ns_hold_put(mds_ns *ns, uint64_t ino, uint64_t client, uint64_t until_s, bool writer);
int mds_ns_hold_put_floor(mds_ns *ns, uint64_t until_s);
int mds_ns_hold_drop(mds_ns *ns, uint64_t ino, uint64_t client);

/* ------------------------------------------------ migrate (ns_migrate.c)
 * `depfs migrate` copies a regular file into a new file under another
 * layout, unlinked at once and held open by the migrating client (so a
 * killed migrate leaves only a purge queue entry), then asks for the swap:
 * in one batch the copy takes the file's name, mode, owner, times and
 * xattrs (its data version one past the file's), and the file's inode is
 * unlinked into the purge queue with its openers' holds and marked
 * migrated_away (a new open of it is ESTALE: look the name up again).
 * Refused, with nothing written: -ESTALE when the name no longer links
 * src_ino or the file's data version is not data_version (it changed
 * since the copy began), -EMLINK for a file with hard links, -EINVAL when
 * copy_ino is not an unlinked queued regular file of the file's size,
 * -EBUSY when busy(arg, src_ino, why) says so (another client holds the
 * file open for writing; called under the namespace's write lock, so a
 * writer's open is either seen by it or comes after the swap), -EPERM
 * when copy_held(arg, copy_ino, why) says the requesting client does not
 * hold the copy open (another's copy, or one whose strip files the purge
 * may be removing). The caller (who) must be allowed to search and write
 * the directory, as for an unlink of the name (sticky directories: the
 * directory's or the file's owner), and to write both files (-EACCES,
 * -EPERM). *out: the copy, as the file is now; rm: the file's inode,
 * queued. */
typedef bool (*mds_migrate_busy_fn)(void *arg, uint64_t ino, char *why);
typedef bool (*mds_migrate_held_fn)(void *arg, uint64_t ino, char *why);
typedef struct mds_migrate_in {
    uint64_t parent;
    const char *name;
    uint64_t src_ino, copy_ino;
    uint64_t data_version;          /* the file's when the copy began */
    mds_migrate_busy_fn busy;       /* NULL: never busy */
    mds_migrate_held_fn copy_held;  /* NULL: not asked (the MDS itself, tests) */
    void *arg;                      /* of busy and copy_held */
} mds_migrate_in;
int mds_ns_migrate_swap(mds_ns *ns, const mds_caller *who, const mds_migrate_in *in,
                        mds_inode *out, mds_removed *rm, char *why);

/* The layout policy of a directory, or the cluster default (n/k/su). */
void mds_ns_effective_policy(mds_ns *ns, const mds_inode *dir, unsigned *n, unsigned *k, uint32_t *su);

#endif
