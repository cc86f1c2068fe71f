/* layout.h - where a file's bytes live: stripe math and parity rotation.
 *
 * A file of layout (n, k, su, servers[n]) stores stripe s (file bytes
 * [s*k*su, (s+1)*k*su)) as units u = 0..n-1: data units 0..k-1 hold the
 * stripe's bytes in order, units k..n-1 hold parity. Unit u of stripe s lives
 * on servers[(u + s) % n] (RAID-5 style rotation: parity moves every stripe,
 * fault-free reads use all n servers). Every unit of stripe s sits at local
 * offset s*su in that server's strip file for the file. */
#ifndef DEPFS_LAYOUT_H
#define DEPFS_LAYOUT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LAYOUT_MAX_N 32u
#define LAYOUT_MIN_SU 512u
#define LAYOUT_MAX_SU (16u * 1024 * 1024)
#define LAYOUT_DEFAULT_SU (64u * 1024)
/* Strip files stay below this many bytes (I/O servers refuse offsets past
 * it), so a file of layout l holds at most layout_max_file_bytes(l). */
#define LAYOUT_MAX_STRIP_BYTES (1ull << 50)
_Static_assert(LAYOUT_MAX_STRIP_BYTES % LAYOUT_MAX_SU == 0, "whole units fit a strip");

typedef struct layout {
    uint32_t n, k;          /* units per stripe, data units per stripe */
    uint32_t su;            /* stripe unit bytes */
    uint32_t version;       /* layout version */
    uint32_t codec_version; /* codec.h CODEC_VERSION_* */
    uint32_t servers[LAYOUT_MAX_N]; /* ioserver ids, layout order */
} layout;

/* 0 when su is a stripe unit (a multiple of LAYOUT_MIN_SU up to
 * LAYOUT_MAX_SU); else -EINVAL and a reason in why. */
int layout_check_su(uint32_t su, char *why, size_t why_len);
/* 0 when the layout is usable; else -EINVAL and a reason in why. */
int layout_validate(const layout *l, char *why, size_t why_len);

static inline uint64_t layout_stripe_bytes(const layout *l) { return (uint64_t)l->k * l->su; }
static inline uint64_t layout_stripe_of(const layout *l, uint64_t off) { return off / layout_stripe_bytes(l); }
static inline uint64_t layout_local_offset(const layout *l, uint64_t stripe) { return stripe * l->su; }
/* The largest file size layout l can store: k strips of LAYOUT_MAX_STRIP_BYTES
 * (at most 2^55: LAYOUT_MAX_N x 2^50). */
static inline uint64_t layout_max_file_bytes(const layout *l)
{ return (uint64_t)l->k * LAYOUT_MAX_STRIP_BYTES; }

/* Position in servers[] of unit `unit` of stripe `stripe`, and the inverse. */
unsigned layout_unit_pos(const layout *l, uint64_t stripe, unsigned unit);
unsigned layout_pos_unit(const layout *l, uint64_t stripe, unsigned pos);
static inline uint32_t layout_unit_server(const layout *l, uint64_t stripe, unsigned unit)
{ return l->servers[layout_unit_pos(l, stripe, unit)]; }

/* File byte -> (stripe, data unit, offset inside the unit). */
typedef struct unit_addr { uint64_t stripe; unsigned unit; uint32_t off_in_unit; } unit_addr;
unit_addr layout_locate(const layout *l, uint64_t file_off);

/* A byte range cut at stripe boundaries: pieces in file order. A piece is
 * `full` when it covers its whole stripe. */
typedef struct stripe_piece {
    uint64_t stripe;
    uint64_t file_off;      /* first file byte of the piece */
    uint32_t off_in_stripe; /* offset within the stripe's k*su data bytes */
    uint32_t len;
    bool full;
} stripe_piece;
/* Number of pieces [off, off+len) splits into (0 for len 0). */
uint64_t layout_piece_count(const layout *l, uint64_t off, uint64_t len);
/* Piece i (0-based) of [off, off+len); i < layout_piece_count(). */
stripe_piece layout_piece(const layout *l, uint64_t off, uint64_t len, uint64_t i);

/* Bytes the strip file at position pos must keep for a file of file_size:
 * for stripes wholly or partly in the file, the full su of every unit
 * (parity and data alike) up to the last stripe. Used by truncate. */
uint64_t layout_local_size(const layout *l, uint64_t file_size, unsigned pos);

/* Choose n distinct servers of `ids[count]` for a new file, starting at a
 * position derived from `seed` (file id) so files spread over the cluster.
 * -EINVAL when count < n. */
int layout_choose_servers(layout *l, const uint32_t *ids, unsigned count, uint64_t seed);

#endif
