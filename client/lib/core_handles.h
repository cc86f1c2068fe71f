/* core_handles.h - libdepfs core: the inode handle tags this client was
 * given (mds/handles.h, README "Inode handles"), and the name generation
 * (Attr.name_gen) of the inodes the FUSE kernel holds as that lookup gave
 * it, which an open through a name the kernel cached shows the MDS (a name
 * another client moved or removed since is then refused: ESTALE, look it
 * up again); likewise the names epoch of that lookup (Attr.names_epoch)
 * and the directory of the name, shown with the requests through it (a
 * directory above it another client moved since: ESTALE). A user proved by MUNGE
 * reaches an inode by number only with the tag the MDS sent with it (in an
 * Attr: lookup, create, getattr...; in a Dirent: a readdir of a directory
 * it may search). The table maps ino -> tag; it is filled from every MDS
 * reply and read for every MDS request, both in dc_mds_call (core_mds.c),
 * so no caller deals with tags. A request naming an inode whose tag is not
 * here goes without one (the MDS refuses it for a user).
 *
 * What must stay (pinned, never evicted):
 *   - inodes the FUSE kernel holds: lookup, create, mknod, mkdir, symlink
 *     and link each count one lookup of the inode they return (mounts with
 *     depfs_options.count_lookups), until depfs_forget gives them back;
 *   - inodes open here (a dc_inode exists: its flushes, size commits, hold
 *     renewals and MDS_RELEASE name it by number).
 * Every other entry may be evicted once more than max_unpinned of them
 * are kept (DC_HANDLES_MAX for a mount): a path resolution from the root
 * learns them again. Eviction is a clock (second chance): an entry used
 * since the hand last passed it is kept one more round, so a walk's
 * directories and a listing just read stay while older entries go. Each
 * call holds the table's lock for a bounded time (at most DC_HANDLES_SCAN
 * entries and DC_HANDLES_SCAN_SLOTS slots looked at per insertion; no
 * RPC under it); an
 * allocation happens only when the entries outgrow their chunks.
 *
 * Thread-safe. The cluster key's holders and mounts with auth off need no
 * tags: their mounts leave the table unused (depfs_t.handles_on). */
#ifndef DEPFS_CLIENT_CORE_HANDLES_H
#define DEPFS_CLIENT_CORE_HANDLES_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "depfs.pb-c.h"

/* Unpinned entries a mount keeps: 2^20. An entry is 64 bytes, so a full
 * table is 64 MB (plus the buckets, 4 MB), less than the kernel spends on
 * caching as many inodes, and reached only by a client that met a
 * million inodes without going back to them: the CLI's walks (ls, rm -r,
 * scrub, migrate) keep the entries of a listing of up to about as many
 * names and of the directories above it. */
#define DC_HANDLES_MAX (1u << 20)
#define DC_HANDLES_BUCKET_BITS 20u
#define DC_HANDLES_BUCKETS (1u << DC_HANDLES_BUCKET_BITS)
#define DC_HANDLES_CHUNK (1u << 14) /* entries allocated at a time */
#define DC_HANDLES_SCAN 64u         /* entries the clock looks at per insertion, */
#define DC_HANDLES_SCAN_SLOTS 1024u /* and slots it passes (free ones are many
                                     * after the kernel forgot a lot at once) */
#define DC_HANDLES_EVICT 4u         /* evicted at most per insertion: the excess
                                     * an unlucky scan left shrinks again */

typedef struct dc_handle {
    uint64_t ino;     /* 0: a free entry */
    uint64_t tag;     /* when has_tag */
    uint64_t name_gen; /* when has_name_gen: from the last lookup the kernel was given */
    uint64_t names_epoch; /* when has_names_epoch: the newest Attr.names_epoch of the
                           * replies that gave the kernel its names */
    uint64_t names_via;   /* with names_epoch: the directory of the last of those names */
    uint32_t next;    /* next entry of its bucket or of the free list (index + 1; 0: none) */
    uint32_t nlookup; /* lookups the FUSE kernel holds (saturates: then held for good) */
    uint16_t opens;   /* dc_inodes of ino open here (saturates likewise) */
    bool has_tag;     /* false: pinned before the tag was learned */
    bool has_name_gen;
    bool has_names_epoch;
    bool referenced;  /* used since the clock hand last passed */
} dc_handle;

