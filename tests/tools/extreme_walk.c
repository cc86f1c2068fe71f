/* extreme_walk.c - sends every MDS and I/O server request with extreme
 * values in every field, driven by the protobuf-c descriptors so a field
 * added to proto/depfs.proto is walked without an edit here.
 *
 *   extreme_walk --config PATH [--io ID]... [--verbose]
 *
 * For every op (every value of MdsOp and IoOp) it starts from a good
 * request of that op (the baselines below) and changes one field at a
 * time, nested messages included: numbers take 0, 1, max-1, max, 2^31,
 * 2^32, 2^63, 2^64-1 as the field's type allows, plus the edges of the
 * bounds DePFS documents for that field (edge_values); strings take "",
 * an embedded NUL, the limit, the limit + 1, bytes that are not UTF-8,
 * "/" and ".."; repeated fields also take their count limit and one more.
 * Every request must get a reply that decodes, err 0 or a positive errno
 * with a message; values listed in must_refuse must be refused; after
 * each op and field a good request must still be served, and an I/O
 * server must still be UP. What the walk makes on the MDS stays (names in
 * /extreme-walk and the root, for the caller to stat, list and remove
 * through the mount); what it makes on the I/O servers (strip files of its
 * own file ids, locks, dirty records, states) it removes as it goes.
 *
 * A few values are not sent because they change the cluster on purpose,
 * each said in `skip_value`: an epoch above the server's (depfs-recovery's
 * command, permanent by design).
 *
 * Prints one line per op and every failure; exit 0 when everything held,
 * 1 otherwise, 2 on a usage or setup error. Every loop is bounded by the
 * descriptors and the value tables; every call by the request timeout. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "config.h"
#include "daemon.h"
#include "depfs.pb-c.h"
#include "ioserver/handlers.h"
#include "ioserver/req_check.h"
#include "layout.h"
#include "log.h"
#include "mds/namespace.h"
#include "rpc.h"
#include "wire_check.h"

#define WALK_DIR "extreme-walk"        /* made under the root for the walk */
#define WALK_FILE "f"
#define WALK_LINK "l"
#define WALK_FID 0x7e57000000000001ull /* the walk's own strip files */
#define BAD_SERVER_ID 4242u            /* no server of a test cluster has it */
#define CALL_TIMEOUT_MS 20000
#define MAX_IO_SERVERS 8
#define MAX_BASE_FIELDS 12
#define PATH_BYTES 96
#define LABEL_BYTES 48
#define NAME_BYTES 64
#define ERRNO_MAX 4095
#define COUNT_LIMIT_DEFAULT 1024u
#define WRITE_UNIT 65536u
#define LOCK_OWNER_OP 1u

/* ---------------------------------------------------------------- arena */
/* Every allocation of one request, freed together after it is sent. */
typedef struct arena {
    void **v;
    size_t n, cap;
} arena;

static void *arena_alloc(arena *a, size_t bytes)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        void **v = realloc(a->v, cap * sizeof(*v));
        if (!v)
            abort();
        a->v = v;
        a->cap = cap;
    }
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p)
        abort();
    a->v[a->n++] = p;
    return p;
}

static void arena_free(arena *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
    memset(a, 0, sizeof(*a));
}

/* --------------------------------------------------------------- values */
typedef enum { V_NUM, V_BYTES, V_COUNT } vkind;

/* One value for one field: a number (any width, as bits), bytes (strings
 * and bytes fields), or a count of elements (repeated fields). */
typedef struct wvalue {
    vkind kind;
    uint64_t num;
    const uint8_t *bytes;
    size_t len;
    char label[LABEL_BYTES];
} wvalue;

static wvalue num_value(uint64_t v, const char *label)
{
    wvalue w = { .kind = V_NUM, .num = v };
    snprintf(w.label, sizeof(w.label), "%s", label);
    return w;
}

#define P2(n) (1ull << (n))
static const struct {
    uint64_t v;
    const char *label;
} unsigned_values[] = {
    { 0, "0" }, { 1, "1" }, { P2(31), "2^31" }, { P2(32), "2^32" }, { P2(63), "2^63" },
    { UINT64_MAX - 1, "2^64-2" }, { UINT64_MAX, "2^64-1" },
}, u32_values[] = {
    { 0, "0" }, { 1, "1" }, { P2(31), "2^31" }, { UINT32_MAX - 1, "2^32-2" },
    { UINT32_MAX, "2^32-1" },
}, i64_values[] = {
    { 0, "0" }, { 1, "1" }, { P2(31), "2^31" }, { P2(32), "2^32" },
    { (uint64_t)INT64_MAX - 1, "2^63-2" }, { (uint64_t)INT64_MAX, "2^63-1" },
    { P2(63), "-2^63" }, { UINT64_MAX, "-1" },
}, i32_values[] = {
    { 0, "0" }, { 1, "1" }, { (uint64_t)INT32_MAX - 1, "2^31-2" }, { (uint64_t)INT32_MAX, "2^31-1" },
    { (uint64_t)(uint32_t)INT32_MIN, "-2^31" }, { UINT32_MAX, "-1" },
}, bool_values[] = { { 0, "false" }, { 1, "true" } };

/* Values at the edges of DePFS's own bounds, by field name (any message). */
static const struct {
    const char *field;
    uint64_t v;
    const char *label;
} edge_values[] = {
    { "offset", IOS_MAX_LOCAL_BYTES - 16, "2^50-16" },
    { "offset", (1ull << 44) - 16, "2^44-16 (ext4's last bytes)" },
    { "length", (1ull << 20), "1MiB" },
    { "local_size", IOS_MAX_LOCAL_BYTES, "2^50" },
    { "local_size", 1ull << 44, "2^44 (past ext4)" },
    { "first_stripe", IOS_MAX_STRIPES - 1, "last stripe" },
    { "first_stripe", IOS_MAX_STRIPES, "past the last stripe" },
    { "stripe_count", UINT64_MAX / 4, "2^62 (to the end)" },
    { "stripe_unit", LAYOUT_MIN_SU, "min su" },
    { "stripe_unit", LAYOUT_MAX_SU, "max su" },
    { "stripe_unit", LAYOUT_MAX_SU + LAYOUT_MIN_SU, "max su + 512" },
    { "want_su", LAYOUT_MAX_SU + LAYOUT_MIN_SU, "max su + 512" },
    { "size", LAYOUT_MAX_STRIP_BYTES * 6, "6 x 2^50" },
    { "size", LAYOUT_MAX_STRIP_BYTES * LAYOUT_MAX_N + 1, "32 x 2^50 + 1" },
    { "cluster_epoch", WIRE_EPOCH_MAX, "2^63-1" },
    { "drain_ms", IOS_MAX_DRAIN_MS + 1, "max drain + 1" },
    { "rdev", WIRE_RDEV_MAX, "2^32-1" },
    { "max_entries", MDS_READDIR_MAX + 1, "max + 1" },
    { "cookie", UINT64_MAX - 2, "2^64-3" },
    { "alloc_bytes", WIRE_ALLOC_BYTES_MAX, "32 x 2^50" },
    { "alloc_bytes", WIRE_ALLOC_BYTES_MAX + 1, "32 x 2^50 + 1" },
};

