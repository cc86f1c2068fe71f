/* test_client_data.c - the libdepfs data path against a real cluster:
 * depfs-mds and 8 depfs-ioserver daemons (from $DEPFS_BIN_DIR, default
 * build/bin) on 127.0.0.1, a temp config, real LevelDB, real strip files.
 *
 * Randomized unaligned writes/reads on several (n,k) layouts against an
 * in-memory model, then scrub must be clean; truncate into a stripe; a
 * corrupted parity byte on disk must be caught by scrub (and repaired);
 * two clients writing interleaved bytes of the same stripes; degraded reads
 * and writes with a server killed. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "depfs_admin.h"
#include "layout.h"
#include "recover.h"
#include "tests/lib/bg_write.h"
#include "tests/lib/cluster.h"
#include "tests/lib/rng.h"

#define T_SERVERS 8u
#define T_SU 4096u
#define T_FILE_MAX (512u * 1024)
#define T_TEST_TIMEOUT_S 60

static td_cluster g_cl;

static void cluster_up(void) { td_cluster_up(&g_cl, T_SERVERS, NULL); }
static void cluster_down(void) { td_cluster_down(&g_cl); }

static depfs_t *mount_fs(void) { return td_mount(&g_cl); }

/* ------------------------------------------------------------- helpers */

static size_t rnd_len(void)
{
    switch (rnd_below(4)) {
    case 0: return 1 + rnd_below(64);
    case 1: return 1 + rnd_below(3 * T_SU);
    case 2: return 1 + rnd_below(24 * T_SU);
    default: return 1 + rnd_below(T_FILE_MAX / 2);
    }
}

static void layout_of(depfs_fh_t *fh, layout *lay)
{
    depfs_layout_info li;
    ck_assert_int_eq(depfs_fh_layout(fh, &li), 0);
    memset(lay, 0, sizeof *lay);
    lay->n = li.n;
    lay->k = li.k;
    lay->su = li.stripe_unit;
    lay->version = li.version;
    lay->codec_version = li.codec_version;
    for (unsigned i = 0; i < li.n; i++)
        lay->servers[i] = li.servers[i];
}

static void scrub_clean(depfs_t *fs, uint64_t ino, uint64_t expect_stripes)
{
    depfs_scrub_report rep;
    int rc = depfs_scrub_ino(fs, ino, false, &rep);
    ck_assert_msg(rc == 0, "scrub: %s (%s)", strerror(-rc), depfs_last_error());
    ck_assert_msg(rep.stripes_bad == 0, "scrub: %" PRIu64 " bad stripes, first %" PRIu64,
                  rep.stripes_bad, rep.first_bad_stripe);
    ck_assert_uint_eq(rep.stripes_unreadable, 0);
    ck_assert_uint_eq(rep.units_checksum + rep.units_io_error + rep.units_missing +
                          rep.units_mismatch + rep.stripes_unlocated, 0);
    ck_assert_uint_eq(rep.stripes_checked, expect_stripes);
}

static void check_content(depfs_fh_t *fh, const uint8_t *model, uint64_t size)
{
    uint8_t *got = malloc(size + 100);
    ck_assert_ptr_nonnull(got);
    ssize_t n = depfs_read(fh, got, size + 100, 0);
    ck_assert_msg(n == (ssize_t)size, "read %zd, want %" PRIu64 " (%s)", n, size,
                  depfs_last_error());
    for (uint64_t i = 0; i < size; i++)
        if (got[i] != model[i])
            ck_abort_msg("byte %" PRIu64 " is %u, model %u", i, got[i], model[i]);
    free(got);
}

/* ---------------------------------------------------- randomized model */

static void random_rw(const char *label, int extra_flags, unsigned ops)
{
    seed_rng();
    depfs_t *fs = mount_fs();
    depfs_fh_t *fh = NULL;
    int rc = depfs_open(fs, label, O_CREAT | O_RDWR | extra_flags, 0644, &fh);
    ck_assert_msg(rc == 0, "open %s: %s (%s)", label, strerror(-rc), depfs_last_error());
    layout lay;
    layout_of(fh, &lay);
    uint8_t *model = calloc(1, T_FILE_MAX);
    uint8_t *tmp = malloc(T_FILE_MAX);
    ck_assert_ptr_nonnull(model);
    ck_assert_ptr_nonnull(tmp);
    uint64_t size = 0;
    for (unsigned i = 0; i < ops; i++) {
        uint64_t r = rnd_below(10);
        if (r < 6) { /* write */
            size_t len = rnd_len();
            uint64_t off = rnd_below(T_FILE_MAX - len + 1);
            if (rnd_below(4) == 0 && size + len <= T_FILE_MAX)
                off = size; /* sequential: exercises write-behind */
            rnd_fill(tmp, len);
            ssize_t n = depfs_write(fh, tmp, len, off);
            ck_assert_msg(n == (ssize_t)len, "write %zu@%" PRIu64 ": %zd (%s)", len, off, n,
                          depfs_last_error());
            memcpy(model + off, tmp, len);
            if (off + len > size)
                size = off + len;
        } else if (r < 9) { /* read */
            size_t len = rnd_len();
            uint64_t off = rnd_below(T_FILE_MAX);
            ssize_t n = depfs_read(fh, tmp, len, off);
            uint64_t want = off >= size ? 0 : (size - off < len ? size - off : len);
            ck_assert_msg(n == (ssize_t)want, "read %zu@%" PRIu64 ": %zd want %" PRIu64, len,
                          off, n, want);
            ck_assert_msg(memcmp(tmp, model + off, want) == 0, "read %zu@%" PRIu64 " differs",
                          len, off);
        } else {
            ck_assert_int_eq(depfs_flush(fh), 0);
        }
    }
    ck_assert_int_eq(depfs_fsync(fh), 0);
    check_content(fh, model, size);
    struct stat st;
    ck_assert_int_eq(depfs_fstat(fh, &st), 0);
    ck_assert_uint_eq((uint64_t)st.st_size, size);
    uint64_t ino = depfs_fh_ino(fh);
    ck_assert_int_eq(depfs_close(fh), 0);
    uint64_t sb = layout_stripe_bytes(&lay);
    scrub_clean(fs, ino, (size + sb - 1) / sb);
    /* a second client sees the same bytes after close */
    depfs_t *fs2 = mount_fs();
    const char *plain = strchr(label, ':') + 1;
    ck_assert_int_eq(depfs_open(fs2, plain, O_RDONLY, 0, &fh), 0);
    check_content(fh, model, size);
    ck_assert_int_eq(depfs_close(fh), 0);
    depfs_unmount(fs2);
    depfs_unmount(fs);
    free(tmp);
    free(model);
}

START_TEST(test_rw_8_8) { random_rw("depfs@8@8@4k:/rw88", 0, 400); }
END_TEST
START_TEST(test_rw_8_7) { random_rw("depfs@8@7@4k:/rw87", 0, 400); }
END_TEST
START_TEST(test_rw_8_6) { random_rw("depfs@8@6@4k:/rw86", 0, 500); }
END_TEST
START_TEST(test_rw_8_4) { random_rw("depfs@8@4@4k:/rw84", 0, 400); }
END_TEST
START_TEST(test_rw_4_2) { random_rw("depfs@4@2@4k:/rw42", 0, 500); }
END_TEST
START_TEST(test_rw_direct) { random_rw("depfs@5@3@1k:/rw53", O_DIRECT, 300); }
END_TEST

/* A large write and read spanning many rounds (bigger than one request). */
START_TEST(test_large_io)
{
    seed_rng();
    depfs_t *fs = mount_fs();
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, "depfs@6@4@4k:/large", O_CREAT | O_RDWR | O_DIRECT, 0644, &fh),
                     0);
    size_t len = 3u << 20;
    uint64_t off = 777;
    uint8_t *a = malloc(len), *b = malloc(len);
    rnd_fill(a, len);
    ck_assert_int_eq(depfs_write(fh, a, len, off), (ssize_t)len);
    memset(b, 0, len);
    ck_assert_int_eq(depfs_read(fh, b, len, off), (ssize_t)len);
    ck_assert(memcmp(a, b, len) == 0);
    ck_assert_int_eq(depfs_read(fh, b, 777, 0), 777);
    for (unsigned i = 0; i < 777; i++)
        ck_assert_uint_eq(b[i], 0); /* hole */
    uint64_t ino = depfs_fh_ino(fh);
    ck_assert_int_eq(depfs_close(fh), 0);
    scrub_clean(fs, ino, (len + off + 16383) / 16384);
    depfs_unmount(fs);
    free(a);
    free(b);
}
END_TEST

