/* strip_csum.c - checksum sidecar format and block math (strip_csum.h). */
#include "strip_csum.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"

_Static_assert(sizeof(IOS_CSUM_MAGIC) - 1 == 8, "the magic fills 8 header bytes");
_Static_assert(IOS_CSUM_HEADER_BYTES % IOS_CSUM_ENTRY_BYTES == 0, "entries stay aligned");

static void put32(uint8_t *p, uint32_t v)
{
    for (unsigned i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int pread_all(int fd, uint8_t *buf, size_t len, uint64_t off, size_t *got_out)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(fd, buf + got, len - got, (off_t)(off + got));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    *got_out = got;
    return 0;
}

static int pwrite_all(int fd, const uint8_t *buf, size_t len, uint64_t off)
{
    size_t put = 0;
    while (put < len) {
        ssize_t r = pwrite(fd, buf + put, len - put, (off_t)(off + put));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            return -EIO;
        put += (size_t)r;
    }
    return 0;
}

int ios_csum_header_write(int cfd, const ios_csum_hdr *h)
{
    uint8_t raw[IOS_CSUM_HEADER_BYTES] = {0};
    memcpy(raw, IOS_CSUM_MAGIC, 8);
    put32(raw + 8, h->version);
    put32(raw + 12, h->block);
    put32(raw + 16, h->flags);
    return pwrite_all(cfd, raw, sizeof raw, 0);
}

int ios_csum_header_read(int cfd, ios_csum_hdr *h)
{
    uint8_t raw[IOS_CSUM_HEADER_BYTES];
    size_t got;
    int rc = pread_all(cfd, raw, sizeof raw, 0, &got);
    if (rc)
        return rc;
    if (got != sizeof raw || memcmp(raw, IOS_CSUM_MAGIC, 8) != 0)
        return -EBADMSG;
    h->version = get32(raw + 8);
    h->block = get32(raw + 12);
    h->flags = get32(raw + 16);
    if (h->version != IOS_CSUM_VERSION || !block_crc_size_valid(h->block))
        return -EBADMSG;
    return 0;
}

static uint64_t entry_off(uint64_t block)
{
    return IOS_CSUM_HEADER_BYTES + block * IOS_CSUM_ENTRY_BYTES;
}

/* Entries go through a bounded stack buffer, a chunk at a time. */
#define CSUM_IO_ENTRIES 512u

int ios_csum_entries_read(int cfd, uint64_t first, uint64_t n, ios_csum_entry *out)
{
    uint8_t raw[CSUM_IO_ENTRIES * IOS_CSUM_ENTRY_BYTES];
    for (uint64_t done = 0; done < n;) {
        uint64_t c = n - done < CSUM_IO_ENTRIES ? n - done : CSUM_IO_ENTRIES;
        size_t got;
        int rc = pread_all(cfd, raw, c * IOS_CSUM_ENTRY_BYTES, entry_off(first + done), &got);
        if (rc)
            return rc;
        memset(raw + got, 0, c * IOS_CSUM_ENTRY_BYTES - got); /* past the end: none */
        for (uint64_t i = 0; i < c; i++) {
            out[done + i].crc = get32(raw + i * IOS_CSUM_ENTRY_BYTES);
            out[done + i].tag = get32(raw + i * IOS_CSUM_ENTRY_BYTES + 4);
        }
        done += c;
    }
    return 0;
}

int ios_csum_entries_write(int cfd, uint64_t first, uint64_t n, const ios_csum_entry *in)
{
    uint8_t raw[CSUM_IO_ENTRIES * IOS_CSUM_ENTRY_BYTES];
    for (uint64_t done = 0; done < n;) {
        uint64_t c = n - done < CSUM_IO_ENTRIES ? n - done : CSUM_IO_ENTRIES;
        for (uint64_t i = 0; i < c; i++) {
            put32(raw + i * IOS_CSUM_ENTRY_BYTES, in[done + i].crc);
            put32(raw + i * IOS_CSUM_ENTRY_BYTES + 4, in[done + i].tag);
        }
        int rc = pwrite_all(cfd, raw, c * IOS_CSUM_ENTRY_BYTES, entry_off(first + done));
        if (rc)
            return rc;
        done += c;
    }
    return 0;
}

int ios_csum_covered_bytes(int cfd, const ios_csum_hdr *h, uint64_t *bytes)
{
    struct stat st;
    if (fstat(cfd, &st) != 0)
        return -errno;
    uint64_t size = (uint64_t)st.st_size;
    *bytes = size > IOS_CSUM_HEADER_BYTES
                 ? (size - IOS_CSUM_HEADER_BYTES) / IOS_CSUM_ENTRY_BYTES * h->block
                 : 0;
    return 0;
}

int ios_csum_entries_truncate(int cfd, uint64_t n_blocks)
{
    if (ftruncate(cfd, (off_t)entry_off(n_blocks)) != 0)
        return -errno;
    return 0;
}

ios_csum_entry ios_csum_of(const uint8_t *block, uint32_t len)
{
    return (ios_csum_entry){.crc = crc32c(0, block, len), .tag = IOS_CSUM_TAG_OK};
}

static bool all_zero(const uint8_t *p, uint32_t len)
{
    return len == 0 || (p[0] == 0 && memcmp(p, p + 1, len - 1) == 0);
}

bool ios_csum_matches(const ios_csum_hdr *h, const ios_csum_entry *e, const uint8_t *block,
                      uint32_t len)
{
    if (e->tag == IOS_CSUM_TAG_OK)
        return e->crc == crc32c(0, block, len);
    if (e->tag == 0 && e->crc == 0) /* no checksum: a hole, or not yet known */
        return !(h->flags & IOS_CSUM_COMPLETE) || all_zero(block, len);
    return false; /* IOS_CSUM_TAG_BAD, or an entry we did not write */
}