/* String and bytes limits by field name; repeated counts likewise. */
static const struct {
    const char *field;
    unsigned max;
} string_limits[] = {
    { "name", WIRE_NAME_MAX }, { "new_name", WIRE_NAME_MAX }, { "target", WIRE_SYMLINK_MAX },
    { "xattr_name", WIRE_XATTR_NAME_MAX }, { "xattr_value", WIRE_XATTR_VALUE_MAX },
}, count_limits[] = {
    { "extents", IOS_MAX_EXTENTS }, { "down_servers", CONFIG_MAX_IOSERVERS },
    { "groups", WIRE_MAX_GROUPS },
};

static unsigned limit_of(const char *field, bool count)
{
    size_t n = count ? sizeof(count_limits) / sizeof(count_limits[0])
                     : sizeof(string_limits) / sizeof(string_limits[0]);
    for (size_t i = 0; i < n; i++) {
        const char *f = count ? count_limits[i].field : string_limits[i].field;
        if (!strcmp(f, field))
            return count ? count_limits[i].max : string_limits[i].max;
    }
    return COUNT_LIMIT_DEFAULT;
}

/* Values a request must be refused for: (op, path, value label); op 0:
 * every op of that server kind; path "*": every string field. */
typedef struct refusal {
    bool io;
    uint16_t op;
    const char *path;
    const char *label;
} refusal;
#define ANY_MDS false, 0
#define ANY_IO true, 0
#define R_SETATTR false, DEPFS__MDS_OP__MDS_SETATTR
static const refusal must_refuse[] = {
    { ANY_MDS, "*", "embedded NUL" },
    { ANY_MDS, "mode", "2^31" }, { ANY_MDS, "mode", "2^32-1" },
    { ANY_MDS, "uid", "2^32-1" }, { ANY_MDS, "gid", "2^32-1" },
    { ANY_MDS, "rdev", "2^32" }, { ANY_MDS, "rdev", "2^63" }, { ANY_MDS, "rdev", "2^64-1" },
    { ANY_MDS, "set_mask", "2^31" }, { ANY_MDS, "set_mask", "2^32-1" },
    { R_SETATTR, "attr.mode", "2^31" }, { R_SETATTR, "attr.uid", "2^32-1" },
    { R_SETATTR, "attr.gid", "2^32-1" }, { R_SETATTR, "attr.size", "2^63" },
    { R_SETATTR, "attr.size", "2^64-1" },
    { false, DEPFS__MDS_OP__MDS_EXTEND, "size", "2^63" },
    { false, DEPFS__MDS_OP__MDS_EXTEND, "size", "2^64-1" },
    { ANY_MDS, "alloc_bytes", "32 x 2^50 + 1" }, { ANY_MDS, "alloc_bytes", "2^63" },
    { ANY_MDS, "alloc_bytes", "2^64-1" },
    { ANY_IO, "cluster_epoch", "2^63" }, { ANY_IO, "cluster_epoch", "2^64-1" },
    { ANY_IO, "stripe_unit", "1" }, { ANY_IO, "stripe_unit", "2^32-1" },
    { ANY_IO, "extents.offset", "2^63" }, { ANY_IO, "extents.offset", "2^64-1" },
    { ANY_IO, "extents.offset", "2^50-16" },
    { ANY_IO, "lock.first_stripe", "past the last stripe" },
    { true, DEPFS__IO_OP__IO_TRUNCATE, "local_size", "2^63" },
    { true, DEPFS__IO_OP__IO_TRUNCATE, "local_size", "2^64-1" },
    { true, DEPFS__IO_OP__IO_READ, "file_id", "0" },
    { true, DEPFS__IO_OP__IO_WRITE, "file_id", "0" },
    { true, DEPFS__IO_OP__IO_EXTENTS, "file_id", "0" },
    { true, DEPFS__IO_OP__IO_EXTENTS, "extents.length", "0" },
    { true, DEPFS__IO_OP__IO_EXTENTS, "extents.length", "1" },
    { true, DEPFS__IO_OP__IO_EXTENTS, "extents.offset", "1" },
};

/* ------------------------------------------------------------ baselines */
/* A good request of one op: "field=value" items; a dotted field sets a
 * field of a nested message (the first element of a repeated one). Values
 * are numbers (0x.., 0...) or, after "s:", a string; tokens: $DIR, $FILE,
 * $LINK (the walk's inodes), $FID (its strip file id), $OWNER (its client
 * id), $NOW (ns), $BADSRV (no server), $SRV0 (a server of the cluster);
 * "$N" inside a string becomes a number unique to the request. `prep` is
 * sent first (same tokens): what the request needs to exist. */
typedef struct baseline {
    bool io;
    uint16_t op;
    const char *set[MAX_BASE_FIELDS];
    uint16_t prep_op;
    const char *prep[MAX_BASE_FIELDS];
    uint32_t bulk;   /* WRITE: bytes of bulk (the extents' sum) */
} baseline;

#define MDS(o) .io = false, .op = DEPFS__MDS_OP__MDS_##o
#define IO(o) .io = true, .op = DEPFS__IO_OP__IO_##o
#define SETATTR_MASK "set_mask=0x3f"        /* MODE UID GID SIZE ATIME MTIME */
#define LOCK0 "lock.first_stripe=0", "lock.stripe_count=1", "lock.owner_client=$OWNER", \
              "lock.owner_op=1"