/* --------------------------------------------------------------- truncate */

START_TEST(test_truncate_mid_stripe)
{
    seed_rng();
    depfs_t *fs = mount_fs();
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, "depfs@6@4@4k:/trunc", O_CREAT | O_RDWR, 0644, &fh), 0);
    layout lay;
    layout_of(fh, &lay);
    uint64_t sb = layout_stripe_bytes(&lay); /* 16 KiB */
    size_t len = 100000;
    uint8_t *model = malloc(len), *got = malloc(len);
    rnd_fill(model, len);
    ck_assert_int_eq(depfs_write(fh, model, len, 0), (ssize_t)len);
    uint64_t cut = 2 * sb + 5000; /* into data unit 1 of stripe 2 */
    ck_assert_int_eq(depfs_ftruncate(fh, cut), 0);
    struct stat st;
    ck_assert_int_eq(depfs_fstat(fh, &st), 0);
    ck_assert_uint_eq((uint64_t)st.st_size, cut);
    uint64_t ino = depfs_fh_ino(fh);
    scrub_clean(fs, ino, 3);
    ck_assert_int_eq(depfs_read(fh, got, len, 0), (ssize_t)cut);
    ck_assert(memcmp(got, model, cut) == 0);
    /* grow again: everything past the cut reads as zeros */
    ck_assert_int_eq(depfs_ftruncate(fh, len), 0);
    ck_assert_int_eq(depfs_read(fh, got, len, 0), (ssize_t)len);
    ck_assert(memcmp(got, model, cut) == 0);
    for (uint64_t i = cut; i < len; i++)
        if (got[i] != 0)
            ck_abort_msg("byte %" PRIu64 " past the cut is %u", i, got[i]);
    /* a write far beyond: the gap is a hole */
    uint8_t one = 0xAB;
    ck_assert_int_eq(depfs_write(fh, &one, 1, 10 * sb + 3), 1);
    ck_assert_int_eq(depfs_close(fh), 0);
    scrub_clean(fs, ino, 11);
    /* truncate to a stripe boundary and to zero */
    ck_assert_int_eq(depfs_open(fs, "/trunc", O_RDWR, 0, &fh), 0);
    ck_assert_int_eq(depfs_ftruncate(fh, sb), 0);
    scrub_clean(fs, ino, 1);
    ck_assert_int_eq(depfs_read(fh, got, len, 0), (ssize_t)sb);
    ck_assert(memcmp(got, model, sb) == 0);
    ck_assert_int_eq(depfs_ftruncate(fh, 0), 0);
    ck_assert_int_eq(depfs_read(fh, got, len, 0), 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    scrub_clean(fs, ino, 0);
    depfs_unmount(fs);
    free(model);
    free(got);
}
END_TEST

/* ------------------------------------------------------ scrub must bite */

static void strip_path(char *out, size_t len, uint32_t server, uint64_t ino)
{
    td_strip_path(&g_cl, server, ino, out, len);
}

