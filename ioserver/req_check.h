/* req_check.h - the I/O server's boundary: before any op sees a decoded
 * IoRequest, every field it carries is within its bounds: a file id for
 * the ops on a file, extents (count, end within what a strip file may hold
 * here, a READ within the bulk limit, a WRITE's bulk their sum, a locked
 * WRITE inside its locked stripes), lock ranges, the stripe unit, the
 * truncate size, the cluster epoch, server ids (down_servers, IO_DIRTY's
 * server) and the drain wait. A refused request stores nothing:
 * EINVAL (malformed or meaningless), EFBIG (past what a strip file may
 * hold here: strips.h ios_strips_max_local_bytes) or ERANGE (an epoch past
 * WIRE_EPOCH_MAX). What needs the server's state (lock conflicts, server
 * states, dirty records) is each op's check. */
#ifndef DEPFS_IOS_REQ_CHECK_H
#define DEPFS_IOS_REQ_CHECK_H
#include <stddef.h>
#include <stdint.h>

#include "handlers.h"

/* Stripes of the largest strip file at the smallest stripe unit: a lock
 * starts below this (its count may go on past it, without overflow). */
#define IOS_MAX_STRIPES (IOS_STRIP_BYTES_CAP / LAYOUT_MIN_SU)

/* 0, or a negative errno with the reason in why (why_len bytes).
 * hdr[0..hdr_len) is the encoding q was decoded from, bulk_len the bytes
 * after it. */
int ios_req_check(const ios_ctx *c, uint16_t type, const Depfs__IoRequest *q, const uint8_t *hdr,
                  size_t hdr_len, size_t bulk_len, char *why, size_t why_len);

#endif
