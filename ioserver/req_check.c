/* req_check.c - the bounds every IoRequest is held to where it is decoded
 * (req_check.h): one small check per field or relation, run in order by
 * ios_req_check. */
#include "req_check.h"
#include "dirty_op.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "auth.h"
#include "block_crc.h"
#include "config.h"
#include "layout.h"
#include "wire.h"
#include "wire_check.h"


__attribute__((format(printf, 4, 5)))
static int refuse(int err, char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
    return -err;
}

/* Ops on one strip file: file_id names it (0 names none). */
static bool names_a_file(uint16_t type)
{
    switch (type) {
    case DEPFS__IO_OP__IO_READ:
    case DEPFS__IO_OP__IO_WRITE:
    case DEPFS__IO_OP__IO_LOCK:
    case DEPFS__IO_OP__IO_UNLOCK:
    case DEPFS__IO_OP__IO_TRUNCATE:
    case DEPFS__IO_OP__IO_REMOVE:
    case DEPFS__IO_OP__IO_FSYNC:
    case DEPFS__IO_OP__IO_EXTENTS:
        return true;
    default:
        return false;
    }
}

static bool obeys_locks(const Depfs__IoRequest *q)
{
    return q->lock && !(q->has_ignore_locks && q->ignore_locks);
}

/* Every extent ends within max_local; *total gets the sum of lengths
 * (<= IOS_MAX_EXTENTS x max_local: no overflow, handlers.h). */
static int check_extents(const Depfs__IoRequest *q, uint64_t max_local, uint64_t *total,
                         char *why, size_t why_len)
{
    *total = 0;
    if (q->n_extents > IOS_MAX_EXTENTS)
        return refuse(EINVAL, why, why_len, "%zu extents > max %u", q->n_extents,
                      IOS_MAX_EXTENTS);
    for (size_t i = 0; i < q->n_extents; i++) {
        uint64_t off = q->extents[i]->offset, len = q->extents[i]->length;
        if (off > max_local || len > max_local - off)
            return refuse(EFBIG, why, why_len, "extent %zu (offset %" PRIu64 " length %" PRIu64
                          ") ends past %" PRIu64 ", the most a strip file holds here", i, off,
                          len, max_local);
        *total += len;
    }
    return 0;
}

static int check_lock(uint16_t type, const Depfs__LockSpec *l, char *why, size_t why_len)
{
    if (!l) {
        if (type == DEPFS__IO_OP__IO_LOCK || type == DEPFS__IO_OP__IO_UNLOCK)
            return refuse(EINVAL, why, why_len, "lock missing");
        return 0;
    }
    if (l->stripe_count == 0)
        return refuse(EINVAL, why, why_len, "lock stripe_count 0");
    if (l->has_wait_ms && l->wait_ms > WIRE_LOCK_WAIT_MAX_MS)
        return refuse(EINVAL, why, why_len, "lock wait_ms %u > max %u", l->wait_ms,
                      WIRE_LOCK_WAIT_MAX_MS);
    if (l->first_stripe + l->stripe_count < l->first_stripe)
        return refuse(EINVAL, why, why_len, "lock stripes %" PRIu64 "+%" PRIu64 " overflow",
                      l->first_stripe, l->stripe_count);
    /* a count may reach far past the last stripe ("every stripe from here
     * on": depfs-recovery's tail lock), but the lock must start at one */
    if (l->first_stripe >= IOS_MAX_STRIPES)
        return refuse(EINVAL, why, why_len, "lock starts at stripe %" PRIu64 ", past %llu, the "
                      "last a strip file can hold", l->first_stripe,
                      (unsigned long long)IOS_MAX_STRIPES - 1);
    return 0;
}

/* The local offset of stripe s (s x su), saturated: IOS_MAX_STRIPES x
 * LAYOUT_MAX_SU passes 64 bits, every extent ends far below. */
static uint64_t stripe_bytes(uint64_t stripe, uint64_t su)
{
    return stripe > UINT64_MAX / su ? UINT64_MAX : stripe * su;
}

/* A WRITE that obeys its lock writes only inside the locked stripes
 * (stripe s is local bytes [s*su, (s+1)*su)): else the lock would not
 * cover what it changes. Needs the stripe unit. */
static int check_write_in_lock(const Depfs__IoRequest *q, char *why, size_t why_len)
{
    if (!obeys_locks(q) || !q->has_stripe_unit || q->stripe_unit == 0)
        return 0;
    const Depfs__LockSpec *l = q->lock;
    uint64_t su = q->stripe_unit;
    uint64_t lo = stripe_bytes(l->first_stripe, su);
    uint64_t hi = stripe_bytes(l->first_stripe + l->stripe_count, su);
    for (size_t i = 0; i < q->n_extents; i++) {
        uint64_t off = q->extents[i]->offset, len = q->extents[i]->length;
        if (len && (off < lo || off + len > hi))
            return refuse(EINVAL, why, why_len, "extent %zu (offset %" PRIu64 " length %" PRIu64
                          ") outside the locked stripes %" PRIu64 "+%" PRIu64 " (unit %" PRIu64
                          ")", i, off, len, l->first_stripe, l->stripe_count, su);
    }
    return 0;
}

