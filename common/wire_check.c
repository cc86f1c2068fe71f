/* wire_check.c - the checks of values taken from the wire (wire_check.h):
 * a walk of encoded protobuf messages for strings with NUL bytes, and one
 * small check per kind of value. */
#include "wire_check.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* protobuf wire types (the low 3 bits of a field key) */
enum {
    WT_VARINT = 0,
    WT_FIXED64 = 1,
    WT_LEN = 2,
    WT_FIXED32 = 5,
};
#define VARINT_BYTES_MAX 10u
#define VARINT_PAYLOAD_BITS 7u
#define VARINT_MORE 0x80u
#define KEY_TYPE_BITS 3u
#define KEY_TYPE_MASK 7u
#define FIXED64_BYTES 8u
#define FIXED32_BYTES 4u

__attribute__((format(printf, 4, 5)))
static int refuse(int err, char *why, size_t why_len, const char *fmt, ...)
{
    if (why && why_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return -err;
}

/* ------------------------------------------------------- encoded strings */

/* A varint at *pos of buf[0..len): true and *v, *pos moved past it. */
static bool read_varint(const uint8_t *buf, size_t len, size_t *pos, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned i = 0; i < VARINT_BYTES_MAX && *pos < len; i++) {
        uint8_t b = buf[(*pos)++];
        x |= (uint64_t)(b & ~VARINT_MORE) << (VARINT_PAYLOAD_BITS * i);
        if (!(b & VARINT_MORE)) {
            *v = x;
            return true;
        }
    }
    return false;
}

static int walk_strings(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
                        unsigned depth, char *why, size_t why_len)
{
    size_t pos = 0;
    while (pos < len) {
        uint64_t key, n;
        if (!read_varint(buf, len, &pos, &key))
            return 0; /* malformed: the decoder refuses it */
        switch (key & KEY_TYPE_MASK) {
        case WT_VARINT:
            if (!read_varint(buf, len, &pos, &n))
                return 0;
            continue;
        case WT_FIXED64:
            n = FIXED64_BYTES;
            break;
        case WT_FIXED32:
            n = FIXED32_BYTES;
            break;
        case WT_LEN: {
            if (!read_varint(buf, len, &pos, &n) || n > len - pos)
                return 0;
            uint64_t id = key >> KEY_TYPE_BITS;
            const ProtobufCFieldDescriptor *f =
                id <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(d, (unsigned)id) : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_STRING && memchr(buf + pos, 0, (size_t)n))
                return refuse(EINVAL, why, why_len, "%s.%s holds a NUL byte", d->short_name,
                              f->name);
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && depth < WIRE_MESSAGE_DEPTH_MAX) {
                int rc = walk_strings(f->descriptor, buf + pos, (size_t)n, depth + 1, why, why_len);
                if (rc < 0)
                    return rc;
            }
            break;
        }
        default:
            return 0; /* groups or junk: the decoder's call */
        }
        if (n > len - pos)
            return 0;
        pos += (size_t)n;
    }
    return 0;
}

int wire_check_strings(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
                       char *why, size_t why_len)
{
    if (!d || (!buf && len))
        return 0;
    return walk_strings(d, buf, len, 0, why, why_len);
}

/* ------------------------------------------------------------ strings */

int wire_check_name(const char *name, const char *what, char *why, size_t why_len)
{
    if (!name || !name[0])
        return refuse(EINVAL, why, why_len, "empty %s", what);
    if (strlen(name) > WIRE_NAME_MAX)
        return refuse(ENAMETOOLONG, why, why_len, "%s longer than %u bytes", what, WIRE_NAME_MAX);
    if (strchr(name, '/'))
        return refuse(EINVAL, why, why_len, "%s contains '/'", what);
    return 0;
}

int wire_check_symlink_target(const char *target, char *why, size_t why_len)
{
    if (!target || !target[0])
        return refuse(ENOENT, why, why_len, "empty symlink target");
    if (strlen(target) > WIRE_SYMLINK_MAX)
        return refuse(ENAMETOOLONG, why, why_len, "symlink target longer than %u bytes",
                      WIRE_SYMLINK_MAX);
    return 0;
}

