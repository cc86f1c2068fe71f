/* strip_extents.h - where a strip file holds data (issue 14): its data
 * extents found with SEEK_DATA/SEEK_HOLE, rounded out to a granule (the
 * layout's stripe unit) and merged, bounded per call, and the bytes the
 * file occupies (st_blocks x 512). What the client needs for SEEK_DATA,
 * SEEK_HOLE and st_blocks (client/lib/eng_extents.c).
 *
 * Works on an open descriptor and never changes the file; the caller
 * (strips.c) opens it. A file system without SEEK_DATA support reports the
 * whole file as data, which never claims a hole. Return convention: 0 or a
 * negative errno. */
#ifndef DEPFS_IOS_STRIP_EXTENTS_H
#define DEPFS_IOS_STRIP_EXTENTS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strips.h"

/* SEEK_DATA/SEEK_HOLE pairs one scan makes at most (a strip file cut into
 * many small pieces inside each granule costs more steps than extents):
 * the scan stops there and says where to go on, like a full reply. */
#define IOS_EXTENTS_SCAN_STEPS_MAX 65536u

typedef struct ios_data_map {
    ios_extent *v;        /* the caller's array of max entries */
    size_t max;           /* entries v holds (> 0) */
    size_t n;             /* entries found: ascending, disjoint, not adjacent,
                           * granule-aligned, within [from, to) */
    bool more;            /* stopped early: ask again from next */
    uint64_t next;        /* with more: everything below it is described (> from) */
} ios_data_map;

/* Data of fd in [from, to) (both multiples of granule, from < to) into m. */
int ios_strip_data_scan(int fd, uint64_t from, uint64_t to, uint32_t granule, ios_data_map *m);

/* The bytes fd occupies on its file system (st_blocks x 512) and its length. */
int ios_strip_alloc(int fd, uint64_t *alloc_bytes, uint64_t *size);

#endif
