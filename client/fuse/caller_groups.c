/* caller_groups.c - depfs-fuse: a kernel request's caller's supplementary
 * groups (caller_groups.h), which every request that reaches the MDS
 * carries (ops.c req_cred) so the MDS can check permissions.
 *
 * Why not libfuse's fuse_req_getgroups: it reads /proc/TID/task/TID/status
 * into 1 KiB and, when that fills (it always does: the status text runs
 * past 1 KiB), opens and reads the file again into 4 KiB. Each read
 * renders the whole status (signal masks, capability sets, memory
 * figures) in the kernel, so every request paid two opens and two
 * renderings. Here: one open, read to the end into a buffer that holds
 * any ordinary status at once and grows only for a caller with thousands
 * of groups. Nothing is cached: a caller's groups may change between two
 * of its requests (setgroups), and each request must carry the current
 * ones. */
#include "caller_groups.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An ordinary status text (about 1.5 KiB, plus ~11 bytes per group) fits. */
#define DFUSE_STATUS_FIRST_BYTES 4096u
/* NGROUPS_MAX (65536) groups of up to 10 digits and a separator, plus the
 * rest of the text: what the buffer may grow to. */
#define DFUSE_STATUS_MAX_BYTES (1024u * 1024u)
#define DFUSE_STATUS_PATH_BYTES 64u
#define DFUSE_GROUPS_TAG "Groups:"
#define DFUSE_DECIMAL 10

/* The line after a "\nTAG" at the start of a line, or NULL. */
static const char *find_line(const char *s, size_t len, const char *tag, const char **end)
{
    size_t tl = strlen(tag);
    for (size_t i = 0; i + tl <= len; i++) {
        if ((i == 0 || s[i - 1] == '\n') && memcmp(s + i, tag, tl) == 0) {
            const char *nl = memchr(s + i, '\n', len - i);
            *end = nl ? nl : s + len;
            return s + i + tl;
        }
    }
    return NULL;
}

int dfuse_parse_groups(const char *status, size_t len, int size, gid_t list[])
{
    const char *end, *p = find_line(status, len, DFUSE_GROUPS_TAG, &end);
    int n = 0;
    if (!p)
        return -EIO;
    while (p < end) {
        if (*p == ' ' || *p == '\t') {
            p++;
            continue;
        }
        unsigned long g = 0;
        const char *start = p;
        while (p < end && *p >= '0' && *p <= '9' && g <= UINT_MAX)
            g = g * DFUSE_DECIMAL + (unsigned long)(*p++ - '0');
        if (p == start || g > UINT_MAX || n == INT_MAX)
            return -EIO; /* not a group id: the text is not what we expect */
        if (n < size)
            list[n] = (gid_t)g;
        n++;
    }
    return n;
}

/* Reads fd to its end into *buf, which starts as stack (cap bytes) and is
 * replaced by a malloc'd buffer when that fills. Bytes read, or -errno
 * (-E2BIG over DFUSE_STATUS_MAX_BYTES). */
static ssize_t read_status(int fd, char *stack, size_t cap, char **buf)
{
    size_t len = 0;
    for (;;) {
        if (len == cap) {
            if (cap >= DFUSE_STATUS_MAX_BYTES)
                return -E2BIG;
            char *bigger = malloc(cap * 2);
            if (!bigger)
                return -ENOMEM;
            memcpy(bigger, *buf, len);
            if (*buf != stack)
                free(*buf);
            *buf = bigger;
            cap *= 2;
        }
        ssize_t r = read(fd, *buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            return (ssize_t)len;
        len += (size_t)r;
    }
}

int dfuse_caller_groups(pid_t tid, int size, gid_t list[])
{
    char path[DFUSE_STATUS_PATH_BYTES], first[DFUSE_STATUS_FIRST_BYTES], *buf = first;
    snprintf(path, sizeof(path), "/proc/%ld/task/%ld/status", (long)tid, (long)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t len = read_status(fd, first, sizeof(first), &buf);
    close(fd);
    int rc = len < 0 ? (int)len : dfuse_parse_groups(buf, (size_t)len, size, list);
    if (buf != first)
        free(buf);
    return rc;
}
