/* core_statahead.h - statahead: the lookups of a caller that walks a
 * directory name after name (ls -l, find, an mdtest stat phase) answered
 * from its entries fetched a page at a time with their attributes (one
 * MDS_READDIR with_attrs per page: Lustre's statahead, NFS's READDIRPLUS)
 * instead of one MDS round trip each.
 *
 * The rules that keep an answer as true as the MDS's own would be:
 *  - a page answers only while younger than the mount's statahead_ms (the
 *    caller gets the age and shortens its own cache time by it);
 *  - every call of this client that may change something drops, before it
 *    returns, what the call names: the names it names in their
 *    directories, and every entry of the inodes it names or its reply
 *    does (the directories changed, the file changed, renamed, linked or
 *    removed, and the inode a dropped name had). An op not known here
 *    drops everything. A page fetched across a change has the changes
 *    made meanwhile dropped from it too (the change log), or is not kept
 *    when more came than the log holds;
 *  - an inode the MDS says is gone, unlinked or replaced at its name
 *    (ESTALE: another client's migrate gave the name to a copy) is
 *    dropped, so the re-lookup that follows reaches the MDS;
 *  - a regular file open here gets its size and mtime from this client's
 *    own writes (dc_attr_layout_to_stat), as every stat does;
 *  - names never answered from here are asked of the MDS as before: no
 *    negative answers are given;
 *  - once any reply shows a names epoch newer than a page's (a directory
 *    was renamed somewhere: mds/namespace.h mds_ns_names_epoch), the page
 *    answers nothing: it could give back a moved directory under its old
 *    name, and the requests through it would then carry this client's
 *    newer epoch of that directory and pass (core_handles.h).
 * Only for a caller that checks search permission on the directory itself
 * before each lookup (the FUSE kernel with default_permissions): the page
 * is fetched with the credentials of whoever's lookup started it, and the
 * MDS gives attributes only when they may search the directory. */
#ifndef DEPFS_CORE_STATAHEAD_H
#define DEPFS_CORE_STATAHEAD_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "depfs.pb-c.h"
#include "wire_check.h"

#define DC_SA_DIRS 4u              /* directories kept at once (LRU) */
#define DC_SA_PAGE_ENTRIES 1024u   /* asked per page (the MDS may give fewer) */
#define DC_SA_MAX_ENTRIES 8192u    /* kept per directory; past it, start over
                                    * with the next page, unless what is kept
                                    * still answers most names */
#define DC_SA_BUCKETS 2048u        /* hash buckets per directory (each chain) */
#define DC_SA_TRIGGER 4u           /* names the MDS found that were not kept,
                                    * since the last page: then fetch one */
#define DC_SA_TRIGGER_MAX DC_SA_PAGE_ENTRIES /* ... at most, while pages do not
                                    * pay (a directory looked up at random):
                                    * the trigger doubles each time the
                                    * pages answered fewer names than were
                                    * missed, back to DC_SA_TRIGGER when they
                                    * answer more */
#define DC_SA_LOG 256u              /* drops remembered for pages in flight */
#define DC_SA_NONE UINT32_MAX

typedef struct dc_sa_entry {
    char *name;
    uint32_t hash;
    uint32_t next;         /* name hash chain: index into ents, or DC_SA_NONE */
    uint32_t ino_next;     /* inode hash chain */
    uint64_t fetched_ms;   /* dc_now_ms() of the page's request */
    bool gone;             /* dropped by a change of its inode */
    Depfs__Attr attr;      /* by value: scalars only */
    bool has_shape;
    uint32_t n, k, su;     /* a regular file's layout shape */
    bool no_xattrs;        /* the MDS said it has no stored xattrs */
} dc_sa_entry;

typedef struct dc_sa_dir {
    uint64_t ino;          /* 0: a free slot */
    uint64_t used_ms;      /* least recently used goes first */
    unsigned misses, hits; /* since the last page was asked for */
    unsigned trigger;      /* misses that ask for the next (DC_SA_TRIGGER..) */
    bool filling;          /* a page is being fetched */
    bool eof;              /* the last page reached the directory's end */
    uint64_t next_cookie;  /* where the next page starts */
    uint64_t started_ms;   /* when the first page kept was asked for */
    uint32_t n, cap;
    dc_sa_entry *ents;
    uint32_t *by_name;     /* DC_SA_BUCKETS chain heads by name hash, and */
    uint32_t *by_ino;      /* by inode: one allocation, at the first page */
} dc_sa_dir;