static const baseline baselines[] = {
    { MDS(REGISTER) },
    { MDS(LOOKUP), .set = { "parent=$DIR", "name=s:" WALK_FILE } },
    { MDS(GETATTR), .set = { "ino=$FILE" } },
    { MDS(SETATTR), .set = { "ino=$FILE", SETATTR_MASK, "attr.ino=$FILE", "attr.mode=0100644",
                             "attr.atime_ns=$NOW", "attr.mtime_ns=$NOW", "attr.ctime_ns=$NOW" } },
    { MDS(CREATE), .set = { "parent=$DIR", "name=s:c$N", "mode=0100644", "flags=0200" } },
    { MDS(CREATE), .set = { "parent=$DIR", "name=s:c$N", "mode=0100644", "want_n=4", "want_k=2",
                            "want_su=65536" } },
    { MDS(MKNOD), .set = { "parent=$DIR", "name=s:p$N", "mode=010644" } },
    { MDS(MKNOD), .set = { "parent=$DIR", "name=s:d$N", "mode=020600", "rdev=0x801" } },
    { MDS(MKDIR), .set = { "parent=$DIR", "name=s:m$N", "mode=040755" } },
    { MDS(UNLINK), .set = { "parent=$DIR", "name=s:u$N" },
      .prep_op = DEPFS__MDS_OP__MDS_CREATE, .prep = { "parent=$DIR", "name=s:u$N", "mode=0100644" } },
    { MDS(RMDIR), .set = { "parent=$DIR", "name=s:r$N" },
      .prep_op = DEPFS__MDS_OP__MDS_MKDIR, .prep = { "parent=$DIR", "name=s:r$N", "mode=040755" } },
    { MDS(RENAME), .set = { "parent=$DIR", "name=s:n$N", "new_parent=$DIR", "new_name=s:n$N-to" },
      .prep_op = DEPFS__MDS_OP__MDS_CREATE, .prep = { "parent=$DIR", "name=s:n$N", "mode=0100644" } },
    { MDS(READDIR), .set = { "ino=$DIR", "cookie=0", "max_entries=16" } },
    { MDS(SYMLINK), .set = { "parent=$DIR", "name=s:s$N", "target=s:" WALK_FILE } },
    { MDS(READLINK), .set = { "ino=$LINK" } },
    { MDS(LINK), .set = { "ino=$FILE", "new_parent=$DIR", "new_name=s:h$N" } },
    { MDS(STATFS) },
    { MDS(SETXATTR), .set = { "ino=$FILE", "xattr_name=s:user.xw", "xattr_value=s:v", "flags=0" } },
    { MDS(GETXATTR), .set = { "ino=$FILE", "xattr_name=s:user.xw" } },
    { MDS(LISTXATTR), .set = { "ino=$FILE" } },
    { MDS(REMOVEXATTR), .set = { "ino=$FILE", "xattr_name=s:user.x$N" },
      .prep_op = DEPFS__MDS_OP__MDS_SETXATTR,
      .prep = { "ino=$FILE", "xattr_name=s:user.x$N", "xattr_value=s:v" } },
    { MDS(EXTEND), .set = { "ino=$FILE", "size=0", "mtime_ns=$NOW" } },
    { MDS(OPEN), .set = { "ino=$FILE", "flags=02" } }, /* O_RDWR */
    { MDS(CLUSTER) },
    { MDS(SET_SERVER_STATE), .set = { "server_id=$BADSRV", "rebuild_rate_bps=0" } },
    { MDS(RELEASE), .set = { "ino=$FILE", "client_id=1" } },
    { MDS(PURGE_LIST), .set = { "cookie=0", "max_entries=16" } },
    { MDS(PURGE_DONE), .set = { "purge_inos=$FILE" } }, /* not queued: nothing dropped */
    /* the "copy" is the walk's symlink (not an unlinked queued file): refused,
     * whatever one field becomes, and the walk's file keeps its inode */
    { MDS(MIGRATE_SWAP), .set = { "parent=$DIR", "name=s:" WALK_FILE, "ino=$FILE",
                                  "migrate_ino=$LINK", "data_version=1" } },
    { IO(READ), .set = { "file_id=$FID", "extents.offset=0", "extents.length=16" } },
    { IO(WRITE), .set = { "file_id=$FID", "extents.offset=0", "extents.length=16",
                          "stripe_unit=65536" }, .bulk = 16 },
    { IO(WRITE), .set = { "file_id=$FID", "extents.offset=0", "extents.length=16",
                          "stripe_unit=65536", "unlock=1", LOCK0 }, .bulk = 16,
      .prep_op = DEPFS__IO_OP__IO_LOCK, .prep = { "file_id=$FID", LOCK0 } },
    { IO(LOCK), .set = { "file_id=$FID", LOCK0 } },
    { IO(UNLOCK), .set = { "file_id=$FID", LOCK0 } },
    { IO(TRUNCATE), .set = { "file_id=$FID", "local_size=4096" } },
    { IO(REMOVE), .set = { "file_id=$FID" } },
    { IO(FSYNC), .set = { "file_id=$FID" } },
    { IO(STAT), .set = { "file_id=$FID" } },
    { IO(HEARTBEAT), .set = { "file_id=0" } },
    { IO(DIRTY), .set = { "file_id=0", "local_size=$SRV0" } },
    { IO(SET_STATE), .set = { "file_id=0", "server_state=0" } },
    { IO(EXTENTS), .set = { "file_id=$FID", "extents.offset=0", "extents.length=65536",
                            "stripe_unit=65536" } },
};

/* ----------------------------------------------------------------- state */
typedef struct walk {
    depfs_config cfg;
    rpc_auth_creds creds; /* the cluster key: the walk is a peer that got in */
    rpc_conn *mds;
    rpc_conn *io[MAX_IO_SERVERS];
    uint32_t io_id[MAX_IO_SERVERS];
    unsigned n_io;
    uint64_t dir, file, link, owner;
    uint64_t serial;          /* $N */
    uint8_t *rbuf;            /* reply bulk of READs */
    size_t rbuf_len;
    uint8_t *wbuf;            /* WRITE bulk (zeros) */
    size_t wbuf_len;
    bool verbose;
    unsigned failures;
    /* per op, for the summary line */
    unsigned sent, served, refused, skipped;
} walk;