START_TEST(test_scrub_names_and_repairs_damaged_units)
{
    seed_rng();
    depfs_t *fs = mount_fs();
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, "depfs@4@2@4k:/corrupt", O_CREAT | O_RDWR, 0644, &fh), 0);
    layout lay;
    layout_of(fh, &lay);
    size_t len = 64 * 1024;
    uint8_t *data = malloc(len);
    rnd_fill(data, len);
    ck_assert_int_eq(depfs_write(fh, data, len, 0), (ssize_t)len);
    uint64_t ino = depfs_fh_ino(fh);
    ck_assert_int_eq(depfs_close(fh), 0);
    scrub_clean(fs, ino, len / layout_stripe_bytes(&lay));

    uint32_t psrv = layout_unit_server(&lay, 0, lay.k);
    char path[600];
    strip_path(path, sizeof path, psrv, ino);
    int fd = open(path, O_RDWR);
    ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
    uint8_t b;
    ck_assert_int_eq(pread(fd, &b, 1, 123), 1);
    b ^= 0x5a;
    ck_assert_int_eq(pwrite(fd, &b, 1, 123), 1);
    close(fd);

    /* the parity unit's checksum names it (the data still agrees) */
    depfs_scrub_report rep;
    ck_assert_int_eq(depfs_scrub_ino(fs, ino, false, &rep), 0);
    ck_assert_uint_eq(rep.units_checksum, 1);
    ck_assert_uint_eq(rep.findings_unrepaired, 1);
    ck_assert_uint_eq(rep.stripes_unreadable, 1); /* one unit of one stripe */
    ck_assert_uint_eq(rep.stripes_bad, 0);
    /* data is still read right (fault-free reads do not touch parity) */
    ck_assert_int_eq(depfs_open(fs, "/corrupt", O_RDONLY, 0, &fh), 0);
    uint8_t *got = malloc(len);
    ck_assert_int_eq(depfs_read(fh, got, len, 0), (ssize_t)len);
    ck_assert(memcmp(got, data, len) == 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    /* repair, then clean */
    ck_assert_int_eq(depfs_scrub_ino(fs, ino, true, &rep), 0);
    ck_assert_uint_eq(rep.units_checksum, 1);
    ck_assert_uint_eq(rep.units_repaired, 1);
    scrub_clean(fs, ino, len / layout_stripe_bytes(&lay));

    /* corrupting a data unit is caught as well */
    strip_path(path, sizeof path, layout_unit_server(&lay, 3, 1), ino);
    fd = open(path, O_RDWR);
    ck_assert(fd >= 0);
    b = 0;
    ck_assert_int_eq(pread(fd, &b, 1, 3 * lay.su + 7), 1);
    b ^= 1;
    ck_assert_int_eq(pwrite(fd, &b, 1, 3 * lay.su + 7), 1);
    close(fd);
    ck_assert_int_eq(depfs_scrub_ino(fs, ino, false, &rep), 0);
    ck_assert_uint_eq(rep.units_checksum, 1);
    ck_assert_int_eq(depfs_scrub_ino(fs, ino, true, &rep), 0);
    ck_assert_uint_eq(rep.units_repaired, 1);
    scrub_clean(fs, ino, len / layout_stripe_bytes(&lay));
    ck_assert_int_eq(depfs_open(fs, "/corrupt", O_RDONLY, 0, &fh), 0);
    ck_assert_int_eq(depfs_read(fh, got, len, 0), (ssize_t)len);
    ck_assert(memcmp(got, data, len) == 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    depfs_unmount(fs);
    free(data);
    free(got);
}
END_TEST

/* ------------------------------------------------ two writers, one stripe */

typedef struct t_writer {
    depfs_t *fs;
    unsigned id;
    unsigned rounds;
    size_t piece;
    int err;
} t_writer;

#define T_WRITERS 3u

/* Stripe locks the cluster's servers granted and refused so far. */
static void lock_counts(depfs_t *fs, uint64_t *granted, uint64_t *nacked)
{
    depfs_server_status ss[T_SERVERS];
    int ns = depfs_cluster_status(fs, ss, T_SERVERS);
    ck_assert_int_gt(ns, 0);
    *granted = *nacked = 0;
    for (int i = 0; i < ns && i < (int)T_SERVERS; i++) {
        *granted += ss[i].locks_granted;
        *nacked += ss[i].locks_nacked;
    }
}

/* Writer w owns bytes [i*piece, (i+1)*piece) with i % T_WRITERS == w: every
 * stripe is written by all writers, never the same bytes. */
static void *writer_main(void *arg)
{
    t_writer *w = arg;
    depfs_fh_t *fh = NULL;
    w->err = depfs_open(w->fs, "/shared", O_RDWR, 0, &fh);
    if (w->err)
        return NULL;
    uint8_t *buf = malloc(w->piece);
    for (unsigned r = 0; r < w->rounds && w->err == 0; r++) {
        for (unsigned i = w->id; (i + 1) * w->piece <= 3 * 12 * 1024; i += T_WRITERS) {
            memset(buf, (int)(r * 16 + w->id + 1), w->piece);
            ssize_t n = depfs_write(fh, buf, w->piece, i * w->piece);
            if (n != (ssize_t)w->piece) {
                w->err = n < 0 ? (int)n : -EIO;
                break;
            }
        }
    }
    int rc = depfs_close(fh);
    if (w->err == 0)
        w->err = rc;
    free(buf);
    return NULL;
}

START_TEST(test_concurrent_writers_parity)
{
    depfs_t *fs = mount_fs();
    depfs_fh_t *fh = NULL;
    /* 5@3@4k: a stripe is 12 KiB; pieces of 768 bytes cross units */
    ck_assert_int_eq(depfs_open(fs, "depfs@5@3@4k:/shared", O_CREAT | O_RDWR, 0644, &fh), 0);
    uint64_t ino = depfs_fh_ino(fh);
    ck_assert_int_eq(depfs_close(fh), 0);
    t_writer w[T_WRITERS];
    pthread_t th[T_WRITERS];
    for (unsigned i = 0; i < T_WRITERS; i++) {
        w[i] = (t_writer){.fs = mount_fs(), .id = i, .rounds = 15, .piece = 768};
        pthread_create(&th[i], NULL, writer_main, &w[i]);
    }
    for (unsigned i = 0; i < T_WRITERS; i++) {
        pthread_join(th[i], NULL);
        ck_assert_msg(w[i].err == 0, "writer %u: %s", i, strerror(-w[i].err));
    }
    scrub_clean(fs, ino, 3);
    uint64_t granted, nacked;
    lock_counts(fs, &granted, &nacked);
    fprintf(stderr, "concurrent writers: locks granted %" PRIu64 ", nacked %" PRIu64 "\n",
            granted, nacked);
    ck_assert_int_eq(depfs_open(fs, "/shared", O_RDONLY, 0, &fh), 0);
    uint8_t got[3 * 12 * 1024];
    ck_assert_int_eq(depfs_read(fh, got, sizeof got, 0), (ssize_t)sizeof got);
    for (size_t i = 0; i < sizeof got; i++) {
        unsigned owner = (unsigned)((i / 768) % T_WRITERS);
        ck_assert_msg(got[i] == (uint8_t)(14 * 16 + owner + 1), "byte %zu = %u", i, got[i]);
    }
    ck_assert_int_eq(depfs_close(fh), 0);
    for (unsigned i = 0; i < T_WRITERS; i++)
        depfs_unmount(w[i].fs);
    depfs_unmount(fs);
}
END_TEST

/* Small writes scattered inside one stripe, buffered together (the
 * write-behind's scatter set): its flush is ONE lock round (each server
 * locked once), the bytes between them keep what they held, and parity
 * matches. Before merging, each piece was a round of its own. */
START_TEST(test_scatter_in_one_stripe_is_one_round)
{
    enum { PIECES = 24, PIECE = 100, GAP = 150, AT = 8192 + 37 }; /* stripe 1 of 4@2@4k */
    seed_rng();
    depfs_t *fs = mount_fs();
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, "depfs@4@2@4k:/scatter1", O_CREAT | O_RDWR, 0644, &fh), 0);
    layout lay;
    layout_of(fh, &lay);
    ck_assert_uint_le(AT + PIECES * (PIECE + GAP), 2 * layout_stripe_bytes(&lay));
    size_t len = 3 * layout_stripe_bytes(&lay);
    uint8_t *model = malloc(len);
    rnd_fill(model, len);
    ck_assert_int_eq(depfs_write(fh, model, len, 0), (ssize_t)len);
    ck_assert_int_eq(depfs_fsync(fh), 0);
    uint64_t before, after, nacked;
    lock_counts(fs, &before, &nacked);
    unsigned order[PIECES];
    for (unsigned i = 0; i < PIECES; i++)
        order[i] = i;
    for (unsigned i = PIECES - 1; i > 0; i--) { /* in random order: the set sorts them */
        unsigned j = (unsigned)rnd_below(i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (unsigned i = 0; i < PIECES; i++) {
        size_t off = AT + (size_t)order[i] * (PIECE + GAP);
        memset(model + off, 0xa0 + (int)order[i], PIECE);
        ck_assert_int_eq(depfs_write(fh, model + off, PIECE, off), PIECE);
    }
    ck_assert_int_eq(depfs_flush(fh), 0);
    lock_counts(fs, &after, &nacked);
    ck_assert_msg(after - before <= 2 * lay.n, "%" PRIu64 " locks granted for one stripe's flush",
                  after - before);
    check_content(fh, model, len);
    uint64_t ino = depfs_fh_ino(fh);
    ck_assert_int_eq(depfs_close(fh), 0);
    scrub_clean(fs, ino, 3);
    depfs_unmount(fs);
    free(model);
}
END_TEST

/* depfs_flush_hand_partial and depfs_write_pieces (the ROMIO driver's
 * stripe gather): two clients hold interleaved pieces of the same stripes
 * and each one whole stripes of its own. Handing over writes the whole
 * stripes out at once and gives back every other buffered byte as pieces
 * within one stripe each; those of both clients, joined and written by
 * one client, cover their stripes whole: one lock round, no conflict, and
 * every byte as written once both flushed. */
static void check_handed(const depfs_piece *p, size_t n, uint64_t sb)
{
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_gt(p[i].len, 0);
        ck_assert_msg(p[i].off / sb == (p[i].off + p[i].len - 1) / sb,
                      "piece [%" PRIu64 ", +%" PRIu64 ") crosses a stripe", p[i].off, p[i].len);
        ck_assert(i == 0 || p[i].off >= p[i - 1].off + p[i - 1].len);
    }
}

START_TEST(test_hand_partial_then_write_pieces)
{
    enum { PIECE = 512, STRIPES = 6 };
    seed_rng();
    depfs_t *a = mount_fs(), *b = mount_fs(), *c = mount_fs();
    depfs_fh_t *fa, *fb, *fc;
    ck_assert_int_eq(depfs_open(a, "depfs@4@2@4k:/handed", O_CREAT | O_RDWR, 0644, &fa), 0);
    layout lay;
    layout_of(fa, &lay);
    const uint64_t sb = layout_stripe_bytes(&lay), len = STRIPES * sb;
    uint8_t *model = malloc(len), *back = malloc(len);
    ck_assert_ptr_nonnull(model);
    ck_assert_ptr_nonnull(back);
    rnd_fill(model, len);
    ck_assert_int_eq(depfs_write(fa, model, len, 0), (ssize_t)len); /* old bytes everywhere */
    ck_assert_int_eq(depfs_fsync(fa), 0);
    ck_assert_int_eq(depfs_open(b, "/handed", O_RDWR, 0, &fb), 0);
    ck_assert_int_eq(depfs_open(c, "/handed", O_RDONLY, 0, &fc), 0);

    /* a: the even pieces of stripe 4, then the run [sb/2, 3sb + 100)
     * (whole stripes 1 and 2; a run that a later write ends is written out
     * whole); b: the odd pieces of 4 and the rest of stripes 0 and 3 */
    rnd_fill(model, 5 * sb);
    for (uint64_t off = 4 * sb; off < 5 * sb; off += PIECE) {
        depfs_fh_t *w = ((off / PIECE) % 2 == 0) ? fa : fb;
        ck_assert_int_eq(depfs_write(w, model + off, PIECE, off), PIECE);
    }
    ck_assert_int_eq(depfs_write(fa, model + sb / 2, 3 * sb + 100 - sb / 2, sb / 2),
                     (ssize_t)(3 * sb + 100 - sb / 2));
    ck_assert_int_eq(depfs_write(fb, model, sb / 2, 0), (ssize_t)(sb / 2));
    ck_assert_int_eq(depfs_write(fb, model + 3 * sb + 100, sb - 100, 3 * sb + 100),
                     (ssize_t)(sb - 100));

    depfs_piece *pa = NULL, *pb = NULL;
    size_t na = 0, nb = 0;
    ck_assert_int_eq(depfs_flush_hand_partial(fa, &pa, &na), 0);
    ck_assert_int_eq(depfs_flush_hand_partial(fb, &pb, &nb), 0);
    check_handed(pa, na, sb);
    check_handed(pb, nb, sb);
    ck_assert_uint_eq(na, 2 + sb / PIECE / 2); /* stripe 0's and 3's part, 4's pieces */
    ck_assert_uint_eq(nb, 2 + sb / PIECE / 2);
    ck_assert_uint_eq(pa[0].off, sb / 2);
    ck_assert_uint_eq(pa[1].off, 3 * sb);
    /* stripes 1 and 2 are out already: another client reads them */
    ck_assert_int_eq(depfs_read(fc, back, 2 * sb, sb), (ssize_t)(2 * sb));
    ck_assert(memcmp(back, model + sb, 2 * sb) == 0);
    /* handed over: nothing is left to a's flush (or it would write them) */
    depfs_piece *none = (depfs_piece *)1;
    size_t nn = 1;
    ck_assert_int_eq(depfs_flush_hand_partial(fa, &none, &nn), 0);
    ck_assert_ptr_null(none);
    ck_assert_uint_eq(nn, 0);

    /* what the driver does: both clients' pieces, touching ones joined */
    depfs_piece all[2] = {
        {.off = 0, .len = sb, .data = model},
        {.off = 3 * sb, .len = 2 * sb, .data = model + 3 * sb},
    };
    depfs_fh_t *ro;
    ck_assert_int_eq(depfs_open(b, "/handed", O_RDONLY, 0, &ro), 0);
    ck_assert_int_eq(depfs_write_pieces(ro, all, 2), -EBADF);
    ck_assert_int_eq(depfs_close(ro), 0);
    depfs_piece bad[2] = {all[1], all[0]};
    ck_assert_int_eq(depfs_write_pieces(fa, bad, 2), -EINVAL); /* not ascending */
    bad[0] = all[0];
    bad[1] = (depfs_piece){.off = sb - 1, .len = 2, .data = model};
    ck_assert_int_eq(depfs_write_pieces(fa, bad, 2), -EINVAL); /* overlapping */
    bad[1].data = NULL;
    ck_assert_int_eq(depfs_write_pieces(fa, bad, 2), -EFAULT);
    uint64_t granted0, nacked0, granted1, nacked1;
    lock_counts(a, &granted0, &nacked0);
    ck_assert_int_eq(depfs_write_pieces(fa, all, 2), 0);
    lock_counts(a, &granted1, &nacked1);
    ck_assert_msg(granted1 - granted0 <= lay.n, "%" PRIu64 " locks granted for one round",
                  granted1 - granted0);
    ck_assert_uint_eq(nacked1 - nacked0, 0);
    depfs_pieces_free(pa, na);
    depfs_pieces_free(pb, nb);

    ck_assert_int_eq(depfs_fsync(fa), 0);
    ck_assert_int_eq(depfs_fsync(fb), 0);
    ck_assert_int_eq(depfs_close(fc), 0);
    ck_assert_int_eq(depfs_open(c, "/handed", O_RDONLY, 0, &fc), 0);
    check_content(fc, model, len);
    uint64_t ino = depfs_fh_ino(fc);
    ck_assert_int_eq(depfs_close(fc), 0);
    ck_assert_int_eq(depfs_close(fb), 0);
    ck_assert_int_eq(depfs_close(fa), 0);
    scrub_clean(a, ino, STRIPES);
    depfs_unmount(c);
    depfs_unmount(b);
    depfs_unmount(a);
    free(back);
    free(model);
}
END_TEST