/* One drop a change made: a name in a directory, an inode, or all. */
typedef enum { DC_SA_DROP_NAME, DC_SA_DROP_INO, DC_SA_DROP_ALL } dc_sa_drop_kind;
typedef struct dc_sa_drop {
    uint64_t gen;          /* the change's */
    dc_sa_drop_kind kind;
    uint64_t ino;          /* NAME: the directory; INO: the inode */
    char name[WIRE_NAME_MAX + 1];
} dc_sa_drop;

typedef struct dc_statahead {
    pthread_mutex_t lock;
    unsigned max_age_ms;   /* 0: off */
    uint64_t gen;          /* bumped by every change */
    _Atomic uint64_t names_epoch; /* the newest Attr.names_epoch of any reply
                            * (raised under lock): the pages kept are of it */
    dc_sa_drop log[DC_SA_LOG]; /* the drops of the last changes, by gen */
    uint32_t log_next;
    uint64_t pages, answered; /* what it did (tests, status) */
    uint64_t xattrs_answered;
    dc_sa_dir dirs[DC_SA_DIRS];
} dc_statahead;

struct depfs;
void dc_sa_init(dc_statahead *sa, unsigned max_age_ms);
void dc_sa_destroy(dc_statahead *sa);
/* A lookup of name in parent: 0 with *st, the attributes as the MDS sent
 * them (*attr: the caller counts the lookup's handle with them) and how
 * old they are (*age_ms) when kept and young enough; -ENOENT when not (ask
 * the MDS). */
int dc_sa_lookup(struct depfs *fs, uint64_t parent, const char *name, struct stat *st,
                 Depfs__Attr *attr, unsigned *age_ms);
/* Whether a kept entry young enough says inode ino has no stored xattrs
 * (a getxattr of security.* or trusted.* then finds none; ls -l asks for
 * security.selinux of every name it lists). */
bool dc_sa_no_xattrs(struct depfs *fs, uint64_t ino);
/* The MDS found a name of parent that was not kept: counts towards a
 * page. true when the caller is to fetch one now (DC_SA_TRIGGER such names
 * since the last page, none being fetched): READDIR with_attrs
 * from *cookie, its reply then given to dc_sa_keep with *gen and the time
 * it was asked. */
bool dc_sa_missed(struct depfs *fs, uint64_t parent, uint64_t *cookie, uint64_t *gen);
/* The page dc_sa_missed asked for (rep NULL: it failed): kept, less what
 * the changes since gen dropped. */
void dc_sa_keep(struct depfs *fs, uint64_t parent, uint64_t gen, uint64_t asked_ms,
                const Depfs__MdsReply *rep);
/* Where the change log stands: taken before a page the caller fetches on
 * its own (dc_sa_offer). */
uint64_t dc_sa_gen(struct depfs *fs);
/* A page of parent from cookie `from` with its entries' attributes that
 * the caller fetched for itself (depfs_readdir_plus, FUSE's READDIRPLUS),
 * asked at asked_ms with the changes up to gen seen: kept as statahead's
 * when it starts the directory's listing (from 0: what is kept starts
 * over) or continues the pages kept, young, and none is being fetched; so
 * what the caller asks next of those names (ls -l's getxattr) is answered
 * here as after lookups. Else nothing. */
void dc_sa_offer(struct depfs *fs, uint64_t parent, uint64_t from, uint64_t gen, uint64_t asked_ms,
                 const Depfs__MdsReply *rep);
/* After every MDS call of this client (core_mds.c): drops what op may
 * have changed (see above). rep NULL: the call failed in transit. */
void dc_sa_after_call(struct depfs *fs, Depfs__MdsOp op, const Depfs__MdsRequest *req,
                      const Depfs__MdsReply *rep);

#endif