/* IO_EXTENTS: no extent (the allocation only) or one range of whole
 * granules (stripe_unit, required then), not empty. */
static int check_extents_range(uint16_t type, const Depfs__IoRequest *q, char *why,
                               size_t why_len)
{
    if (type != DEPFS__IO_OP__IO_EXTENTS || q->n_extents == 0)
        return 0;
    if (q->n_extents > 1)
        return refuse(EINVAL, why, why_len, "IO_EXTENTS takes one range, not %zu",
                      q->n_extents);
    if (!q->has_stripe_unit || q->stripe_unit == 0)
        return refuse(EINVAL, why, why_len, "IO_EXTENTS range without a stripe_unit");
    uint64_t off = q->extents[0]->offset, len = q->extents[0]->length;
    if (len == 0 || off % q->stripe_unit || len % q->stripe_unit)
        return refuse(EINVAL, why, why_len, "IO_EXTENTS range (offset %" PRIu64 " length %"
                      PRIu64 ") is not whole units of %u", off, len, q->stripe_unit);
    return 0;
}

/* READ data_units: a position in an n@k layout, whose stripe unit the
 * request gives (the read-ahead computes which units are data from them). */
static int check_data_units(uint16_t type, const Depfs__IoRequest *q, char *why, size_t why_len)
{
    const Depfs__DataUnits *d = q->data_units;
    if (!d)
        return 0;
    if (type != DEPFS__IO_OP__IO_READ)
        return refuse(EINVAL, why, why_len, "data_units is for a READ");
    if (!q->has_stripe_unit || q->stripe_unit == 0)
        return refuse(EINVAL, why, why_len, "data_units without a stripe_unit");
    if (d->n < 1 || d->n > LAYOUT_MAX_N || d->k < 1 || d->k > d->n || d->position >= d->n)
        return refuse(EINVAL, why, why_len, "data_units: position %u of %u@%u is in no layout",
                      d->position, d->n, d->k);
    return 0;
}

/* The bytes a READ returns or a WRITE carries. */
static int check_bulk(const ios_ctx *c, uint16_t type, uint64_t total, size_t bulk_len,
                      char *why, size_t why_len)
{
    if (bulk_len && type != DEPFS__IO_OP__IO_WRITE)
        return refuse(EINVAL, why, why_len, "unexpected bulk of %zu bytes", bulk_len);
    if (type == DEPFS__IO_OP__IO_READ && total > c->max_bulk_bytes)
        return refuse(EINVAL, why, why_len, "read of %" PRIu64 " bytes > max bulk %u", total,
                      c->max_bulk_bytes);
    if (type == DEPFS__IO_OP__IO_WRITE && total != bulk_len)
        return refuse(EINVAL, why, why_len, "bulk of %zu bytes != extents' %" PRIu64, bulk_len,
                      total);
    return 0;
}

/* A WRITE's block CRCs (block_crc.h): a block size, and one CRC per piece
 * of its extents; nothing of them on other ops. */
static int check_block_crcs(uint16_t type, const Depfs__IoRequest *q, char *why, size_t why_len)
{
    if (!q->has_crc_block && q->n_block_crcs == 0)
        return 0;
    if (type != DEPFS__IO_OP__IO_WRITE)
        return refuse(EINVAL, why, why_len, "block CRCs on a request that is no WRITE");
    if (!q->has_crc_block || !block_crc_size_valid(q->crc_block))
        return refuse(EINVAL, why, why_len, "crc_block %u is no block size (a power of two "
                      "from %u to %u)", q->has_crc_block ? q->crc_block : 0, BLOCK_CRC_MIN,
                      BLOCK_CRC_MAX);
    uint64_t pieces = 0; /* <= IOS_MAX_EXTENTS x (max_local / BLOCK_CRC_MIN + 1): no overflow */
    for (size_t i = 0; i < q->n_extents; i++)
        pieces += block_crc_pieces(q->extents[i]->offset, q->extents[i]->length, q->crc_block);
    if (q->n_block_crcs != pieces)
        return refuse(EINVAL, why, why_len, "%zu block CRCs for %" PRIu64 " pieces of %u bytes",
                      q->n_block_crcs, pieces, q->crc_block);
    return 0;
}

