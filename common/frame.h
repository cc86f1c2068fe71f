/* frame.h - the on-wire frame every RPC message travels in.
 *
 *   [32-byte frame header][16-byte tag][hdr_len bytes protobuf header][bulk_len bytes raw bulk]
 *
 * The tag is there when FRAME_FLAG_TAG is set: on an authenticated
 * connection every frame after the handshake carries one (auth.h,
 * auth_tag_send: the frame header and the protobuf header, in sequence),
 * and no other frame may.
 *
 * Header fields are little-endian: magic u32, version u16, type u16,
 * flags u32, hdr_len u32, bulk_len u32, bulk_crc32c u32, req_id u64.
 * bulk_crc32c covers the bulk bytes (0 when bulk_len is 0). Lengths are
 * checked against limits before anything is allocated. */
#ifndef DEPFS_FRAME_H
#define DEPFS_FRAME_H
#include <stddef.h>
#include <stdint.h>

#define FRAME_MAGIC 0x46506544u /* "DePF" little-endian */
#define FRAME_VERSION 1u
#define FRAME_HEADER_BYTES 32u
#define FRAME_FLAG_REPLY 0x1u
#define FRAME_FLAG_TAG 0x2u
#define FRAME_FLAGS_KNOWN (FRAME_FLAG_REPLY | FRAME_FLAG_TAG)
#define FRAME_TAG_BYTES 16u

#define FRAME_DEFAULT_MAX_HEADER_BYTES (1u << 20)
#define FRAME_DEFAULT_MAX_BULK_BYTES (64u << 20)

typedef struct frame_limits {
    uint32_t max_header_bytes;
    uint32_t max_bulk_bytes; /* 0: a frame with any bulk is refused (the MDS) */
} frame_limits;

typedef struct frame_header {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t flags;
    uint32_t hdr_len;
    uint32_t bulk_len;
    uint32_t bulk_crc32c;
    uint64_t req_id;
} frame_header;

void frame_limits_default(frame_limits *l);
void frame_encode(const frame_header *h, uint8_t out[FRAME_HEADER_BYTES]);
/* 0, or -EPROTO (bad magic/version/flags/type 0) / -EMSGSIZE (a length over
 * its limit) with a static reason in *why. */
int frame_decode(const uint8_t in[FRAME_HEADER_BYTES], const frame_limits *lim, frame_header *h,
                 const char **why);

#endif