int wire_check_xattr_name(const char *name, char *why, size_t why_len)
{
    if (!name || !name[0])
        return refuse(ERANGE, why, why_len, "empty xattr name");
    if (strlen(name) > WIRE_XATTR_NAME_MAX)
        return refuse(ERANGE, why, why_len, "xattr name longer than %u bytes",
                      WIRE_XATTR_NAME_MAX);
    return 0;
}

/* ------------------------------------------------------------- numbers */

static bool known_type(uint32_t type)
{
    switch (type) {
    case 0:
    case S_IFREG:
    case S_IFDIR:
    case S_IFLNK:
    case S_IFCHR:
    case S_IFBLK:
    case S_IFIFO:
    case S_IFSOCK:
        return true;
    default:
        return false;
    }
}

int wire_check_mode(uint32_t mode, char *why, size_t why_len)
{
    if (mode & ~(uint32_t)(S_IFMT | WIRE_PERM_BITS))
        return refuse(EINVAL, why, why_len, "mode 0%o has bits beyond the file type and "
                      "permissions", mode);
    if (!known_type(mode & S_IFMT))
        return refuse(EINVAL, why, why_len, "mode 0%o: unknown file type 0%o", mode,
                      mode & S_IFMT);
    return 0;
}

int wire_check_owner(uint32_t id, const char *what, char *why, size_t why_len)
{
    if (id == WIRE_OWNER_NONE)
        return refuse(EINVAL, why, why_len, "%s %u is (%s_t)-1, never an owner", what, id,
                      what);
    return 0;
}

int wire_check_rdev(uint64_t rdev, char *why, size_t why_len)
{
    if (rdev > WIRE_RDEV_MAX)
        return refuse(EINVAL, why, why_len, "device number %llu does not fit the mount's %u",
                      (unsigned long long)rdev, WIRE_RDEV_MAX);
    return 0;
}

int wire_check_epoch(uint64_t epoch, char *why, size_t why_len)
{
    if (epoch > WIRE_EPOCH_MAX)
        return refuse(ERANGE, why, why_len, "cluster epoch %llu > max %llu",
                      (unsigned long long)epoch, (unsigned long long)WIRE_EPOCH_MAX);
    return 0;
}

int wire_time_ns(const struct timespec *ts, int64_t *ns, char *why, size_t why_len)
{
    if (ts->tv_nsec < 0 || ts->tv_nsec >= WIRE_NS_PER_SEC)
        return refuse(EINVAL, why, why_len, "nanoseconds %ld not in [0, %ld)", (long)ts->tv_nsec,
                      WIRE_NS_PER_SEC);
    /* sec * 1e9 + nsec within int64, without overflowing on the way */
    const int64_t sec_max = INT64_MAX / WIRE_NS_PER_SEC;
    const int64_t sec_min = INT64_MIN / WIRE_NS_PER_SEC - 1;
    int64_t sec = (int64_t)ts->tv_sec;
    if (sec > sec_max || sec < sec_min ||
        (sec == sec_max && ts->tv_nsec > INT64_MAX % WIRE_NS_PER_SEC) ||
        (sec == sec_min && ts->tv_nsec < WIRE_NS_PER_SEC + INT64_MIN % WIRE_NS_PER_SEC))
        return refuse(ERANGE, why, why_len, "time %lld.%09ld s is outside 1677..2262, what "
                      "DePFS stores", (long long)sec, (long)ts->tv_nsec);
    /* for sec_min, sec * 1e9 alone would overflow: go through sec + 1 */
    *ns = sec < 0 ? (sec + 1) * WIRE_NS_PER_SEC + (ts->tv_nsec - WIRE_NS_PER_SEC)
                  : sec * WIRE_NS_PER_SEC + ts->tv_nsec;
    return 0;
}
