/* fuzz_frame.c - libFuzzer target for the frame decoder (common/frame.c)
 * and what reads a frame's header bytes before any handler: the first 32
 * bytes are a frame header, decoded against limits taken from the input;
 * a header that decodes must encode back to the same bytes, one that does
 * not must say why with -EPROTO or -EMSGSIZE. The bytes after it are fed
 * to both request decoders and to the NUL walk of wire_check_strings. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "depfs.pb-c.h"
#include "frame.h"
#include "wire_check.h"

#define FUZZ_WHY_BYTES 256u
#define LIMIT_BYTES 4u /* a u32 of the input after the header, when present */

static void die(const char *why)
{
    fprintf(stderr, "fuzz_frame: %s\n", why);
    abort();
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void decode_header(const uint8_t *data, size_t size)
{
    frame_limits lim;
    frame_header h;
    const char *why = NULL;
    uint8_t again[FRAME_HEADER_BYTES];
    frame_limits_default(&lim);
    if (size >= FRAME_HEADER_BYTES + 2 * LIMIT_BYTES) { /* limits from the input, any value */
        lim.max_header_bytes = le32(data + FRAME_HEADER_BYTES);
        lim.max_bulk_bytes = le32(data + FRAME_HEADER_BYTES + LIMIT_BYTES);
    }
    int rc = frame_decode(data, &lim, &h, &why);
    if (rc == 0) {
        if (why)
            die("a good header with a reason");
        if (h.hdr_len > lim.max_header_bytes || h.bulk_len > lim.max_bulk_bytes)
            die("a length over its limit decoded");
        frame_encode(&h, again);
        if (memcmp(again, data, FRAME_HEADER_BYTES) != 0)
            die("decode + encode is not the identity");
    } else if ((rc != -EPROTO && rc != -EMSGSIZE) || !why || !why[0]) {
        die("a refusal without -EPROTO/-EMSGSIZE and a reason");
    }
}

static void decode_body(const uint8_t *p, size_t n)
{
    char why[FUZZ_WHY_BYTES];
    Depfs__MdsRequest *m = depfs__mds_request__unpack(NULL, n, p);
    if (m)
        depfs__mds_request__free_unpacked(m, NULL);
    Depfs__IoRequest *q = depfs__io_request__unpack(NULL, n, p);
    if (q)
        depfs__io_request__free_unpacked(q, NULL);
    int rc = wire_check_strings(&depfs__mds_request__descriptor, p, n, why, sizeof(why));
    if (rc != 0 && rc != -EINVAL)
        die("wire_check_strings: an errno other than EINVAL");
    (void)wire_check_strings(&depfs__mds_reply__descriptor, p, n, why, sizeof(why));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < FRAME_HEADER_BYTES)
        return 0;
    decode_header(data, size);
    decode_body(data + FRAME_HEADER_BYTES, size - FRAME_HEADER_BYTES);
    return 0;
}