/* Two small writes far apart in one stripe, buffered together: each moves
 * only its own bytes. Merged over their span (as before), the bytes
 * between them were pre-read and written back, and the parity ranges
 * widened to whole units: 4 KiB random writes moved ~190 KB each. In a
 * sparse stripe that shows as blocks allocated between the pieces. */
START_TEST(test_scatter_far_apart_moves_only_its_bytes)
{
    enum { PIECE = 100, BLOCK = 4096, A = 1000, B_IN_UNIT = 34464 };
    seed_rng();
    depfs_t *fs = mount_fs();
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, "depfs@4@2@64k:/far", O_CREAT | O_RDWR, 0644, &fh), 0);
    layout lay;
    layout_of(fh, &lay);
    size_t sb = layout_stripe_bytes(&lay), len = 2 * sb;
    size_t b = lay.su + B_IN_UNIT; /* unit 1 of stripe 0 */
    uint8_t *model = calloc(1, len);
    ck_assert_ptr_nonnull(model);
    ck_assert_int_eq(depfs_ftruncate(fh, len), 0); /* two stripes, all hole */
    /* A and B end short runs: both land in the scatter set, flushed
     * together; C (stripe 1) is the run the flush writes after them */
    const size_t at[] = {A, b, sb};
    for (unsigned i = 0; i < 3; i++) {
        rnd_fill(model + at[i], PIECE);
        ck_assert_int_eq(depfs_write(fh, model + at[i], PIECE, at[i]), PIECE);
    }
    ck_assert_int_eq(depfs_flush(fh), 0);
    check_content(fh, model, len);
    uint64_t ino = depfs_fh_ino(fh);
    /* stripe 0 of every unit's strip (local [0, su)): data in the block at
     * A (unit 0, the parity) or at B_IN_UNIT (unit 1, the parity) only */
    for (unsigned u = 0; u < lay.n; u++) {
        char path[512];
        strip_path(path, sizeof path, layout_unit_server(&lay, 0, u), ino);
        int fd = open(path, O_RDONLY);
        ck_assert_int_ge(fd, 0);
        off_t after_a = lseek(fd, BLOCK, SEEK_DATA);
        off_t after_b = lseek(fd, (B_IN_UNIT / BLOCK + 1) * BLOCK, SEEK_DATA);
        close(fd);
        ck_assert_msg(after_a < 0 || after_a >= (B_IN_UNIT / BLOCK) * BLOCK,
                      "unit %u: data at %jd, between the two pieces", u, (intmax_t)after_a);
        ck_assert_msg(after_b < 0 || after_b >= (off_t)lay.su,
                      "unit %u: data at %jd, after the second piece", u, (intmax_t)after_b);
    }
    ck_assert_int_eq(depfs_close(fh), 0);
    scrub_clean(fs, ino, 2);
    depfs_unmount(fs);
    free(model);
}
END_TEST

/* ------------------------------------------------------ degraded mode */

START_TEST(test_degraded_read_write)
{
    seed_rng();
    depfs_t *fs = mount_fs();
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, "depfs@6@4@4k:/degraded", O_CREAT | O_RDWR, 0644, &fh), 0);
    layout lay;
    layout_of(fh, &lay);
    size_t len = 200000;
    uint8_t *model = malloc(len), *got = malloc(len), *tmp = malloc(len);
    rnd_fill(model, len);
    ck_assert_int_eq(depfs_write(fh, model, len, 0), (ssize_t)len);
    ck_assert_int_eq(depfs_close(fh), 0);
    uint64_t ino;
    struct stat st;
    ck_assert_int_eq(depfs_resolve(fs, "/degraded", &ino, &st), 0);

    /* lose two servers of the layout (n-k = 2) */
    td_ios_kill(&g_cl, lay.servers[1]);
    td_ios_kill(&g_cl, lay.servers[4]);
    ck_assert_int_eq(depfs_open(fs, "/degraded", O_RDWR, 0, &fh), 0);
    ck_assert_int_eq(depfs_read(fh, got, len, 0), (ssize_t)len);
    ck_assert(memcmp(got, model, len) == 0);
    /* unaligned reads decode just the needed ranges */
    for (unsigned i = 0; i < 40; i++) {
        size_t l = 1 + rnd_below(30000);
        uint64_t off = rnd_below(len - l);
        ck_assert_int_eq(depfs_read(fh, got, l, off), (ssize_t)l);
        ck_assert_msg(memcmp(got, model + off, l) == 0, "degraded read %zu@%" PRIu64, l, off);
    }
    /* degraded writes: partial stripes of every kind, then read back */
    for (unsigned i = 0; i < 30; i++) {
        size_t l = 1 + rnd_below(20000);
        uint64_t off = rnd_below(len - l);
        rnd_fill(tmp, l);
        ck_assert_int_eq(depfs_write(fh, tmp, l, off), (ssize_t)l);
        memcpy(model + off, tmp, l);
    }
    ck_assert_int_eq(depfs_flush(fh), 0);
    ck_assert_int_eq(depfs_read(fh, got, len, 0), (ssize_t)len);
    ck_assert(memcmp(got, model, len) == 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    /* a third loss is too many */
    depfs_scrub_report rep;
    ck_assert_int_eq(depfs_scrub_ino(fs, ino, false, &rep), 0);
    ck_assert_uint_gt(rep.stripes_unreadable, 0);
    td_ios_kill(&g_cl, lay.servers[2]);
    ck_assert_int_eq(depfs_open(fs, "/degraded", O_RDONLY | O_DIRECT, 0, &fh), 0);
    ck_assert_int_lt(depfs_read(fh, got, len, 0), 0);
    depfs_close(fh);
    depfs_unmount(fs);
    free(model);
    free(got);
    free(tmp);
}
END_TEST

