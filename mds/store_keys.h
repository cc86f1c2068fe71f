/* store_keys.h - how the MDS lays its state out in LevelDB: key encoding and
 * the binary inode record. Nothing else in mds/ builds keys by hand.
 *
 * Keys (integers big-endian so that LevelDB's byte order is numeric order):
 *   'I' ino                  -> inode record (mds_inode, encoded below)
 *   'D' parent name          -> dirent: ino u64, seq u64, mode u32
 *   'S' parent seq           -> dirent by readdir cookie: ino u64, mode u32, name
 *   'X' ino name             -> xattr value
 *   'L' ino                  -> symlink target
 *   'P' ino                  -> purge queue entry: queued_at_ns i64, held_until_s u64
 *                               (holds.h; the inode, nlink 0, stays under 'I' until its
 *                               strip files are gone)
 *   'H' ino client           -> hold journal record: until_s u64, flags u8 (holds.h,
 *                               namespace.h "holds journal")
 *   'C' name                 -> counter u64 (next_ino, next_client, inodes, logical_bytes,
 *                               cluster_epoch, purge_files, purge_bytes, holds_until,
 *                               holds_overflow); holds_boot is a string
 *   'V' server_id u32        -> server state u32 (cluster membership)
 * Record values are little-endian. */
#ifndef DEPFS_MDS_STORE_KEYS_H
#define DEPFS_MDS_STORE_KEYS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "layout.h"
#include "wire_check.h"

/* name limits: wire_check.h (WIRE_NAME_MAX, WIRE_XATTR_NAME_MAX) */
#define MDS_KEY_MAX (1u + 8u + WIRE_NAME_MAX + 1u)
#define MDS_KEY_PREFIX_LEN 9u      /* tag + one u64 */

#define MDS_TAG_INODE 'I'
#define MDS_TAG_DIRENT 'D'
#define MDS_TAG_DIRSEQ 'S'
#define MDS_TAG_XATTR 'X'
#define MDS_TAG_SYMLINK 'L'
#define MDS_TAG_COUNTER 'C'
#define MDS_TAG_SERVER 'V'
#define MDS_TAG_PURGE 'P'
#define MDS_TAG_HOLD 'H'

#define MDS_COUNTER_NEXT_INO "next_ino"
#define MDS_COUNTER_NEXT_CLIENT "next_client"
#define MDS_COUNTER_INODES "inodes"
#define MDS_COUNTER_LOGICAL_BYTES "logical_bytes"
#define MDS_COUNTER_CLUSTER_EPOCH "cluster_epoch"
/* absent in stores made before the purge queue: read as 0 */
#define MDS_COUNTER_PURGE_FILES "purge_files"
#define MDS_COUNTER_PURGE_BYTES "purge_bytes"
/* the latest end of a hold given by the MDS that stopped cleanly (holds.h);
 * absent after a crash, 0 in a new namespace; taken away at each start */
#define MDS_COUNTER_HOLDS_UNTIL "holds_until"
/* the kernel boot id (/proc/sys/kernel/random/boot_id) of the run that
 * journals its holds (namespace.h "holds journal"); absent in stores from
 * before the journal */
#define MDS_COUNTER_HOLDS_BOOT "holds_boot"
/* the overflow floor (holds.h) of the run that journals its holds; absent: none */
#define MDS_COUNTER_HOLDS_OVERFLOW "holds_overflow"
/* a random nonzero id the namespace gets at its creation (made at the
 * first start of a store from before it): inode handle tags are bound to
 * it (handles.h), so a namespace made afresh under the same cluster key
 * does not take the tags of an older one */
#define MDS_COUNTER_NAMESPACE_ID "namespace_id"
/* how many times the MDS has started on this store: the high bits of the
 * names epoch (namespace.h mds_ns_names_epoch), so that one run's epochs
 * are above every earlier run's */
#define MDS_COUNTER_NAMES_BOOT "names_boot"
#define MDS_PURGE_VAL_LEN 16u
void mds_purge_val_encode(uint8_t out[MDS_PURGE_VAL_LEN], int64_t queued_at_ns, uint64_t held_until_s);
int mds_purge_val_decode(const uint8_t *buf, size_t len, int64_t *queued_at_ns, uint64_t *held_until_s);
#define MDS_HOLD_VAL_LEN 9u
#define MDS_HOLD_FLAG_WRITER 1u
void mds_hold_val_encode(uint8_t out[MDS_HOLD_VAL_LEN], uint64_t until_s, bool writer);
int mds_hold_val_decode(const uint8_t *buf, size_t len, uint64_t *until_s, bool *writer);

/* One inode as stored. Directories use parent/next_seq/pol_*; regular files
 * use has_layout/lay. */
typedef struct mds_inode {
    uint64_t ino;
    uint32_t mode, nlink, uid, gid;
    uint64_t rdev, size;
    int64_t atime_ns, mtime_ns, ctime_ns;
    uint64_t parent;     /* directories: the ".." inode */
    uint64_t next_seq;   /* directories: next dirent cookie */
    uint32_t pol_n, pol_k, pol_su; /* directories: layout policy (0 = none) */
    bool has_layout;     /* regular files */
    layout lay;
    bool may_have_data;  /* regular files: strip files may exist on the I/O
                          * servers (the size was > 0 once); sticky */
    bool alloc_known;    /* regular files: alloc_bytes is a measurement (false:
                          * a file from before issue 14, never measured) */
    uint64_t alloc_bytes; /* the strip files' allocation (proto Attr.alloc_bytes) */
    uint64_t data_version; /* regular files: bumped at every write open, extend and
                            * size change (proto Attr.data_version; 0 in records
                            * from before `depfs migrate`) */
    bool migrated_away;   /* regular files: replaced at its name by a copy
                           * (MDS_MIGRATE_SWAP): held handles keep using it, a
                           * new open is told to look the name up again */
    uint64_t name_gen;    /* bumped whenever a name of it goes or moves (unlink,
                           * rename of it or over it), so an open of a regular
                           * file through a name looked up before is told to
                           * look it up again (proto Attr.name_gen; 0 in
                           * records from before) */
    uint64_t moved_epoch; /* directories: the names epoch its last rename made
                           * (namespace.h mds_ns_names_epoch; 0: never moved) */
    uint64_t moved_by;    /* directories, with moved_epoch: the client that moved it */
} mds_inode;