/* Which I/O server a request goes to (set while walking one). */
static unsigned io_cur;

__attribute__((format(printf, 2, 3)))
static void failure(walk *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    w->failures++;
}

static const char *op_name(bool io, uint16_t op)
{
    const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
        io ? &depfs__io_op__descriptor : &depfs__mds_op__descriptor, op);
    return v ? v->name : "?";
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * WIRE_NS_PER_SEC + ts.tv_nsec;
}

/* ------------------------------------------------------ building fields */
/* A field is set through the descriptor: its value at `offset`, its
 * presence (proto2 optional scalars) or count (repeated) at
 * `quantifier_offset`. */
static void *at(void *msg, unsigned off)
{
    return (char *)msg + off;
}

static ProtobufCMessage *new_message(arena *a, const ProtobufCMessageDescriptor *d)
{
    ProtobufCMessage *m = arena_alloc(a, d->sizeof_message);
    d->message_init(m);
    return m;
}

static size_t scalar_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_ENUM:
        return 4;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return 8;
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    default:
        return 0;
    }
}

static void store_scalar(void *p, ProtobufCType t, uint64_t v)
{
    size_t sz = scalar_size(t);
    if (t == PROTOBUF_C_TYPE_BOOL) {
        protobuf_c_boolean b = v != 0;
        memcpy(p, &b, sizeof(b));
    } else if (sz == 4) {
        uint32_t x = (uint32_t)v;
        memcpy(p, &x, sizeof(x));
    } else if (sz == 8) {
        memcpy(p, &v, sizeof(v));
    }
}

static void mark_present(void *msg, const ProtobufCFieldDescriptor *f)
{
    if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset)
        *(protobuf_c_boolean *)at(msg, f->quantifier_offset) = 1;
}

/* The nested message of f in msg (made when absent; element 0 of a
 * repeated one). */
static ProtobufCMessage *sub_message(arena *a, void *msg, const ProtobufCFieldDescriptor *f)
{
    const ProtobufCMessageDescriptor *d = f->descriptor;
    if (f->label != PROTOBUF_C_LABEL_REPEATED) {
        ProtobufCMessage **slot = at(msg, f->offset);
        if (!*slot)
            *slot = new_message(a, d);
        return *slot;
    }
    size_t *n = at(msg, f->quantifier_offset);
    ProtobufCMessage ***arr = at(msg, f->offset);
    if (*n == 0) {
        *arr = arena_alloc(a, sizeof(**arr));
        (*arr)[0] = new_message(a, d);
        *n = 1;
    }
    return (*arr)[0];
}

/* Repeated f gets `count` elements: copies of element 0 (made when absent)
 * for messages, `fill` for numbers. */
static void set_count(arena *a, void *msg, const ProtobufCFieldDescriptor *f, size_t count,
                      uint64_t fill)
{
    size_t *n = at(msg, f->quantifier_offset);
    if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
        ProtobufCMessage *first = sub_message(a, msg, f);
        ProtobufCMessage **arr = arena_alloc(a, count * sizeof(*arr));
        for (size_t i = 0; i < count; i++)
            arr[i] = first;
        *(ProtobufCMessage ***)at(msg, f->offset) = arr;
    } else {
        size_t sz = scalar_size(f->type);
        uint8_t *arr = arena_alloc(a, count * sz);
        for (size_t i = 0; i < count; i++)
            store_scalar(arr + i * sz, f->type, fill);
        *(void **)at(msg, f->offset) = arr;
    }
    *n = count;
}

/* Raw string fields appended after the packed message: protobuf-c cannot
 * pack a string holding a NUL. Only top-level fields (requests have no
 * nested strings). */
typedef struct raw_field {
    unsigned id;
    const uint8_t *bytes;
    size_t len;
} raw_field;

typedef struct build {
    arena a;
    ProtobufCMessage *msg;
    bool raw_strings; /* the walked value: top-level strings go raw */
    raw_field raw;
    bool has_raw;
} build;

/* Sets leaf f of msg to v. */
static void set_leaf(build *b, void *msg, const ProtobufCFieldDescriptor *f, const wvalue *v,
                     bool top)
{
    if (v->kind == V_COUNT) {
        set_count(&b->a, msg, f, (size_t)v->num, 0);
        return;
    }
    if (f->type == PROTOBUF_C_TYPE_STRING) {
        char **slot = at(msg, f->offset);
        if (top && b->raw_strings) {
            *slot = NULL; /* sent raw, after the packed rest */
            b->raw = (raw_field){ .id = f->id, .bytes = v->bytes, .len = v->len };
            b->has_raw = true;
            return;
        }
        char *s = arena_alloc(&b->a, v->len + 1);
        memcpy(s, v->bytes, v->len);
        *slot = s;
        return;
    }
    if (f->type == PROTOBUF_C_TYPE_BYTES) {
        ProtobufCBinaryData *bd = at(msg, f->offset);
        uint8_t *copy = arena_alloc(&b->a, v->len);
        memcpy(copy, v->bytes, v->len);
        bd->data = copy;
        bd->len = v->len;
        mark_present(msg, f);
        return;
    }
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
        set_count(&b->a, msg, f, 1, v->num);
        return;
    }
    store_scalar(at(msg, f->offset), f->type, v->num);
    mark_present(msg, f);
}

/* Sets the field at dotted path of msg (of descriptor d) to v. */
static int set_path(build *b, void *msg, const ProtobufCMessageDescriptor *d, const char *path,
                    const wvalue *v, bool top)
{
    char head[PATH_BYTES];
    const char *dot = strchr(path, '.');
    size_t hl = dot ? (size_t)(dot - path) : strlen(path);
    if (hl >= sizeof(head))
        return -EINVAL;
    memcpy(head, path, hl);
    head[hl] = '\0';
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, head);
    if (!f)
        return -ENOENT;
    if (!dot) {
        set_leaf(b, msg, f, v, top);
        return 0;
    }
    if (f->type != PROTOBUF_C_TYPE_MESSAGE)
        return -EINVAL;
    return set_path(b, sub_message(&b->a, msg, f), f->descriptor, dot + 1, v, false);
}