/* Wait until every thread of pid is stopped (SIGSTOP is asynchronous). */
static void wait_stopped(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    for (int tries = 0; tries < 500; tries++) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "grep -L '^State:.*T (stopped)' %s/*/status | grep -q .", path);
        if (system(cmd) != 0)
            return; /* no thread left that is not stopped */
        usleep(2000);
    }
    ck_abort_msg("pid %d did not stop", (int)pid);
}

/* An MPI rank's share of an interleaved file: piece bytes every stride,
 * from piece on (not where a sequential reader would start), in a new file
 * of file_bytes at path (a label). After `seen` reads the stride has
 * repeated; then every server of the file is stopped, and the next `ahead`
 * pieces must still read, at once and right, from the read-ahead window. */
static void strided_reads_ahead(const char *path, uint64_t file_bytes, uint64_t piece,
                                    uint64_t stride, unsigned seen, unsigned ahead)
{
    seed_rng();
    depfs_t *fs = mount_fs();
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, path, O_CREAT | O_RDWR, 0644, &fh), 0);
    layout lay;
    layout_of(fh, &lay);
    ck_assert_uint_le((seen + ahead) * stride + piece, file_bytes);
    uint8_t *model = malloc(file_bytes), *got = malloc(piece);
    rnd_fill(model, file_bytes);
    ck_assert_int_eq(depfs_write(fh, model, file_bytes, 0), (ssize_t)file_bytes);
    ck_assert_int_eq(depfs_close(fh), 0);
    const char *name = strchr(path, ':') ? strchr(path, ':') + 1 : path;
    ck_assert_int_eq(depfs_open(fs, name, O_RDONLY, 0, &fh), 0);
    for (unsigned i = 0; i < seen; i++) {
        ck_assert_int_eq(depfs_read(fh, got, piece, piece + i * stride), (ssize_t)piece);
        ck_assert(memcmp(got, model + piece + i * stride, piece) == 0);
    }
    for (unsigned p = 0; p < lay.n; p++) {
        ck_assert_int_eq(kill(g_cl.ios[lay.servers[p]], SIGSTOP), 0);
        wait_stopped(g_cl.ios[lay.servers[p]]);
    }
    unsigned good = 0;
    for (unsigned i = seen; i < seen + ahead; i++) {
        ssize_t n = depfs_read(fh, got, piece, piece + i * stride);
        if (n != (ssize_t)piece || memcmp(got, model + piece + i * stride, piece) != 0)
            break; /* it went to a stopped server (or read wrong bytes) */
        good++;
    }
    for (unsigned p = 0; p < lay.n; p++)
        ck_assert_int_eq(kill(g_cl.ios[lay.servers[p]], SIGCONT), 0);
    ck_assert_msg(good == ahead, "only %u of %u strided pieces came from the read-ahead window",
                  good, ahead);
    ck_assert_int_eq(depfs_close(fh), 0);
    depfs_unmount(fs);
    free(model);
    free(got);
}

/* Small pieces: the window is 8 whole stripes (from piece SEEN-1's stripe,
 * 0), which cover every piece read. Before stride detection each piece
 * went to the servers. */
START_TEST(test_strided_read_ahead)
{
    enum { FILE_BYTES = 256 * 1024, PIECE = 1000, STRIDE = 3000, SEEN = 3, AHEAD = 18 };
    strided_reads_ahead("depfs@4@2@4k:/strided", FILE_BYTES, PIECE, STRIDE, SEEN, AHEAD);
}
END_TEST

/* Large pieces far apart (an IO500 ior-hard rank's share, scaled): the
 * window holds only the rank's pieces, so it reaches AHEAD pieces over
 * 4 MiB of a 4@2@64k file, where 8 whole stripes (1 MiB, the window's
 * buffer) held 4 of them and fetched 3 other ranks' bytes for each. */
START_TEST(test_strided_read_ahead_gathers_pieces)
{
    enum { PIECE = 16 * 1024, STRIDE = 256 * 1024, SEEN = 3, AHEAD = 16 };
    enum { FILE_BYTES = (SEEN + AHEAD + 1) * STRIDE };
    strided_reads_ahead("depfs@4@2@64k:/gathered", FILE_BYTES, PIECE, STRIDE, SEEN, AHEAD);
}
END_TEST

/* A gathered window is fault-free only: with a server of the file dead
 * (first unknown to the client, so the gathered READ fails; then known
 * down) the strided reads take whole windows, which decode around it, and
 * every piece reads right. */
START_TEST(test_strided_gather_with_a_dead_server)
{
    enum { PIECE = 16 * 1024, STRIDE = 256 * 1024, PIECES = 24 };
    enum { FILE_BYTES = (PIECES + 1) * STRIDE };
    seed_rng();
    depfs_t *fs = mount_fs();
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, "depfs@4@2@64k:/gather-dead", O_CREAT | O_RDWR, 0644, &fh), 0);
    layout lay;
    layout_of(fh, &lay);
    uint8_t *model = malloc(FILE_BYTES), got[PIECE];
    rnd_fill(model, FILE_BYTES);
    ck_assert_int_eq(depfs_write(fh, model, FILE_BYTES, 0), FILE_BYTES);
    ck_assert_int_eq(depfs_close(fh), 0);
    ck_assert_int_eq(depfs_open(fs, "/gather-dead", O_RDONLY, 0, &fh), 0);
    for (unsigned i = 0; i < 2; i++) /* the stride, seen once */
        ck_assert_int_eq(depfs_read(fh, got, PIECE, (uint64_t)i * STRIDE), PIECE);
    td_ios_kill(&g_cl, lay.servers[0]);
    for (unsigned i = 2; i < PIECES; i++) {
        ck_assert_int_eq(depfs_read(fh, got, PIECE, (uint64_t)i * STRIDE), PIECE);
        ck_assert_msg(memcmp(got, model + (size_t)i * STRIDE, PIECE) == 0,
                      "piece %u read wrong with server %u dead", i, lay.servers[0]);
    }
    ck_assert_int_eq(depfs_close(fh), 0);
    depfs_unmount(fs);
    free(model);
}
END_TEST

/* Connections this process holds to 127.0.0.1:port, established (ss). */
static unsigned conns_to(unsigned port)
{
    char cmd[160], line[512];
    snprintf(cmd, sizeof cmd, "ss -Htnp state established '( dport = :%u )' 2>/dev/null", port);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    char mine[32];
    snprintf(mine, sizeof mine, "pid=%d,", (int)getpid());
    unsigned n = 0;
    while (fgets(line, sizeof line, p))
        n += strstr(line, mine) != NULL;
    pclose(p);
    return n;
}

typedef struct first_read {
    depfs_fh_t *fh;
    uint8_t *buf;
    size_t len;
    ssize_t got;
    volatile bool done;
} first_read;

static void *first_read_main(void *arg)
{
    first_read *r = arg;
    r->got = depfs_read(r->fh, r->buf, r->len, 0);
    r->done = true;
    return NULL;
}

/* A new client's first batch makes its connections at once
 * (dc_servers_connect). Two servers of its file are stopped: the first
 * read, which needs every server, waits on both handshakes together (each
 * until its deadline), not one after the other: while it waits, this
 * process holds a connection to both at the same moment, which one at a
 * time never shows. Then it decodes around them. */