typedef struct dc_handles {
    pthread_mutex_t lock;   /* guards everything below; never held across a call out */
    uint32_t max_unpinned;
    uint32_t *buckets;      /* DC_HANDLES_BUCKETS chain heads (index + 1; 0: empty) */
    dc_handle **chunks;     /* entries, DC_HANDLES_CHUNK per chunk: an index stays valid */
    uint32_t n_chunks, cap_chunks;
    uint32_t used;          /* entries ever handed out: indexes below it exist */
    uint32_t free_list;     /* index + 1 of a free entry (0: none) */
    uint32_t count, pinned; /* live entries; those with lookups or opens */
    uint32_t hand;          /* the clock: the next index it looks at */
} dc_handles;

/* 0 or -ENOMEM. max_unpinned > 0 (DC_HANDLES_MAX; tests use less). */
int dc_handles_init(dc_handles *h, uint32_t max_unpinned);
void dc_handles_destroy(dc_handles *h);

/* The tags of every Attr and tagged Dirent of a successful reply. */
void dc_handles_learn_reply(dc_handles *h, const Depfs__MdsReply *rep);
/* Sets the tag of every inode-number field present in r (ino, parent,
 * new_parent, migrate_ino, each releases item's ino: those items are the
 * caller's and get their tags in place) other than root_ino whose tag is
 * known. */
void dc_handles_tag_request(dc_handles *h, Depfs__MdsRequest *r, uint64_t root_ino);

void dc_handles_learn(dc_handles *h, uint64_t ino, uint64_t tag);
/* true and *tag when ino's tag is known. */
bool dc_handles_get(dc_handles *h, uint64_t ino, uint64_t *tag);
/* What a reply said of the names of an inode it gave the kernel a name of
 * (a refusal's epoch is kept per caller instead: core_names_pass.h): each
 * part absent when its has_ flag is false (via 0: not said). */
typedef struct dc_names_seen {
    bool has_name_gen, has_epoch;
    uint64_t name_gen; /* Attr.name_gen */
    uint64_t epoch;    /* Attr.names_epoch */
    uint64_t via;      /* the directory the name is in */
} dc_names_seen;

/* The FUSE kernel holds n more lookups of ino (whose tag and names the
 * reply that made it hold them gave: tag, seen, NULL when none) / gives n
 * back. hold: true when the kernel held ino already under another name
 * generation (names it has may be stale). */
bool dc_handles_hold(dc_handles *h, uint64_t ino, const uint64_t *tag, const dc_names_seen *seen,
                     uint64_t n);
/* While the kernel holds ino: what `seen` says of its names replaces what
 * was kept (the epoch only when newer): this client's rename moved it.
 * Nothing when the kernel does not hold it. */
void dc_handles_note_names(dc_handles *h, uint64_t ino, const dc_names_seen *seen);
/* true and *out (the parts known) when the kernel holds ino. */
bool dc_handles_names(dc_handles *h, uint64_t ino, dc_names_seen *out);
void dc_handles_forget(dc_handles *h, uint64_t ino, uint64_t n);
/* A dc_inode of ino came / went. */
void dc_handles_pin(dc_handles *h, uint64_t ino);
void dc_handles_unpin(dc_handles *h, uint64_t ino);

/* For tests and logs: live entries, pinned ones, and ino's counts
 * (false: no entry). */
void dc_handles_counts(dc_handles *h, uint32_t *count, uint32_t *pinned);
bool dc_handles_entry(dc_handles *h, uint64_t ino, uint32_t *nlookup, uint16_t *opens);

#endif