/* ---------------------------------------------------------- baseline items */
static uint64_t token_value(const walk *w, const char *tok, bool *ok)
{
    *ok = true;
    if (!strcmp(tok, "$DIR"))
        return w->dir;
    if (!strcmp(tok, "$FILE"))
        return w->file;
    if (!strcmp(tok, "$LINK"))
        return w->link;
    if (!strcmp(tok, "$FID"))
        return WALK_FID;
    if (!strcmp(tok, "$OWNER"))
        return w->owner;
    if (!strcmp(tok, "$NOW"))
        return (uint64_t)now_ns();
    if (!strcmp(tok, "$BADSRV"))
        return BAD_SERVER_ID;
    if (!strcmp(tok, "$SRV0"))
        return w->cfg.ioservers[0].id;
    char *end = NULL;
    uint64_t v = strtoull(tok, &end, 0);
    *ok = end && *end == '\0' && end != tok;
    return v;
}

/* "x$Ny" -> "x<serial>y" into out. */
static void expand(const walk *w, const char *s, char *out, size_t len)
{
    const char *n = strstr(s, "$N");
    if (!n) {
        snprintf(out, len, "%s", s);
        return;
    }
    snprintf(out, len, "%.*s%" PRIu64 "%s", (int)(n - s), s, w->serial, n + 2);
}

