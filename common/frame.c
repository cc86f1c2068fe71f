/* frame.c - owns the 32-byte on-wire frame header: little-endian encoding
 * and the checks a received header must pass before anything is allocated. */
#include "frame.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

/* byte offsets of each field inside the 32-byte header */
enum {
    OFF_MAGIC = 0,
    OFF_VERSION = 4,
    OFF_TYPE = 6,
    OFF_FLAGS = 8,
    OFF_HDR_LEN = 12,
    OFF_BULK_LEN = 16,
    OFF_BULK_CRC = 20,
    OFF_REQ_ID = 24,
};

_Static_assert(OFF_REQ_ID + 8 == FRAME_HEADER_BYTES, "frame header layout");

static void put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_le32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

void frame_limits_default(frame_limits *l)
{
    assert(l);
    l->max_header_bytes = FRAME_DEFAULT_MAX_HEADER_BYTES;
    l->max_bulk_bytes = FRAME_DEFAULT_MAX_BULK_BYTES;
}

void frame_encode(const frame_header *h, uint8_t out[FRAME_HEADER_BYTES])
{
    assert(h && out);
    put_le32(out + OFF_MAGIC, h->magic);
    put_le16(out + OFF_VERSION, h->version);
    put_le16(out + OFF_TYPE, h->type);
    put_le32(out + OFF_FLAGS, h->flags);
    put_le32(out + OFF_HDR_LEN, h->hdr_len);
    put_le32(out + OFF_BULK_LEN, h->bulk_len);
    put_le32(out + OFF_BULK_CRC, h->bulk_crc32c);
    put_le64(out + OFF_REQ_ID, h->req_id);
}

/* Returns 0 or the error, setting *why to a static string. */
static int frame_check(const frame_header *h, const frame_limits *lim, const char **why)
{
    if (h->magic != FRAME_MAGIC) {
        *why = "bad frame magic";
        return -EPROTO;
    }
    if (h->version != FRAME_VERSION) {
        *why = "unknown frame version";
        return -EPROTO;
    }
    if (h->flags & ~FRAME_FLAGS_KNOWN) {
        *why = "unknown frame flags";
        return -EPROTO;
    }
    if (h->type == 0) {
        *why = "frame type 0";
        return -EPROTO;
    }
    if (h->hdr_len > lim->max_header_bytes) {
        *why = "frame header length over limit";
        return -EMSGSIZE;
    }
    if (h->bulk_len > 0 && lim->max_bulk_bytes == 0) {
        *why = "frame carries bulk data, which this receiver never takes";
        return -EMSGSIZE;
    }
    if (h->bulk_len > lim->max_bulk_bytes) {
        *why = "frame bulk length over limit";
        return -EMSGSIZE;
    }
    return 0;
}

int frame_decode(const uint8_t in[FRAME_HEADER_BYTES], const frame_limits *lim, frame_header *h,
                 const char **why)
{
    const char *dummy = NULL;
    frame_limits def;

    assert(in && h);
    if (!why)
        why = &dummy;
    if (!lim) {
        frame_limits_default(&def);
        lim = &def;
    }
    *why = NULL;
    h->magic = get_le32(in + OFF_MAGIC);
    h->version = get_le16(in + OFF_VERSION);
    h->type = get_le16(in + OFF_TYPE);
    h->flags = get_le32(in + OFF_FLAGS);
    h->hdr_len = get_le32(in + OFF_HDR_LEN);
    h->bulk_len = get_le32(in + OFF_BULK_LEN);
    h->bulk_crc32c = get_le32(in + OFF_BULK_CRC);
    h->req_id = get_le64(in + OFF_REQ_ID);
    return frame_check(h, lim, why);
}