START_TEST(test_first_batch_connects_at_once)
{
    enum { LEN = 6 * 64 * 1024 * 4, POLLS = 400, POLL_US = 10000 };
    seed_rng();
    depfs_t *fs = mount_fs();
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, "depfs@8@6@64k:/first", O_CREAT | O_RDWR, 0644, &fh), 0);
    layout lay;
    layout_of(fh, &lay);
    uint8_t *model = malloc(LEN), *got = malloc(LEN);
    rnd_fill(model, LEN);
    ck_assert_int_eq(depfs_write(fh, model, LEN, 0), LEN);
    ck_assert_int_eq(depfs_close(fh), 0);
    depfs_unmount(fs); /* its connections go: the next client starts with none */
    unsigned stopped[2] = {lay.servers[0], lay.servers[1]};
    for (unsigned i = 0; i < 2; i++) {
        ck_assert_int_eq(kill(g_cl.ios[stopped[i]], SIGSTOP), 0);
        wait_stopped(g_cl.ios[stopped[i]]);
    }
    fs = mount_fs();
    ck_assert_int_eq(depfs_open(fs, "/first", O_RDONLY, 0, &fh), 0);
    first_read r = {.fh = fh, .buf = got, .len = LEN};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, first_read_main, &r), 0);
    bool both = false;
    for (unsigned i = 0; i < POLLS && !r.done && !both; i++) {
        both = conns_to(g_cl.ports[1 + stopped[0]]) > 0 && conns_to(g_cl.ports[1 + stopped[1]]) > 0;
        usleep(POLL_US);
    }
    pthread_join(th, NULL);
    for (unsigned i = 0; i < 2; i++)
        ck_assert_int_eq(kill(g_cl.ios[stopped[i]], SIGCONT), 0);
    ck_assert_msg(both, "the handshakes with the two stopped servers never overlapped");
    ck_assert_int_eq(r.got, LEN);
    ck_assert(memcmp(got, model, LEN) == 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    depfs_unmount(fs);
    free(model);
    free(got);
}
END_TEST

/* depfs_fh_connect (the ROMIO driver's open): a fresh client holds a
 * connection to every server of the file before its first read. */
START_TEST(test_fh_connect_before_io)
{
    enum { LEN = 64 * 1024 };
    depfs_t *fs = mount_fs();
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, "depfs@8@6@64k:/connect", O_CREAT | O_RDWR, 0644, &fh), 0);
    layout lay;
    layout_of(fh, &lay);
    uint8_t buf[LEN];
    memset(buf, 0x5a, sizeof buf);
    ck_assert_int_eq(depfs_write(fh, buf, LEN, 0), LEN);
    ck_assert_int_eq(depfs_close(fh), 0);
    depfs_unmount(fs);
    fs = mount_fs();
    ck_assert_int_eq(depfs_open(fs, "/connect", O_RDONLY, 0, &fh), 0);
    for (unsigned p = 0; p < lay.n; p++) /* open alone talks to the MDS only */
        ck_assert_uint_eq(conns_to(g_cl.ports[1 + lay.servers[p]]), 0);
    ck_assert_int_eq(depfs_fh_connect(fh), 0);
    for (unsigned p = 0; p < lay.n; p++)
        ck_assert_msg(conns_to(g_cl.ports[1 + lay.servers[p]]) == 1,
                      "no connection to server %u after depfs_fh_connect", lay.servers[p]);
    ck_assert_int_eq(depfs_read(fh, buf, LEN, 0), LEN);
    ck_assert_int_eq(depfs_close(fh), 0);
    depfs_unmount(fs);
}
END_TEST

/* Bytes of file ino on every server of lay, each at least `want` (its
 * strip file's size), within 10 s. */
static bool strips_hold(const layout *lay, uint64_t ino, off_t want)
{
    for (int tries = 0; tries < 500; tries++) {
        unsigned full = 0;
        for (unsigned p = 0; p < lay->n; p++) {
            char path[512];
            struct stat st;
            strip_path(path, sizeof path, lay->servers[p], ino);
            if (stat(path, &st) == 0 && st.st_size >= want)
                full++;
        }
        if (full == lay->n)
            return true;
        usleep(20000);
    }
    return false;
}

/* A streaming writer does not wait for the servers: the write that fills
 * a run (4 MiB here, this layout's run capacity) hands it to the
 * background flight and returns, even with every server of the file
 * stopped; the run lands once they resume, before anything flushes it, and
 * fsync, the read-back and scrub find it whole. Before the flight took
 * runs, that write waited out the stopped servers and failed. */
START_TEST(test_run_flight)
{
    enum { RUN = 4 << 20, CHUNK = 256 << 10 };
    seed_rng();
    depfs_t *fs = mount_fs();
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, "depfs@4@2@4k:/runflight", O_CREAT | O_RDWR, 0644, &fh), 0);
    layout lay;
    layout_of(fh, &lay);
    uint64_t ino = depfs_fh_ino(fh);
    uint64_t sb = layout_stripe_bytes(&lay);
    ck_assert_uint_eq(RUN % sb, 0);
    uint8_t *model = malloc(RUN);
    ck_assert_ptr_nonnull(model);
    rnd_fill(model, RUN);
    for (unsigned p = 0; p < lay.n; p++) {
        ck_assert_int_eq(kill(g_cl.ios[lay.servers[p]], SIGSTOP), 0);
        wait_stopped(g_cl.ios[lay.servers[p]]);
    }
    ssize_t n = CHUNK;
    uint64_t off = 0;
    for (; off < RUN && n == CHUNK; off += CHUNK)
        n = depfs_write(fh, model + off, CHUNK, off);
    for (unsigned p = 0; p < lay.n; p++)
        ck_assert_int_eq(kill(g_cl.ios[lay.servers[p]], SIGCONT), 0);
    ck_assert_msg(n == CHUNK, "write at %" PRIu64 " returned %zd (%s): it waited on the stopped "
                  "servers", off - CHUNK, n, depfs_last_error());
    ck_assert_msg(strips_hold(&lay, ino, (off_t)(RUN / lay.k)),
                  "the full run did not leave the client before a flush");
    ck_assert_int_eq(depfs_fsync(fh), 0);
    check_content(fh, model, RUN);
    ck_assert_int_eq(depfs_close(fh), 0);
    scrub_clean(fs, ino, RUN / sb);
    depfs_unmount(fs);
    free(model);
}
END_TEST

/* /NAME created 4@2@4k and opened twice: *fh to write, *other to read;
 * *lay its layout. */
static void open_writer_and_other(depfs_t *fs, const char *name, depfs_fh_t **fh,
                                  depfs_fh_t **other, layout *lay)
{
    char path[64];
    snprintf(path, sizeof path, "depfs@4@2@4k:/%s", name);
    *fh = *other = NULL;
    ck_assert_int_eq(depfs_open(fs, path, O_CREAT | O_RDWR, 0644, fh), 0);
    ck_assert_int_eq(depfs_open(fs, strchr(path, ':') + 1, O_RDONLY, 0, other), 0);
    layout_of(*fh, lay);
}

/* A background flight that failed is told to every handle open on the
 * file, and a flush reports it without taking it: the kernel sends a FLUSH
 * on the writer's handle when a child it forked closes its copy of the
 * descriptor (exec, exit), and that FLUSH took the error, so the writer's
 * own fsync returned 0 over bytes that never landed (the fault campaign,
 * seed 4901: zeros read back after an acknowledged fsync). An fsync takes
 * it (engines.h dc_wb_flush). */
START_TEST(test_flight_error_not_taken_by_a_flush)
{
    enum { RUN = 4 << 20, CHUNK = 256 << 10 };
    seed_rng();
    depfs_t *fs = mount_fs();
    depfs_fh_t *fh, *other;
    layout lay;
    open_writer_and_other(fs, "flighterr", &fh, &other, &lay);
    uint8_t *model = malloc(RUN);
    ck_assert_ptr_nonnull(model);
    rnd_fill(model, RUN);
    unsigned killed = lay.n - lay.k + 1; /* more than n-k: the flight fails */
    for (unsigned p = 0; p < killed; p++)
        td_ios_kill(&g_cl, lay.servers[p]);
    for (uint64_t off = 0; off < RUN; off += CHUNK) /* the last one hands the run over */
        ck_assert_int_eq(depfs_write(fh, model + off, CHUNK, off), CHUNK);
    ck_assert_int_eq(depfs_flush(fh), -EIO);    /* a forked child's close: told ... */
    ck_assert_int_eq(depfs_flush(fh), -EIO);    /* ... and not taken from the writer */
    ck_assert_int_eq(depfs_flush(other), -EIO); /* every handle open then is told */
    ck_assert_int_eq(depfs_fsync(fh), -EIO); /* takes it: told once per fsync */
    ck_assert_int_eq(depfs_close(other), -EIO);
    ck_assert_int_eq(depfs_close(fh), 0);
    depfs_unmount(fs);
    free(model);
}
END_TEST

/* A write that has to write buffered bytes out first (the run its stream
 * left, a scatter set it overlaps) and fails there is told the failure;
 * so is every handle at its next flush, fsync or close, as for a
 * background flight: those bytes were acknowledged by earlier writes.
 * Before, only that write heard of it, and the fsync after it returned 0
 * over bytes that never landed. */
