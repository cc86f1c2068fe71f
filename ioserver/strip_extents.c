/* strip_extents.c - a strip file's data extents and allocation
 * (strip_extents.h). */
#include "strip_extents.h"

#include <assert.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

/* st_blocks counts 512-byte sectors whatever the file system's block size
 * (stat(2)). */
#define STAT_BLOCK_BYTES 512u

/* The next data at or after pos: *data, or *none when the file holds no
 * more (ENXIO). A file system that cannot seek data says pos is data. */
static int next_data(int fd, uint64_t pos, uint64_t *data, bool *none)
{
    *none = false;
    off_t d = lseek(fd, (off_t)pos, SEEK_DATA);
    if (d >= 0) {
        *data = (uint64_t)d;
        return 0;
    }
    if (errno == ENXIO) {
        *none = true;
        return 0;
    }
    if (errno == EINVAL) { /* no SEEK_DATA here: everything is data */
        *data = pos;
        return 0;
    }
    return -errno;
}

/* The hole that ends the data at d (the file's end at the latest). */
static int next_hole(int fd, uint64_t d, uint64_t *hole)
{
    off_t h = lseek(fd, (off_t)d, SEEK_HOLE);
    if (h >= 0) {
        *hole = (uint64_t)h;
        return 0;
    }
    if (errno == ENXIO) { /* d is at or past the end now (cut meanwhile) */
        *hole = d;
        return 0;
    }
    return -errno;
}

/* Adds data [a, b) (granule-aligned): merged with the last entry when they
 * touch; false when m is full (nothing added). */
static bool map_add(ios_data_map *m, uint64_t a, uint64_t b)
{
    assert(a < b);
    if (m->n > 0) {
        ios_extent *last = &m->v[m->n - 1];
        uint64_t end = last->offset + last->length;
        assert(a >= last->offset);
        if (a <= end) {
            if (b > end)
                last->length = b - last->offset;
            return true;
        }
    }
    if (m->n == m->max)
        return false;
    m->v[m->n++] = (ios_extent){ .offset = a, .length = b - a };
    return true;
}

int ios_strip_data_scan(int fd, uint64_t from, uint64_t to, uint32_t granule, ios_data_map *m)
{
    assert(granule > 0 && from % granule == 0 && to % granule == 0 && from < to);
    assert(m->v && m->max > 0);
    m->n = 0;
    m->more = false;
    m->next = to;
    uint64_t pos = from;
    for (unsigned step = 0; pos < to; step++) {
        if (step == IOS_EXTENTS_SCAN_STEPS_MAX) { /* all below pos is described */
            m->more = true;
            m->next = pos;
            break;
        }
        uint64_t d = 0, h = 0;
        bool none;
        int rc = next_data(fd, pos, &d, &none);
        if (rc)
            return rc;
        if (none || d >= to)
            break;
        if ((rc = next_hole(fd, d, &h)))
            return rc;
        if (h <= d) /* cut meanwhile: nothing more here */
            break;
        uint64_t a = d - d % granule;
        uint64_t b = h % granule ? h + (granule - h % granule) : h; /* h < 2^63 */
        if (b > to)
            b = to;
        if (!map_add(m, a, b)) { /* full: the hole before a is described */
            m->more = true;
            m->next = a;
            break;
        }
        pos = b;
    }
    assert(!m->more || m->next > from);
    return 0;
}

int ios_strip_alloc(int fd, uint64_t *alloc_bytes, uint64_t *size)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -errno;
    *alloc_bytes = (uint64_t)st.st_blocks * STAT_BLOCK_BYTES;
    *size = (uint64_t)st.st_size;
    return 0;
}