static int check_server_id(const ios_ctx *c, uint64_t id, const char *what, char *why,
                           size_t why_len)
{
    if (id > UINT32_MAX || (c->cfg && !config_ioserver(c->cfg, (uint32_t)id)))
        return refuse(EINVAL, why, why_len, "%s %" PRIu64 " is no I/O server of the cluster",
                      what, id);
    return 0;
}

static int check_servers(const ios_ctx *c, uint16_t type, const Depfs__IoRequest *q, char *why,
                         size_t why_len)
{
    if (q->n_down_servers > CONFIG_MAX_IOSERVERS)
        return refuse(EINVAL, why, why_len, "%zu servers named > max %u", q->n_down_servers,
                      CONFIG_MAX_IOSERVERS);
    for (size_t i = 0; i < q->n_down_servers; i++) {
        int rc = check_server_id(c, q->down_servers[i], "down_servers", why, why_len);
        if (rc < 0)
            return rc;
    }
    if (type != DEPFS__IO_OP__IO_DIRTY)
        return 0;
    /* IO_DIRTY's list, claim and clear name the server whose records are
     * meant in local_size (a rejoin's sync and a probe do not) */
    ios_dirty_op op = ios_dirty_op_of(q);
    if (op == IOS_DIRTY_UNKNOWN)
        return refuse(EINVAL, why, why_len, "unknown dirty action %d", (int)q->dirty_action);
    if (!ios_dirty_op_names_server(op))
        return 0;
    if (!q->has_local_size)
        return refuse(EINVAL, why, why_len, "local_size must name a server id");
    return check_server_id(c, q->local_size, "local_size", why, why_len);
}

/* Sizes and times of single fields. */
static int check_scalars(const ios_ctx *c, uint16_t type, const Depfs__IoRequest *q, char *why,
                         size_t why_len)
{
    char err[IOS_MESSAGE_BYTES];
    int rc = 0;
    if (names_a_file(type) && q->file_id == 0)
        return refuse(EINVAL, why, why_len, "file_id 0 names no file");
    if (q->has_capability && q->capability.len != AUTH_CAP_BYTES)
        return refuse(EINVAL, why, why_len, "capability of %zu bytes, not %u",
                      q->capability.len, AUTH_CAP_BYTES);
    if (q->has_cluster_epoch && (rc = wire_check_epoch(q->cluster_epoch, why, why_len)) < 0)
        return rc;
    if (q->has_stripe_unit && q->stripe_unit != 0 &&
        layout_check_su(q->stripe_unit, err, sizeof(err)) < 0)
        return refuse(EINVAL, why, why_len, "%s", err);
    if (type == DEPFS__IO_OP__IO_TRUNCATE) {
        uint64_t max = ios_strips_max_local_bytes(c->strips);
        if (!q->has_local_size)
            return refuse(EINVAL, why, why_len, "local_size missing");
        if (q->local_size > max)
            return refuse(EFBIG, why, why_len, "local_size %" PRIu64 " > %" PRIu64 ", the most "
                          "a strip file holds here", q->local_size, max);
    }
    if (q->has_unverified && q->unverified &&
        (type != DEPFS__IO_OP__IO_READ || !(q->has_ignore_locks && q->ignore_locks)))
        return refuse(EINVAL, why, why_len, "unverified is for a READ with ignore_locks");
    if (type == DEPFS__IO_OP__IO_SET_STATE && q->has_drain_ms && q->drain_ms > IOS_MAX_DRAIN_MS)
        return refuse(EINVAL, why, why_len, "drain_ms %u > max %u", q->drain_ms,
                      IOS_MAX_DRAIN_MS);
    return 0;
}

int ios_req_check(const ios_ctx *c, uint16_t type, const Depfs__IoRequest *q, const uint8_t *hdr,
                  size_t hdr_len, size_t bulk_len, char *why, size_t why_len)
{
    uint64_t total = 0;
    int rc = wire_check_strings(&depfs__io_request__descriptor, hdr, hdr_len, why, why_len);
    if (rc == 0)
        rc = check_scalars(c, type, q, why, why_len);
    if (rc == 0)
        rc = check_extents(q, ios_strips_max_local_bytes(c->strips), &total, why, why_len);
    if (rc == 0)
        rc = check_bulk(c, type, total, bulk_len, why, why_len);
    if (rc == 0)
        rc = check_lock(type, q->lock, why, why_len);
    if (rc == 0 && type == DEPFS__IO_OP__IO_WRITE)
        rc = check_write_in_lock(q, why, why_len);
    if (rc == 0)
        rc = check_extents_range(type, q, why, why_len);
    if (rc == 0)
        rc = check_block_crcs(type, q, why, why_len);
    if (rc == 0)
        rc = check_data_units(type, q, why, why_len);
    if (rc == 0)
        rc = check_servers(c, type, q, why, why_len);
    return rc;
}
