/* wire_check.h - what a value taken from the wire must be before anything
 * uses it: the one place for the limits on names, symlink targets, xattrs,
 * owners, modes, device numbers, times and epochs that the MDS, the I/O
 * servers and the clients share, and the checks that apply them. Daemons
 * run them where a request is decoded (mds/req_check.c,
 * ioserver/req_check.c); a refused request gets EINVAL, ENAMETOOLONG,
 * ERANGE or E2BIG with the reason, and the daemon serves on.
 *
 * Each check returns 0 or a negative errno and writes the reason to why
 * (why_len bytes; why may be NULL).
 *
 * Strings: protobuf-c decodes a `string` field into a NUL-terminated C
 * string and says nothing when the wire bytes hold a NUL of their own: the
 * value is silently cut there (a name "a\0b" would be created as "a").
 * wire_check_strings walks the encoded message itself, against its
 * descriptor, and refuses every string field whose bytes hold a NUL, at
 * any depth. Bytes that are not UTF-8 are accepted: names are byte strings
 * on Linux, and nothing in DePFS interprets them.
 *
 * Times: an int64 of nanoseconds since the epoch (1677..2262); every value
 * is a time the mount can show (stat, ls, find) and the clients convert
 * without overflow, so the wire type is the bound. wire_time_ns is the one
 * conversion from a struct timespec, where the range can be exceeded. */
#ifndef DEPFS_WIRE_CHECK_H
#define DEPFS_WIRE_CHECK_H
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <protobuf-c/protobuf-c.h>

#include "layout.h"

#define WIRE_NAME_MAX 255u          /* bytes of one path component (Linux NAME_MAX) */
#define WIRE_SYMLINK_MAX 4095u      /* bytes of a symlink target (PATH_MAX - 1) */
#define WIRE_XATTR_NAME_MAX 255u    /* bytes of an xattr name (Linux XATTR_NAME_MAX) */
#define WIRE_XATTR_VALUE_MAX 65536u /* bytes of an xattr value (Linux XATTR_SIZE_MAX) */
/* the xattr namespaces the MDS stores (Linux's names); others are refused */
#define WIRE_XATTR_USER "user."
#define WIRE_XATTR_TRUSTED "trusted."
#define WIRE_XATTR_SECURITY "security."
/* the names of one inode's xattrs, each with its NUL, in total (Linux
 * XATTR_LIST_MAX): what one listxattr returns, so also what one inode holds */
#define WIRE_XATTR_LIST_MAX 65536u
#define WIRE_MAX_GROUPS 64u         /* supplementary groups a request names */
#define WIRE_PURGE_LIST_MAX 256u    /* purge queue entries in one MDS_PURGE_LIST reply
                                     * (a larger max_entries is cut to this) and in
                                     * one MDS_PURGE_DONE */
#define WIRE_MDS_RELEASES_MAX 64u   /* holds one MDS_RELEASE gives back */
#define WIRE_OWNER_NONE UINT32_MAX  /* (uid_t)-1: "unchanged" to chown, never an owner */
#define WIRE_RDEV_MAX UINT32_MAX    /* a device number on the mount: 12-bit major, 20-bit minor */
#define WIRE_PERM_BITS 07777u       /* permission, set-id and sticky bits of a mode */
#define WIRE_NS_PER_SEC 1000000000L
/* Cluster epochs grow by one per server state change: 2^63 is never
 * reached, and an epoch beyond it could only wedge the servers shown it
 * (every client would stay "behind" for good). */
#define WIRE_EPOCH_MAX ((uint64_t)INT64_MAX)
/* IO_EXTENTS (issue 14): data extents one reply carries at most (the
 * server stops there and says where to go on: IoReply.next_offset), and
 * the most allocation a file's strip files can report (every unit of the
 * largest layout, each strip full). Both bound what the client accepts. */
#define WIRE_DATA_EXTENTS_MAX 1024u
#define WIRE_ALLOC_BYTES_MAX ((uint64_t)LAYOUT_MAX_N * LAYOUT_MAX_STRIP_BYTES)
/* The root directory's inode number: the one inode any caller may name
 * without its handle tag (mds/handles.h); libdepfs's DEPFS_ROOT_INO. */
#define WIRE_ROOT_INO 1u
/* Nesting depth wire_check_strings follows (DePFS messages nest 2 deep). */
#define WIRE_MESSAGE_DEPTH_MAX 8u

/* Every string field of the encoded message buf[0..len) (of descriptor d,
 * nested messages included) free of NUL bytes: 0, or -EINVAL naming the
 * field. Malformed encodings are left to the decoder (0). */
int wire_check_strings(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
                       char *why, size_t why_len);

/* One path component to create or look up: non-empty (EINVAL), no '/'
 * (EINVAL), at most WIRE_NAME_MAX bytes (ENAMETOOLONG). "." and ".." pass:
 * whether they may be used is the namespace's call. */
int wire_check_name(const char *name, const char *what, char *why, size_t why_len);
/* A symlink target: non-empty (ENOENT, as symlink(2)), at most
 * WIRE_SYMLINK_MAX bytes (ENAMETOOLONG). */
int wire_check_symlink_target(const char *target, char *why, size_t why_len);
/* An xattr name: non-empty, at most WIRE_XATTR_NAME_MAX bytes (ERANGE, as
 * Linux). Namespaces (user., trusted., ...) are the MDS's call. */
int wire_check_xattr_name(const char *name, char *why, size_t why_len);
/* A mode: only file type and WIRE_PERM_BITS bits, and a type that exists
 * (or none): EINVAL otherwise. */
int wire_check_mode(uint32_t mode, char *why, size_t why_len);
/* A uid or gid to store (what: "uid"/"gid"): EINVAL for WIRE_OWNER_NONE. */
int wire_check_owner(uint32_t id, const char *what, char *why, size_t why_len);
/* A device number for the mount: EINVAL above WIRE_RDEV_MAX. */
int wire_check_rdev(uint64_t rdev, char *why, size_t why_len);
/* A cluster epoch: ERANGE above WIRE_EPOCH_MAX. */
int wire_check_epoch(uint64_t epoch, char *why, size_t why_len);

/* ts as nanoseconds since the epoch: EINVAL when tv_nsec is not in
 * [0, 1e9), ERANGE when the time is outside what an int64 of nanoseconds
 * holds. */
int wire_time_ns(const struct timespec *ts, int64_t *ns, char *why, size_t why_len);

#endif