/* Applies "field=value" items to b->msg; false on a bad item (a bug here). */
static bool apply_items(walk *w, build *b, const ProtobufCMessageDescriptor *d,
                        const char *const *items)
{
    for (unsigned i = 0; i < MAX_BASE_FIELDS && items[i]; i++) {
        char path[PATH_BYTES];
        const char *eq = strchr(items[i], '=');
        if (!eq || (size_t)(eq - items[i]) >= sizeof(path))
            return false;
        memcpy(path, items[i], (size_t)(eq - items[i]));
        path[eq - items[i]] = '\0';
        wvalue v = { .kind = V_NUM };
        if (!strncmp(eq + 1, "s:", 2)) {
            char *s = arena_alloc(&b->a, NAME_BYTES);
            expand(w, eq + 3, s, NAME_BYTES);
            v.kind = V_BYTES;
            v.bytes = (const uint8_t *)s;
            v.len = strlen(s);
        } else {
            bool ok;
            v.num = token_value(w, eq + 1, &ok);
            if (!ok)
                return false;
        }
        int rc = set_path(b, b->msg, d, path, &v, true);
        if (rc < 0) {
            fprintf(stderr, "extreme_walk: bad baseline item '%s'\n", items[i]);
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------- sending */
typedef struct reply {
    int rc;        /* the call: 0 or -errno */
    int err;       /* reply.err */
    bool has_msg;  /* a non-empty message with err */
    uint32_t state;     /* IoReply.state */
    uint64_t epoch;     /* IoReply.cluster_epoch */
    uint64_t client_id; /* MdsReply.client_id */
    uint64_t ino;       /* MdsReply.attr.ino */
} reply;

static size_t encode(build *b, uint8_t **out)
{
    size_t len = protobuf_c_message_get_packed_size(b->msg);
    size_t extra = b->has_raw ? b->raw.len + 2 * 10 : 0;
    uint8_t *buf = arena_alloc(&b->a, len + extra);
    protobuf_c_message_pack(b->msg, buf);
    if (b->has_raw) {
        uint8_t *p = buf + len;
        uint64_t key = (uint64_t)b->raw.id << 3 | 2, n = b->raw.len;
        while (key >= 0x80) { *p++ = (uint8_t)(key | 0x80); key >>= 7; }
        *p++ = (uint8_t)key;
        while (n >= 0x80) { *p++ = (uint8_t)(n | 0x80); n >>= 7; }
        *p++ = (uint8_t)n;
        memcpy(p, b->raw.bytes, b->raw.len);
        len = (size_t)(p + b->raw.len - buf);
    }
    *out = buf;
    return len;
}

static void read_reply(bool io, rpc_call *call, reply *r)
{
    ProtobufCMessage *m = NULL;
    r->rc = rpc_call_unpack(call, io ? &depfs__io_reply__descriptor : &depfs__mds_reply__descriptor,
                            &m);
    if (r->rc < 0)
        return;
    if (io) {
        Depfs__IoReply *q = (Depfs__IoReply *)m;
        r->err = q->err;
        r->has_msg = q->message && q->message[0];
        r->state = q->has_state ? q->state : UINT32_MAX;
        r->epoch = q->cluster_epoch;
    } else {
        Depfs__MdsReply *q = (Depfs__MdsReply *)m;
        r->err = q->err;
        r->has_msg = q->message && q->message[0];
        r->client_id = q->client_id;
        r->ino = q->attr ? q->attr->ino : 0;
    }
    protobuf_c_message_free_unpacked(m, NULL);
}

static rpc_conn *conn_for(walk *w, bool io)
{
    return io ? w->io[io_cur] : w->mds;
}

static int reconnect(walk *w, bool io)
{
    const char *addr = io ? config_ioserver(&w->cfg, w->io_id[io_cur])->address : w->cfg.mds_address;
    rpc_conn **c = io ? &w->io[io_cur] : &w->mds;
    if (*c)
        rpc_conn_close(*c);
    *c = NULL;
    frame_limits lim = { .max_header_bytes = w->cfg.max_header_bytes,
                         .max_bulk_bytes = w->cfg.max_bulk_bytes };
    return rpc_conn_open(w->cfg.transport, addr, &lim, (int)w->cfg.connect_timeout_ms, &w->creds,
                         c);
}

/* Sends b as op; bulk for WRITEs. */
static void send_build(walk *w, bool io, uint16_t op, build *b, size_t bulk_len, reply *r)
{
    uint8_t *hdr;
    size_t hdr_len = encode(b, &hdr);
    struct iovec bulk = { .iov_base = w->wbuf, .iov_len = bulk_len };
    struct iovec resp = { .iov_base = w->rbuf, .iov_len = w->rbuf_len };
    rpc_call *call = NULL;
    memset(r, 0, sizeof(*r));
    rpc_conn *c = conn_for(w, io);
    if (!c || rpc_conn_broken(c)) {
        if ((r->rc = reconnect(w, io)) < 0)
            return;
        c = conn_for(w, io);
    }
    r->rc = rpc_call_start(c, op, hdr, hdr_len, bulk_len ? &bulk : NULL, bulk_len ? 1 : 0,
                           io ? &resp : NULL, io ? 1 : 0, &call);
    if (r->rc == 0)
        r->rc = rpc_call_wait(call, CALL_TIMEOUT_MS);
    if (r->rc == 0)
        read_reply(io, call, r);
    rpc_call_free(call);
}

/* A request from items only (setup, preps, checks, cleanups). */
static void send_items(walk *w, bool io, uint16_t op, const char *const *items, reply *r)
{
    build b = { 0 };
    b.msg = new_message(&b.a, io ? &depfs__io_request__descriptor : &depfs__mds_request__descriptor);
    if (!apply_items(w, &b, b.msg->descriptor, items)) {
        memset(r, 0, sizeof(*r));
        r->rc = -EINVAL;
    } else {
        send_build(w, io, op, &b, 0, r);
    }
    arena_free(&b.a);
}

static bool reply_clean(const reply *r)
{
    return r->rc == 0 && r->err >= 0 && r->err <= ERRNO_MAX && (r->err == 0 || r->has_msg);
}

/* ------------------------------------------------------------ the walk */
typedef struct target {
    const baseline *base;
    const char *path;      /* field being walked */
    const char *field;     /* its last component */
} target;

static bool refusal_expected(const target *t, const wvalue *v, bool is_string)
{
    for (size_t i = 0; i < sizeof(must_refuse) / sizeof(must_refuse[0]); i++) {
        const refusal *m = &must_refuse[i];
        if (m->io != t->base->io || (m->op && m->op != t->base->op))
            continue;
        bool path = !strcmp(m->path, t->path) || (is_string && !strcmp(m->path, "*"));
        if (path && !strcmp(m->label, v->label))
            return true;
    }
    return false;
}

/* Values not sent, and why (printed with --verbose). */
static const char *skip_value(walk *w, const target *t, const wvalue *v)
{
    (void)w;
    if (t->base->io && t->base->op == DEPFS__IO_OP__IO_SET_STATE &&
        !strcmp(t->path, "cluster_epoch") && v->num > 0 && v->num <= WIRE_EPOCH_MAX)
        return "raising a server's epoch is depfs-recovery's command, and permanent";
    return NULL;
}

/* After an I/O request: what it made goes (strip files of the walk's ids
 * and of a walked file_id, their locks) and the server is UP again. */
static void io_cleanup(walk *w, const target *t, const wvalue *v)
{
    reply r;
    char fid[NAME_BYTES];
    const char *rm[] = { fid, NULL };
    snprintf(fid, sizeof(fid), "file_id=%" PRIu64, (uint64_t)WALK_FID);
    send_items(w, true, DEPFS__IO_OP__IO_REMOVE, rm, &r);
    if (!strcmp(t->path, "file_id") && v->kind == V_NUM && v->num != 0 && v->num != WALK_FID) {
        snprintf(fid, sizeof(fid), "file_id=%" PRIu64, v->num);
        send_items(w, true, DEPFS__IO_OP__IO_REMOVE, rm, &r);
    }
    const char *up[] = { "file_id=0", "server_state=0", NULL };
    if (t->base->op == DEPFS__IO_OP__IO_SET_STATE || t->base->op == DEPFS__IO_OP__IO_DIRTY)
        send_items(w, true, DEPFS__IO_OP__IO_SET_STATE, up, &r);
    if (!strcmp(t->field, "down_servers")) { /* dirty records it wrote */
        for (unsigned i = 0; i < w->cfg.n_ioservers; i++) {
            char srv[NAME_BYTES];
            const char *claim[] = { fid, srv, "dirty_action=1", NULL };
            const char *clear[] = { fid, srv, "dirty_action=2", NULL };
            snprintf(fid, sizeof(fid), "file_id=%" PRIu64, (uint64_t)WALK_FID);
            snprintf(srv, sizeof(srv), "local_size=%u", w->cfg.ioservers[i].id);
            send_items(w, true, DEPFS__IO_OP__IO_DIRTY, claim, &r);
            send_items(w, true, DEPFS__IO_OP__IO_DIRTY, clear, &r);
        }
    }
}

/* Bulk for a WRITE: the extents' sum when it fits a frame, else the
 * baseline's (the server must refuse the mismatch). */
static size_t write_bulk(const walk *w, const build *b, const baseline *base)
{
    const Depfs__IoRequest *q = (const Depfs__IoRequest *)b->msg;
    uint64_t sum = 0;
    for (size_t i = 0; i < q->n_extents; i++) {
        if (q->extents[i]->length > w->wbuf_len - sum)
            return base->bulk;
        sum += q->extents[i]->length;
    }
    return (size_t)sum;
}

static void send_one(walk *w, const target *t, const wvalue *v, bool is_string)
{
    const baseline *base = t->base;
    const char *why_skip = skip_value(w, t, v);
    if (why_skip) {
        w->skipped++;
        if (w->verbose)
            printf("  skip %s %s=%s: %s\n", op_name(base->io, base->op), t->path, v->label, why_skip);
        return;
    }
    w->serial++;
    reply r;
    if (base->prep_op)
        send_items(w, base->io, base->prep_op, base->prep, &r);
    build b = { 0 };
    const ProtobufCMessageDescriptor *d =
        base->io ? &depfs__io_request__descriptor : &depfs__mds_request__descriptor;
    b.msg = new_message(&b.a, d);
    bool built = apply_items(w, &b, d, base->set);
    b.raw_strings = true;
    if (!built || set_path(&b, b.msg, d, t->path, v, true) < 0) {
        failure(w, "%s %s=%s: cannot build the request", op_name(base->io, base->op), t->path,
                v->label);
        arena_free(&b.a);
        return;
    }
    size_t bulk = base->io && base->op == DEPFS__IO_OP__IO_WRITE ? write_bulk(w, &b, base) : 0;
    send_build(w, base->io, base->op, &b, bulk, &r);
    arena_free(&b.a);
    w->sent++;
    const char *name = op_name(base->io, base->op);
    if (!reply_clean(&r))
        failure(w, "%s %s=%s: %s (rc %d, err %d)", name, t->path, v->label,
                r.rc ? "no reply" : "reply without a clean errno and message", r.rc, r.err);
    else if (r.err == 0 && refusal_expected(t, v, is_string))
        failure(w, "%s %s=%s: accepted, must be refused", name, t->path, v->label);
    if (r.rc == 0)
        r.err ? w->refused++ : w->served++;
    if (w->verbose)
        printf("  %s %s=%s -> %s\n", name, t->path, v->label, r.err ? strerror(r.err) : "ok");
    if (base->io) {
        bool was_up = r.rc == 0 && r.state == DEPFS__SERVER_STATE__SERVER_UP;
        bool sets_state = base->op == DEPFS__IO_OP__IO_SET_STATE || base->op == DEPFS__IO_OP__IO_DIRTY;
        if (r.rc == 0 && !was_up && !sets_state)
            failure(w, "%s %s=%s: server %u left UP (state %u)", name, t->path, v->label,
                    w->io_id[io_cur], r.state);
        io_cleanup(w, t, v);
    }
}

/* Numbers of the field's type, then the edges of its name. */
static void walk_numbers(walk *w, const target *t, const ProtobufCFieldDescriptor *f)
{
    const void *tab = NULL;
    size_t n = 0;
#define TAB(x) (tab = (x), n = sizeof(x) / sizeof((x)[0]))
    switch (f->type) {
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: TAB(u32_values); break;
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_ENUM: TAB(i32_values); break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: TAB(i64_values); break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: TAB(unsigned_values); break;
    case PROTOBUF_C_TYPE_BOOL: TAB(bool_values); break;
    default: return; /* floats: DePFS has none */
    }
#undef TAB
    const struct { uint64_t v; const char *label; } *vals = tab;
    for (size_t i = 0; i < n; i++) {
        wvalue v = num_value(vals[i].v, vals[i].label);
        send_one(w, t, &v, false);
    }
    for (size_t i = 0; i < sizeof(edge_values) / sizeof(edge_values[0]); i++) {
        if (strcmp(edge_values[i].field, t->field))
            continue;
        wvalue v = num_value(edge_values[i].v, edge_values[i].label);
        send_one(w, t, &v, false);
    }
}

static void walk_strings(walk *w, const target *t, bool is_string)
{
    static uint8_t big[WIRE_XATTR_VALUE_MAX + 2];
    unsigned max = limit_of(t->field, false);
    if (max + 1 > sizeof(big))
        max = sizeof(big) - 1;
    memset(big, 's', sizeof(big));
    struct { const char *b; size_t len; const char *label; } fixed[] = {
        { "", 0, "empty" }, { "a\0b", 3, "embedded NUL" }, { "\xff\xfe\xc0", 3, "not UTF-8" },
        { "/", 1, "/" }, { "..", 2, ".." }, { "a/b", 3, "a/b" },
    };
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        wvalue v = { .kind = V_BYTES, .bytes = (const uint8_t *)fixed[i].b, .len = fixed[i].len };
        snprintf(v.label, sizeof(v.label), "%s", fixed[i].label);
        send_one(w, t, &v, is_string);
    }
    wvalue v = { .kind = V_BYTES, .bytes = big, .len = max };
    snprintf(v.label, sizeof(v.label), "%u bytes (max)", max);
    send_one(w, t, &v, is_string);
    v.len = max + 1;
    snprintf(v.label, sizeof(v.label), "%u bytes (max+1)", max + 1);
    send_one(w, t, &v, is_string);
}

static void walk_counts(walk *w, const target *t)
{
    unsigned max = limit_of(t->field, true);
    const unsigned counts[] = { max, max + 1 };
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        wvalue v = { .kind = V_COUNT, .num = counts[i] };
        snprintf(v.label, sizeof(v.label), "%u elements", counts[i]);
        send_one(w, t, &v, false);
    }
}

static void walk_fields(walk *w, const baseline *base, const ProtobufCMessageDescriptor *d,
                        const char *prefix)
{
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        char path[PATH_BYTES];
        snprintf(path, sizeof(path), "%s%s", prefix, f->name);
        target t = { .base = base, .path = path, .field = f->name };
        if (f->label == PROTOBUF_C_LABEL_REPEATED)
            walk_counts(w, &t);
        if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
            char sub[PATH_BYTES + 1];
            if (snprintf(sub, sizeof(sub), "%s.", path) >= (int)PATH_BYTES)
                continue; /* deeper than any DePFS message */
            walk_fields(w, base, f->descriptor, sub);
        } else if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_BYTES) {
            walk_strings(w, &t, f->type == PROTOBUF_C_TYPE_STRING);
        } else {
            walk_numbers(w, &t, f);
        }
    }
}