/* Version 1 records may end after the servers (written before the flags
 * word existed: decoded with may_have_data = has_layout) or carry a u32
 * flags word after them; with MDS_INODE_FLAG_ALLOC_KNOWN a u64 alloc_bytes
 * follows it (records from before issue 14 have neither: unknown). */
#define MDS_INODE_REC_VERSION 1u
#define MDS_INODE_FLAG_MAY_HAVE_DATA 1u
#define MDS_INODE_FLAG_ALLOC_KNOWN 2u
/* with MDS_INODE_FLAG_DATA_VERSION a u64 data_version follows (after
 * alloc_bytes when both are there); records without it read as 0 */
#define MDS_INODE_FLAG_DATA_VERSION 4u
#define MDS_INODE_FLAG_MIGRATED_AWAY 8u
/* with MDS_INODE_FLAG_NAME_GEN a u64 name_gen follows (last); records
 * without it read as 0 */
#define MDS_INODE_FLAG_NAME_GEN 16u
/* directories: with MDS_INODE_FLAG_MOVED a u64 moved_epoch and a u64
 * moved_by follow (after name_gen); records without them: never moved */
#define MDS_INODE_FLAG_MOVED 32u
#define MDS_INODE_FLAGS_KNOWN                                                                 \
    (MDS_INODE_FLAG_MAY_HAVE_DATA | MDS_INODE_FLAG_ALLOC_KNOWN | MDS_INODE_FLAG_DATA_VERSION | \
     MDS_INODE_FLAG_MIGRATED_AWAY | MDS_INODE_FLAG_NAME_GEN | MDS_INODE_FLAG_MOVED)
#define MDS_INODE_REC_MAX (1u + 4u * 4u + 8u * 2u + 8u * 3u + 8u * 2u + 4u * 3u + 4u * 5u + 4u * LAYOUT_MAX_N + 4u + 8u + 8u + 8u + 8u + 8u)

size_t mds_inode_encode(const mds_inode *in, uint8_t out[MDS_INODE_REC_MAX]);
/* 0, or -EIO for a record that is short, too long or of an unknown version. */
int mds_inode_decode(uint64_t ino, const uint8_t *buf, size_t len, mds_inode *out);

/* Dirent values. */
#define MDS_DIRENT_VAL_LEN 20u
#define MDS_DIRSEQ_VAL_MAX (12u + WIRE_NAME_MAX)
void mds_dirent_val_encode(uint8_t out[MDS_DIRENT_VAL_LEN], uint64_t ino, uint64_t seq, uint32_t mode);
int mds_dirent_val_decode(const uint8_t *buf, size_t len, uint64_t *ino, uint64_t *seq, uint32_t *mode);
size_t mds_dirseq_val_encode(uint8_t out[MDS_DIRSEQ_VAL_MAX], uint64_t ino, uint32_t mode,
                             const char *name, size_t name_len);
/* *name points into buf (not NUL-terminated). */
int mds_dirseq_val_decode(const uint8_t *buf, size_t len, uint64_t *ino, uint32_t *mode,
                          const char **name, size_t *name_len);

/* Keys: each returns the key length; out must hold MDS_KEY_MAX bytes. */
size_t mds_key_inode(uint8_t *out, uint64_t ino);
size_t mds_key_dirent(uint8_t *out, uint64_t parent, const char *name, size_t name_len);
size_t mds_key_dirent_prefix(uint8_t *out, uint64_t parent);
size_t mds_key_dirseq(uint8_t *out, uint64_t parent, uint64_t seq);
size_t mds_key_dirseq_prefix(uint8_t *out, uint64_t parent);
/* The seq of a dirseq key (klen must be MDS_KEY_PREFIX_LEN + 8). */
uint64_t mds_key_dirseq_seq(const uint8_t *key);
size_t mds_key_xattr(uint8_t *out, uint64_t ino, const char *name, size_t name_len);
size_t mds_key_xattr_prefix(uint8_t *out, uint64_t ino);
size_t mds_key_symlink(uint8_t *out, uint64_t ino);
size_t mds_key_counter(uint8_t *out, const char *name);
size_t mds_key_server(uint8_t *out, uint32_t id);
size_t mds_key_purge(uint8_t *out, uint64_t ino);
size_t mds_key_purge_prefix(uint8_t *out);
/* The ino of a purge key (klen must be MDS_KEY_PREFIX_LEN). */
uint64_t mds_key_purge_ino(const uint8_t *key);
#define MDS_KEY_HOLD_LEN (MDS_KEY_PREFIX_LEN + 8u)
size_t mds_key_hold(uint8_t *out, uint64_t ino, uint64_t client);
size_t mds_key_hold_prefix(uint8_t *out);
/* The ino and client of a hold key; -EIO unless klen is MDS_KEY_HOLD_LEN. */
int mds_key_hold_decode(const uint8_t *key, size_t klen, uint64_t *ino, uint64_t *client);

void mds_put_u64le(uint8_t *p, uint64_t v);
uint64_t mds_get_u64le(const uint8_t *p);
void mds_put_u32le(uint8_t *p, uint32_t v);
uint32_t mds_get_u32le(const uint8_t *p);

#endif
