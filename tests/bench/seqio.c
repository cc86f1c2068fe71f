/* seqio.c - sequential streaming write and read of one file, 1 MiB calls,
 * as an application (or dd bs=1M conv=fsync) would do it, timed inside.
 *
 *   seqio write PATH MIB    write MIB MiB of random bytes, fsync, close
 *   seqio read PATH         read to EOF
 *
 * Prints "MB_PER_S BYTES" (1 MB = 1e6 bytes). The write time runs from
 * open(O_CREAT|O_TRUNC) to the end of close() after fsync, so data the file
 * system still holds in a cache counts only once it is durable. The data is a
 * random 1 MiB block with each block's first 8 bytes set to its index, so no
 * two blocks are equal and no layer can skip zeros. The read side leaves
 * cache dropping to the caller (run-bench drops caches before reading). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SEQIO_BLOCK_BYTES (1024u * 1024u)
#define SEQIO_MAX_MIB (1024u * 1024u)
#define SEQIO_FILE_MODE 0644
#define SEQIO_NS_PER_S 1e9
#define SEQIO_BYTES_PER_MB 1e6

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / SEQIO_NS_PER_S;
}

static void fill_random(uint8_t *p, size_t len)
{
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (uint8_t)x;
    }
}

static int write_all(int fd, const uint8_t *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static int do_write(const char *path, unsigned mib, uint8_t *buf)
{
    fill_random(buf, SEQIO_BLOCK_BYTES);
    double t0 = now_s();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, SEQIO_FILE_MODE);
    if (fd < 0)
        goto fail;
    for (uint64_t b = 0; b < mib; b++) {
        memcpy(buf, &b, sizeof(b));
        if (write_all(fd, buf, SEQIO_BLOCK_BYTES) != 0)
            goto fail_fd;
    }
    if (fsync(fd) != 0)
        goto fail_fd;
    if (close(fd) != 0)
        goto fail;
    double secs = now_s() - t0;
    uint64_t bytes = (uint64_t)mib * SEQIO_BLOCK_BYTES;
    printf("%.1f %llu\n", (double)bytes / secs / SEQIO_BYTES_PER_MB, (unsigned long long)bytes);
    return 0;
fail_fd:;
    int err = errno;
    close(fd);
    errno = err;
fail:
    fprintf(stderr, "seqio: write %s: %s\n", path, strerror(errno));
    return 1;
}

static int do_read(const char *path, uint8_t *buf)
{
    uint64_t bytes = 0;
    double t0 = now_s();
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        goto fail;
    for (;;) {
        ssize_t n = read(fd, buf, SEQIO_BLOCK_BYTES);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = errno;
            close(fd);
            errno = err;
            goto fail;
        }
        if (n == 0)
            break;
        bytes += (uint64_t)n;
    }
    close(fd);
    double secs = now_s() - t0;
    printf("%.1f %llu\n", (double)bytes / secs / SEQIO_BYTES_PER_MB, (unsigned long long)bytes);
    return 0;
fail:
    fprintf(stderr, "seqio: read %s: %s\n", path, strerror(errno));
    return 1;
}

int main(int argc, char **argv)
{
    int rc = 2;
    uint8_t *buf = NULL;
    if (posix_memalign((void **)&buf, 4096, SEQIO_BLOCK_BYTES) != 0)
        return 1;
    if (argc == 4 && strcmp(argv[1], "write") == 0) {
        char *end;
        unsigned long mib = strtoul(argv[3], &end, 10);
        if (*end || mib == 0 || mib > SEQIO_MAX_MIB)
            goto usage;
        rc = do_write(argv[2], (unsigned)mib, buf);
    } else if (argc == 3 && strcmp(argv[1], "read") == 0) {
        rc = do_read(argv[2], buf);
    } else {
        goto usage;
    }
    free(buf);
    return rc;
usage:
    free(buf);
    fprintf(stderr, "usage: seqio write PATH MIB | seqio read PATH\n");
    return 2;
}