/* A good request is still served: MDS getattr of the root, I/O STAT. */
static void check_alive(walk *w, const baseline *base)
{
    reply r;
    const char *root[] = { "ino=1", NULL };
    const char *stat[] = { "file_id=0", NULL };
    if (base->io)
        send_items(w, true, DEPFS__IO_OP__IO_STAT, stat, &r);
    else
        send_items(w, false, DEPFS__MDS_OP__MDS_GETATTR, root, &r);
    if (r.rc != 0 || r.err != 0)
        failure(w, "after %s: a good request failed (rc %d, err %d)",
                op_name(base->io, base->op), r.rc, r.err);
    if (base->io && r.rc == 0 && r.state != DEPFS__SERVER_STATE__SERVER_UP)
        failure(w, "after %s: server %u is not UP (state %u)", op_name(base->io, base->op),
                w->io_id[io_cur], r.state);
}

static void walk_baseline(walk *w, const baseline *base)
{
    w->sent = w->served = w->refused = w->skipped = 0;
    unsigned before = w->failures;
    const ProtobufCMessageDescriptor *d =
        base->io ? &depfs__io_request__descriptor : &depfs__mds_request__descriptor;
    walk_fields(w, base, d, "");
    check_alive(w, base);
    printf("%-4s %-3u %-22s %5u requests: %5u served, %5u refused, %3u skipped%s\n",
           base->io ? "IO" : "MDS", base->io ? w->io_id[io_cur] : 0, op_name(base->io, base->op),
           w->sent, w->served, w->refused, w->skipped, w->failures > before ? "  FAILED" : "");
    fflush(stdout);
}

