/* eng_extent_map.h - the math of SEEK_DATA and SEEK_HOLE (issue 14): what
 * the data extents the I/O servers report of a file's strip files say
 * about the file's bytes. Pure functions over memory (no I/O), tested in
 * tests/unit/test_extent_map.c; eng_extents.c fetches the extents.
 *
 * A file byte lies in data unit u of stripe s, stored at local bytes
 * [s*su, (s+1)*su) of the server at layout position layout_unit_pos(s, u).
 * That unit is data when the server's data extents meet its local range,
 * or when the server's picture is unknown there (a server down or
 * rebuilding, dirty records naming it, a reply that did not answer or
 * stopped short): unknown counts as data, so a hole is never claimed where
 * bytes may be. Holes are whole stripe units. */
#ifndef DEPFS_CLIENT_ENG_EXTENT_MAP_H
#define DEPFS_CLIENT_ENG_EXTENT_MAP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"

/* A data extent of one strip file, in local bytes. */
typedef struct dc_xext {
    uint64_t off, len;
} dc_xext;

/* What one layout position's server said. */
typedef struct dc_xpos {
    bool known;             /* false: every unit of it counts as data */
    uint64_t known_end;     /* local bytes below this are described by ext;
                             * from here on its units count as data */
    const dc_xext *ext;     /* ascending (overlaps tolerated) */
    size_t n;
} dc_xpos;

/* The picture of stripes [first_stripe, end_stripe) of a file. */
typedef struct dc_xmap {
    const layout *lay;
    uint64_t first_stripe, end_stripe;
    dc_xpos pos[LAYOUT_MAX_N];      /* by layout position, lay->n of them */
} dc_xmap;

/* Whether the unit of stripe `stripe` at the position x describes holds (or
 * may hold) data. */
bool dc_xpos_stripe_is_data(const dc_xpos *x, uint32_t su, uint64_t stripe);

/* Whether data unit `unit` of stripe `stripe` holds (or may hold) data. */
bool dc_xmap_unit_is_data(const dc_xmap *m, uint64_t stripe, unsigned unit);

/* The first file offset >= off (off in the map's stripes) that is data
 * (want_data) or in a hole: true and *out, or false when there is none
 * before the map's end (the caller looks further, or at the file's end). */
bool dc_xmap_seek(const dc_xmap *m, uint64_t off, bool want_data, uint64_t *out);

#endif