START_TEST(test_write_out_error_in_a_write_is_kept)
{
    enum { RUN = 64 << 10, FAR = 2 << 20, SMALL = 100, GAP = 20000, BIG = 16 << 10 };
    seed_rng();
    depfs_t *fs = mount_fs();
    depfs_fh_t *fh, *other;
    layout lay;
    open_writer_and_other(fs, "wouterr", &fh, &other, &lay);
    ck_assert_uint_ge(RUN, layout_stripe_bytes(&lay)); /* ends written out, not scattered */
    ck_assert_uint_lt(SMALL, layout_stripe_bytes(&lay));
    ck_assert_uint_ge(BIG, layout_stripe_bytes(&lay));
    uint8_t *model = malloc(RUN);
    ck_assert_ptr_nonnull(model);
    rnd_fill(model, RUN);
    ck_assert_uint_ge(RUN, BIG);
    ck_assert_int_eq(depfs_write(fh, model, RUN, 0), RUN); /* buffered: a run */
    unsigned killed = lay.n - lay.k + 1; /* more than n-k: write-outs fail */
    for (unsigned p = 0; p < killed; p++)
        td_ios_kill(&g_cl, lay.servers[p]);
    /* a stream elsewhere: the run is written out first, and fails */
    ck_assert_int_lt(depfs_write(fh, model, SMALL, FAR), 0);
    ck_assert_int_eq(depfs_flush(fh), -EIO);    /* the run's bytes are gone: told */
    ck_assert_int_eq(depfs_flush(other), -EIO); /* to every handle */
    ck_assert_int_eq(depfs_fsync(fh), -EIO);    /* taken */
    /* a scatter set, then a write over it: the set is written out first */
    ck_assert_int_eq(depfs_write(fh, model, SMALL, FAR), SMALL);
    ck_assert_int_eq(depfs_write(fh, model, SMALL, FAR + GAP), SMALL);
    ck_assert_int_lt(depfs_write(fh, model, BIG, FAR - SMALL), 0);
    ck_assert_int_eq(depfs_flush(fh), -EIO); /* a failure since the fsync */
    ck_assert_int_eq(depfs_close(other), -EIO);
    ck_assert_int_eq(depfs_close(fh), -EIO);
    depfs_unmount(fs);
    free(model);
}
END_TEST

/* A server that stops answering (SIGSTOP: connections still open, no
 * replies): reads time out, retry once, mark it failed and decode; writes
 * go to the survivors, and are acknowledged once the server is out of
 * service (here: it resumes and sees it did not run, so it refuses reads
 * and its stale unit is never read; with depfs-recovery running, the
 * missed heartbeats mark it down first); its rejoin rebuilds it. */
#define T_HUNG_PROBE_MS 30000u
START_TEST(test_hung_server)
{
    seed_rng();
    depfs_t *fs = mount_fs();
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, "depfs@4@2@4k:/hung", O_CREAT | O_RDWR, 0644, &fh), 0);
    layout lay;
    layout_of(fh, &lay);
    size_t len = 64 * 1024;
    uint8_t *model = malloc(len), *got = malloc(len);
    rnd_fill(model, len);
    ck_assert_int_eq(depfs_write(fh, model, len, 0), (ssize_t)len);
    ck_assert_int_eq(depfs_close(fh), 0);
    uint64_t ino;
    struct stat st;
    ck_assert_int_eq(depfs_resolve(fs, "/hung", &ino, &st), 0);

    pid_t victim = g_cl.ios[lay.servers[0]];
    ck_assert_int_eq(kill(victim, SIGSTOP), 0);
    wait_stopped(victim);
    ck_assert_int_eq(depfs_open(fs, "/hung", O_RDWR, 0, &fh), 0);
    ck_assert_int_eq(depfs_read(fh, got, len, 0), (ssize_t)len);
    ck_assert(memcmp(got, model, len) == 0);
    /* stripe 1's parity unit 3 sits on position 0: it misses this update */
    memset(model + 5000, 0x77, 10000);
    td_bg_write hw = {.fs = fs, .path = "/hung", .buf = model + 5000, .len = 10000, .off = 5000};
    td_bg_write_start(&hw);
    /* once the survivors record it missed the write, it may resume */
    uint32_t recorded = 0;
    uint64_t deadline_ms = clock_now_ms() + T_HUNG_PROBE_MS;
    while (!(recorded & 1u) && clock_now_ms() < deadline_ms) {
        usleep(100 * 1000);
        ck_assert_int_eq(dc_dirty_probe(fs, &lay, ino, &recorded, NULL, NULL), 0);
    }
    ck_assert_msg(recorded & 1u, "no dirty record names the hung server");
    ck_assert_int_eq(kill(victim, SIGCONT), 0);
    int wrc = td_bg_write_join(&hw);
    ck_assert_msg(wrc == 0, "write around the hung server: %s", strerror(-wrc));
    ck_assert_int_eq(depfs_read(fh, got, len, 0), (ssize_t)len);
    ck_assert(memcmp(got, model, len) == 0);
    ck_assert_int_eq(depfs_close(fh), 0);

    /* it did not run for longer than a request timeout: it demoted itself
     * (REBUILDING), so a fresh client never reads its stale parity unit;
     * that client's degraded read decodes around it */
    depfs_t *fs2 = mount_fs();
    ck_assert_int_eq(depfs_open(fs2, "/hung", O_RDONLY, 0, &fh), 0);
    ck_assert_int_eq(depfs_read(fh, got, len, 0), (ssize_t)len);
    ck_assert(memcmp(got, model, len) == 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    depfs_scrub_report rep;
    ck_assert_int_eq(depfs_scrub_ino(fs2, ino, false, &rep), 0);
    ck_assert_msg(rep.stripes_bad == 0, "scrub read the stalled server's stale unit");
    /* what depfs-recovery does with it: the rejoin rebuilds the dirty file */
    int rc = depfs_server_rejoin(fs2, lay.servers[0], NULL, NULL);
    ck_assert_msg(rc == 0, "rejoin: %s (%s)", strerror(-rc), depfs_last_error());
    depfs_unmount(fs2);
    fs2 = mount_fs();
    scrub_clean(fs2, ino, len / layout_stripe_bytes(&lay));
    ck_assert_int_eq(depfs_open(fs2, "/hung", O_RDONLY, 0, &fh), 0);
    ck_assert_int_eq(depfs_read(fh, got, len, 0), (ssize_t)len);
    ck_assert(memcmp(got, model, len) == 0);
    ck_assert_int_eq(depfs_close(fh), 0);
    depfs_unmount(fs2);
    depfs_unmount(fs);
    free(model);
    free(got);
}
END_TEST

/* Write-only bursts of small writes that land on bytes still buffered in
 * the write-behind scatter set (merged there, newest bytes winning), mixed
 * with sequential runs and writes larger than a stripe, then the content
 * and parity must be right. */
START_TEST(test_overwrite_buffered)
{
    seed_rng();
    depfs_t *fs = mount_fs();
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, "depfs@8@6@4k:/overwrite", O_CREAT | O_RDWR, 0644, &fh), 0);
    layout lay;
    layout_of(fh, &lay);
    const uint64_t region = 256u * 1024; /* small: overlaps are the rule */
    uint64_t sb = layout_stripe_bytes(&lay);
    uint8_t *model = calloc(1, region), *tmp = malloc(region);
    ck_assert_ptr_nonnull(model);
    ck_assert_ptr_nonnull(tmp);
    uint64_t size = 0, next = 0;
    for (unsigned i = 0; i < 3000; i++) {
        uint64_t r = rnd_below(20);
        size_t len = r == 0 ? 1 + rnd_below(2 * sb) : 1 + rnd_below(r < 4 ? 9000 : 4096);
        if (len > region)
            len = region;
        uint64_t off = r < 3 && next + len <= region ? next : rnd_below(region - len + 1);
        rnd_fill(tmp, len);
        ck_assert_int_eq(depfs_write(fh, tmp, len, off), (ssize_t)len);
        memcpy(model + off, tmp, len);
        next = off + len;
        if (off + len > size)
            size = off + len;
    }
    check_content(fh, model, size);
    uint64_t ino = depfs_fh_ino(fh);
    ck_assert_int_eq(depfs_close(fh), 0);
    scrub_clean(fs, ino, (size + sb - 1) / sb);
    depfs_unmount(fs);
    free(model);
    free(tmp);
}
END_TEST