/* Every op of both enums has a baseline: a new op fails the walk until
 * it gets one. */
static void check_ops_covered(walk *w)
{
    const ProtobufCEnumDescriptor *e[] = { &depfs__mds_op__descriptor, &depfs__io_op__descriptor };
    for (unsigned k = 0; k < 2; k++) {
        for (unsigned i = 0; i < e[k]->n_values; i++) {
            bool found = false;
            for (size_t j = 0; j < sizeof(baselines) / sizeof(baselines[0]) && !found; j++)
                found = baselines[j].io == (k == 1) && baselines[j].op == e[k]->values[i].value;
            if (!found)
                failure(w, "%s has no baseline in extreme_walk.c", e[k]->values[i].name);
        }
    }
}

/* ---------------------------------------------------------------- setup */
static uint64_t mds_make(walk *w, uint16_t op, const char *const *items)
{
    reply r;
    send_items(w, false, op, items, &r);
    if (r.rc == 0 && r.err == EEXIST) { /* a walk before this one: look it up */
        const char *look[] = { items[0], items[1], NULL };
        send_items(w, false, DEPFS__MDS_OP__MDS_LOOKUP, look, &r);
    }
    return r.rc == 0 && r.err == 0 ? r.ino : 0;
}

static int setup(walk *w)
{
    char dir[NAME_BYTES];
    reply r;
    const char *mkdir_items[] = { "parent=1", "name=s:" WALK_DIR, "mode=040755", NULL };
    if (!(w->dir = mds_make(w, DEPFS__MDS_OP__MDS_MKDIR, mkdir_items)))
        return -EIO;
    snprintf(dir, sizeof(dir), "parent=%" PRIu64, w->dir);
    const char *create_items[] = { dir, "name=s:" WALK_FILE, "mode=0100644", NULL };
    const char *link_items[] = { dir, "name=s:" WALK_LINK, "target=s:" WALK_FILE, NULL };
    w->file = mds_make(w, DEPFS__MDS_OP__MDS_CREATE, create_items);
    w->link = mds_make(w, DEPFS__MDS_OP__MDS_SYMLINK, link_items);
    send_items(w, false, DEPFS__MDS_OP__MDS_REGISTER, (const char *[]){ NULL }, &r);
    w->owner = r.client_id;
    if (!w->file || !w->link || !w->owner)
        return -EIO;
    /* the file ids the walk removes must hold no file's data */
    for (size_t i = 0; i < sizeof(unsigned_values) / sizeof(unsigned_values[0]); i++) {
        char ino[NAME_BYTES];
        const char *get[] = { ino, NULL };
        snprintf(ino, sizeof(ino), "ino=%" PRIu64, unsigned_values[i].v);
        send_items(w, false, DEPFS__MDS_OP__MDS_GETATTR, get, &r);
        if (r.rc == 0 && r.err == 0 && unsigned_values[i].v != 1) {
            fprintf(stderr, "extreme_walk: inode %s exists; the walk would remove its strip "
                    "files: use a fresh cluster\n", unsigned_values[i].label);
            return -EEXIST;
        }
    }
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: extreme_walk --config PATH [--io ID]... [--verbose]\n");
}

static int parse_args(int argc, char **argv, walk *w, const char **conf)
{
    static const struct option opts[] = {
        { "config", required_argument, NULL, 'c' }, { "io", required_argument, NULL, 'i' },
        { "verbose", no_argument, NULL, 'v' }, { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int o;
    while ((o = getopt_long(argc, argv, "c:i:vh", opts, NULL)) != -1) {
        switch (o) {
        case 'c': *conf = optarg; break;
        case 'i':
            if (w->n_io == MAX_IO_SERVERS)
                return -E2BIG;
            w->io_id[w->n_io++] = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case 'v': w->verbose = true; break;
        case 'h': usage(stdout); exit(0);
        default: return -EINVAL;
        }
    }
    return *conf ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
    static walk w;
    const char *conf = NULL;
    char err[256];
    dlog_init("extreme_walk", DLOG_ERR);
    if (parse_args(argc, argv, &w, &conf) < 0) {
        usage(stderr);
        return 2;
    }
    if (config_load(conf, &w.cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "extreme_walk: %s\n", err);
        return 2;
    }
    if (daemon_peer_creds(&w.cfg, &w.creds) < 0) {
        fprintf(stderr, "extreme_walk: cannot read the cluster key %s\n", w.cfg.cluster_key);
        return 2;
    }
    if (w.n_io == 0 && w.cfg.n_ioservers > 0)
        w.io_id[w.n_io++] = w.cfg.ioservers[0].id;
    for (unsigned i = 0; i < w.n_io; i++)
        if (!config_ioserver(&w.cfg, w.io_id[i])) {
            fprintf(stderr, "extreme_walk: no I/O server %u in %s\n", w.io_id[i], conf);
            return 2;
        }
    w.rbuf_len = w.cfg.max_bulk_bytes;
    w.wbuf_len = WRITE_UNIT * 16;
    w.rbuf = malloc(w.rbuf_len);
    w.wbuf = calloc(1, w.wbuf_len);
    if (!w.rbuf || !w.wbuf || reconnect(&w, false) < 0 || setup(&w) < 0) {
        fprintf(stderr, "extreme_walk: cannot set up the walk on %s\n", w.cfg.mds_address);
        return 2;
    }
    check_ops_covered(&w);
    for (size_t i = 0; i < sizeof(baselines) / sizeof(baselines[0]); i++)
        if (!baselines[i].io)
            walk_baseline(&w, &baselines[i]);
    for (io_cur = 0; io_cur < w.n_io; io_cur++)
        for (size_t i = 0; i < sizeof(baselines) / sizeof(baselines[0]); i++)
            if (baselines[i].io)
                walk_baseline(&w, &baselines[i]);
    for (unsigned i = 0; i < w.n_io; i++)
        if (w.io[i])
            rpc_conn_close(w.io[i]);
    rpc_conn_close(w.mds);
    free(w.rbuf);
    free(w.wbuf);
    printf("%s: %u failures\n", w.failures ? "FAIL" : "PASS", w.failures);
    return w.failures ? 1 : 0;
}