/* Enough scattered small writes that full scatter sets are written out in
 * the background (the "flight") while later writes rewrite bytes of the set
 * in the air and reads ask for ranges it holds: the newest bytes win, and
 * content and parity are right at the end. */
START_TEST(test_scatter_flight)
{
    seed_rng();
    depfs_t *fs = mount_fs();
    depfs_fh_t *fh = NULL;
    ck_assert_int_eq(depfs_open(fs, "depfs@8@6@4k:/flight", O_CREAT | O_RDWR, 0644, &fh), 0);
    layout lay;
    layout_of(fh, &lay);
    const uint64_t region = 16u << 20; /* far more 4 KiB blocks than a set holds */
    const unsigned writes = 10000, recent_max = 64;
    /* reads of what was written `lag` writes ago, once the first full set
     * (1024 extents: ~1280 writes here) is in the air and before it lands */
    const unsigned lag = 1600, lag_reads = 1000;
    uint64_t recent[64]; /* recent_max */
    uint64_t *log_off = calloc(writes, sizeof *log_off);
    ck_assert_ptr_nonnull(log_off);
    unsigned nrecent = 0;
    uint8_t *model = calloc(1, region), *tmp = malloc(region);
    ck_assert_ptr_nonnull(model);
    ck_assert_ptr_nonnull(tmp);
    uint64_t size = 0;
    for (unsigned i = 0; i < writes; i++) {
        size_t len = 1 + rnd_below(3000);
        uint64_t off = rnd_below(region - len + 1);
        if (nrecent > 0 && rnd_below(5) == 0) /* bytes that may be in the air */
            off = recent[rnd_below(nrecent)];
        else if (nrecent < recent_max)
            recent[nrecent++] = off;
        else
            recent[rnd_below(recent_max)] = off;
        if (off + len > region)
            len = region - off;
        rnd_fill(tmp, len);
        ck_assert_int_eq(depfs_write(fh, tmp, len, off), (ssize_t)len);
        memcpy(model + off, tmp, len);
        if (off + len > size)
            size = off + len;
        log_off[i] = off;
        bool back = i >= lag && i < lag + lag_reads; /* likely in the first flight */
        if (back || i % 2500 == 2499) { /* a read of a range a flight may hold */
            uint64_t ro = back ? log_off[i - lag] : recent[rnd_below(nrecent)];
            size_t rl = 1 + rnd_below(3000);
            ssize_t n = depfs_read(fh, tmp, rl, ro);
            uint64_t want = ro >= size ? 0 : (size - ro < rl ? size - ro : rl);
            ck_assert_int_eq(n, (ssize_t)want);
            ck_assert(memcmp(tmp, model + ro, want) == 0);
        }
    }
    ck_assert_int_eq(depfs_fsync(fh), 0);
    check_content(fh, model, size);
    uint64_t ino = depfs_fh_ino(fh);
    ck_assert_int_eq(depfs_close(fh), 0);
    uint64_t sb = layout_stripe_bytes(&lay);
    scrub_clean(fs, ino, (size + sb - 1) / sb);
    depfs_unmount(fs);
    free(log_off);
    free(model);
    free(tmp);
}
END_TEST

/* O_APPEND through write-behind, truncates landing on buffered data, and a
 * second handle reading while the first still buffers. */
START_TEST(test_append_truncate_buffered)
{
    seed_rng();
    depfs_t *fs = mount_fs();
    depfs_fh_t *fa = NULL, *fr = NULL;
    ck_assert_int_eq(depfs_open(fs, "depfs@7@5@2k:/append", O_CREAT | O_WRONLY | O_APPEND, 0644,
                                &fa), 0);
    ck_assert_int_eq(depfs_open(fs, "/append", O_RDONLY, 0, &fr), 0);
    layout lay;
    layout_of(fa, &lay);
    size_t cap = 400000;
    uint8_t *model = calloc(1, cap), *tmp = malloc(cap), *got = malloc(cap);
    uint64_t size = 0;
    for (unsigned i = 0; i < 120; i++) {
        size_t l = 1 + rnd_below(6000);
        if (size + l > cap)
            break;
        rnd_fill(tmp, l);
        ck_assert_int_eq(depfs_write(fa, tmp, l, 0 /* ignored: O_APPEND */), (ssize_t)l);
        memcpy(model + size, tmp, l);
        size += l;
        if (i % 17 == 16) {
            uint64_t cut = size - rnd_below(size / 3);
            ck_assert_int_eq(depfs_ftruncate(fa, cut), 0);
            memset(model + cut, 0, size - cut);
            size = cut;
        }
        if (i % 9 == 0) { /* the other handle sees buffered bytes */
            uint64_t off = rnd_below(size);
            size_t rl = 1 + rnd_below(20000);
            ssize_t n = depfs_read(fr, got, rl, off);
            uint64_t want = size - off < rl ? size - off : rl;
            ck_assert_int_eq(n, (ssize_t)want);
            ck_assert(memcmp(got, model + off, want) == 0);
        }
    }
    ck_assert_int_eq(depfs_close(fa), 0);
    check_content(fr, model, size);
    uint64_t ino = depfs_fh_ino(fr);
    ck_assert_int_eq(depfs_close(fr), 0);
    uint64_t sb = layout_stripe_bytes(&lay);
    scrub_clean(fs, ino, (size + sb - 1) / sb);
    depfs_unmount(fs);
    free(model);
    free(tmp);
    free(got);
}
END_TEST

/* A test that leaves servers of the cluster dead or stalled (a kill, a
 * stop past a deadline) gets a cluster of its own: a tcase of one. */
static void add_own_cluster_case(Suite *s, const char *name, const TTest *test)
{
    TCase *tc = tcase_create(name);
    tcase_add_unchecked_fixture(tc, cluster_up, cluster_down);
    tcase_set_timeout(tc, T_TEST_TIMEOUT_S);
    tcase_add_test(tc, test);
    suite_add_tcase(s, tc);
}

static Suite *data_suite(void)
{
    Suite *s = suite_create("client_data");
    TCase *tc = tcase_create("cluster");
    tcase_add_unchecked_fixture(tc, cluster_up, cluster_down);
    tcase_set_timeout(tc, T_TEST_TIMEOUT_S);
    tcase_add_test(tc, test_rw_4_2);
    tcase_add_test(tc, test_rw_8_6);
    tcase_add_test(tc, test_rw_8_8);
    tcase_add_test(tc, test_rw_8_7);
    tcase_add_test(tc, test_rw_8_4);
    tcase_add_test(tc, test_rw_direct);
    tcase_add_test(tc, test_large_io);
    tcase_add_test(tc, test_truncate_mid_stripe);
    tcase_add_test(tc, test_append_truncate_buffered);
    tcase_add_test(tc, test_overwrite_buffered);
    tcase_add_test(tc, test_scatter_flight);
    tcase_add_test(tc, test_scrub_names_and_repairs_damaged_units);
    tcase_add_test(tc, test_concurrent_writers_parity);
    tcase_add_test(tc, test_scatter_in_one_stripe_is_one_round);
    tcase_add_test(tc, test_hand_partial_then_write_pieces);
    tcase_add_test(tc, test_scatter_far_apart_moves_only_its_bytes);
    tcase_add_test(tc, test_fh_connect_before_io);
    suite_add_tcase(s, tc);
    /* own cluster: it kills servers */
    TCase *td = tcase_create("degraded");
    tcase_add_unchecked_fixture(td, cluster_up, cluster_down);
    tcase_set_timeout(td, T_TEST_TIMEOUT_S);
    tcase_add_test(td, test_strided_read_ahead); /* first: its stops are short */
    tcase_add_test(td, test_strided_read_ahead_gathers_pieces);
    tcase_add_test(td, test_run_flight);         /* so are this one's */
    tcase_add_test(td, test_hung_server);
    tcase_add_test(td, test_degraded_read_write);
    suite_add_tcase(s, td);
    add_own_cluster_case(s, "gather_fallback", test_strided_gather_with_a_dead_server);
    add_own_cluster_case(s, "first_connect", test_first_batch_connects_at_once);
    add_own_cluster_case(s, "flight_error", test_flight_error_not_taken_by_a_flush);
    add_own_cluster_case(s, "write_out_error", test_write_out_error_in_a_write_is_kept);
    return s;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    SRunner *sr = srunner_create(data_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
