/* test_strip_csum.c - the checksums of strip files (ioserver/strip_csum.c and
 * strips.c): damage on disk is reported (-EBADMSG), never returned; partial
 * and unaligned writes, holes and truncation keep the checksums right; a
 * write into a damaged block does not bless it; a lost strip file is
 * -ENODATA, not zeros; strip files from before checksums keep working; a
 * write's bytes are checked against the client's block CRCs before they
 * are stored. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "block_crc.h"
#include "crc32c.h"
#include "ioserver/strip_csum.h"
#include "ioserver/strips.h"
#include "tests/lib/rng.h"

#define FILE_A 0x1234ull
#define FILE_B 0x5678ull
#define BLK BLOCK_CRC_MAX

static char tmpdir[64];
static ios_strips *st;

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

static void setup(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/depfs-csum-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    ck_assert_int_eq(ios_strips_open(tmpdir, 0, &st), 0);
}

static void teardown(void)
{
    ios_strips_close(st);
    st = NULL;
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Reopens the store: no cached descriptor hides what was done on disk. */
static void reopen(void)
{
    ios_strips_close(st);
    ck_assert_int_eq(ios_strips_open(tmpdir, 0, &st), 0);
}

static void strip_path(uint64_t id, const char *suffix, char *out, size_t len)
{
    char name[IOS_STRIP_NAME_LEN];
    ios_strip_name(id, name);
    snprintf(out, len, "%s/%s/%s%s", tmpdir, IOS_STRIPS_SUBDIR, name, suffix);
}

/* Flips one byte of the strip file on disk, behind the server's back. */
static void flip_on_disk(uint64_t id, uint64_t off)
{
    char path[256];
    strip_path(id, "", path, sizeof path);
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    uint8_t b;
    ck_assert_int_eq(pread(fd, &b, 1, (off_t)off), 1);
    b ^= 0x5a;
    ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)off), 1);
    close(fd);
}

static int put(uint64_t id, uint64_t off, const uint8_t *b, uint64_t len, uint32_t su)
{
    ios_extent e = {off, len};
    return ios_strips_write(st, id, &e, 1, b, su, NULL);
}

/* Every read also gives the CRC32C of the bytes it returns (combined from
 * the stored checksums where it can): it must be theirs. */
static int get(uint64_t id, uint64_t off, uint8_t *b, uint64_t len)
{
    ios_extent e = {off, len};
    uint32_t crc = 0xdeadbeefu;
    int rc = ios_strips_read(st, id, &e, 1, b, &crc, NULL);
    if (rc == 0)
        ck_assert_uint_eq(crc, crc32c(0, b, len));
    return rc;
}

START_TEST(a_flipped_byte_is_reported_not_returned)
{
    uint8_t w[3 * BLK], r[3 * BLK];
    rnd_fill(w, sizeof w);
    ck_assert_int_eq(put(FILE_A, 0, w, sizeof w, 65536), 0);
    flip_on_disk(FILE_A, BLK + 17);
    reopen();
    ck_assert_int_eq(get(FILE_A, 0, r, sizeof r), -EBADMSG);
    ck_assert_int_eq(get(FILE_A, BLK + 100, r, 10), -EBADMSG); /* any byte of the block */
    ck_assert_int_eq(get(FILE_A, 0, r, BLK), 0);               /* the others read fine */
    ck_assert_int_eq(memcmp(r, w, BLK), 0);
    ck_assert_int_eq(get(FILE_A, 2 * BLK, r, BLK), 0);
    ck_assert_int_eq(memcmp(r, w + 2 * BLK, BLK), 0);
    ck_assert_uint_ge(ios_strips_csum_errors(st), 2);
    /* rewriting the block whole heals it */
    ck_assert_int_eq(put(FILE_A, BLK, w + BLK, BLK, 65536), 0);
    ck_assert_int_eq(get(FILE_A, 0, r, sizeof r), 0);
    ck_assert_int_eq(memcmp(r, w, sizeof w), 0);
}
END_TEST

/* Unaligned writes of every shape against a model, then reads of every
 * shape: the bytes and the checksums agree throughout. */
START_TEST(partial_and_unaligned_writes_keep_checksums)
{
    enum { SIZE = 6 * BLK };
    static uint8_t model[SIZE], r[SIZE], w[SIZE];
    memset(model, 0, sizeof model);
    for (unsigned i = 0; i < 200; i++) {
        uint64_t off = rnd_below(SIZE - 1), len = 1 + rnd_below(SIZE - off);
        if (i % 3 == 0)
            len = 1 + rnd_below(len < 300 ? len : 300);
        rnd_fill(w, len);
        ck_assert_int_eq(put(FILE_A, off, w, len, 65536), 0);
        memcpy(model + off, w, len);
    }
    reopen();
    for (unsigned i = 0; i < 100; i++) {
        uint64_t off = rnd_below(SIZE - 1), len = 1 + rnd_below(SIZE - off);
        ck_assert_int_eq(get(FILE_A, off, r, len), 0);
        ck_assert_int_eq(memcmp(r, model + off, len), 0);
    }
}
END_TEST

START_TEST(a_partial_write_into_a_damaged_block_does_not_bless_it)
{
    uint8_t w[2 * BLK], r[2 * BLK];
    rnd_fill(w, sizeof w);
    ck_assert_int_eq(put(FILE_A, 0, w, sizeof w, 65536), 0);
    flip_on_disk(FILE_A, 10);
    reopen();
    ck_assert_int_eq(put(FILE_A, 100, w, 50, 65536), 0); /* stored, block still damaged */
    ck_assert_int_eq(get(FILE_A, 0, r, BLK), -EBADMSG);
    ck_assert_int_eq(get(FILE_A, BLK, r, BLK), 0);
    memcpy(w + 100, w, 50);
    ck_assert_int_eq(put(FILE_A, 0, w, BLK, 65536), 0); /* the whole block: healed */
    ck_assert_int_eq(get(FILE_A, 0, r, sizeof r), 0);
    ck_assert_int_eq(memcmp(r, w, sizeof w), 0);
}
END_TEST

START_TEST(holes_read_as_zeros_and_stay_sparse)
{
    uint8_t w[BLK], r[2 * BLK];
    rnd_fill(w, sizeof w);
    const uint64_t far = 256ull << 20;
    ck_assert_int_eq(put(FILE_A, far, w, sizeof w, 65536), 0);
    reopen();
    ck_assert_int_eq(get(FILE_A, 12345, r, sizeof r), 0);
    for (size_t i = 0; i < sizeof r; i++)
        ck_assert_uint_eq(r[i], 0);
    ck_assert_int_eq(get(FILE_A, far, r, BLK), 0);
    ck_assert_int_eq(memcmp(r, w, BLK), 0);
    char path[256];
    struct stat sb;
    strip_path(FILE_A, "", path, sizeof path);
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_lt((long long)sb.st_blocks * 512, 1 << 20);
    strip_path(FILE_A, IOS_CSUM_SUFFIX, path, sizeof path);
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_lt((long long)sb.st_blocks * 512, 1 << 20);
    /* a hole that stops reading as zeros is damage too */
    flip_on_disk(FILE_A, 3 * BLK);
    reopen();
    ck_assert_int_eq(get(FILE_A, 3 * BLK, r, 16), -EBADMSG);
}
END_TEST

START_TEST(truncation_keeps_checksums)
{
    uint8_t w[3 * BLK], r[5 * BLK];
    rnd_fill(w, sizeof w);
    ck_assert_int_eq(put(FILE_A, 0, w, sizeof w, 65536), 0);
    ck_assert_int_eq(ios_strips_truncate(st, FILE_A, BLK + 1000), 0);
    reopen();
    ck_assert_int_eq(get(FILE_A, 0, r, 3 * BLK), 0);
    ck_assert_int_eq(memcmp(r, w, BLK + 1000), 0);
    for (size_t i = BLK + 1000; i < 3 * BLK; i++)
        ck_assert_uint_eq(r[i], 0);
    ck_assert_int_eq(ios_strips_truncate(st, FILE_A, 5 * BLK - 3), 0); /* extend */
    ck_assert_int_eq(get(FILE_A, 0, r, 5 * BLK), 0);
    ck_assert_int_eq(memcmp(r, w, BLK + 1000), 0);
    ck_assert_int_eq(put(FILE_A, 2 * BLK + 5, w, 10, 65536), 0);
    ck_assert_int_eq(get(FILE_A, 2 * BLK, r, BLK), 0);
    ck_assert_int_eq(memcmp(r + 5, w, 10), 0);
}
END_TEST

START_TEST(a_lost_strip_file_is_not_a_hole)
{
    uint8_t w[BLK], r[BLK];
    rnd_fill(w, sizeof w);
    ck_assert_int_eq(put(FILE_A, 0, w, sizeof w, 65536), 0);
    char path[256];
    strip_path(FILE_A, "", path, sizeof path);
    ck_assert_int_eq(unlink(path), 0);
    reopen();
    ck_assert_int_eq(get(FILE_A, 0, r, sizeof r), -ENODATA);
    ck_assert_int_eq(get(FILE_A + 1, 0, r, sizeof r), 0); /* never written: zeros */
    /* rewritten (a rebuild): only what was rewritten reads back */
    ck_assert_int_eq(put(FILE_A, 0, w, 100, 65536), 0);
    ck_assert_int_eq(get(FILE_A, 0, r, 100), -EBADMSG); /* the rest of the block is gone */
    ck_assert_int_eq(put(FILE_A, 0, w, sizeof w, 65536), 0);
    ck_assert_int_eq(get(FILE_A, 0, r, sizeof r), 0);
    ck_assert_int_eq(memcmp(r, w, sizeof w), 0);
    ck_assert_int_eq(ios_strips_remove(st, FILE_A), 0);
    ck_assert_int_eq(get(FILE_A, 0, r, sizeof r), 0); /* removed: nothing left */
}
END_TEST

/* A strip file written before checksums existed: read unverified; a write
 * adds a sidecar, and the blocks it rewrote are verified from then on. */
/* A strip file as written before checksums: no sidecar. */
static void write_legacy(uint64_t id, const uint8_t *w, size_t len)
{
    char path[256];
    strip_path(id, "", path, sizeof path);
    int fd = open(path, O_CREAT | O_WRONLY, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, w, len, 0), (ssize_t)len);
    close(fd);
}

START_TEST(strip_files_from_before_checksums_keep_working)
{
    uint8_t w[2 * BLK], r[2 * BLK];
    rnd_fill(w, sizeof w);
    write_legacy(FILE_A, w, sizeof w);
    ck_assert_int_eq(get(FILE_A, 0, r, sizeof r), 0);
    ck_assert_int_eq(memcmp(r, w, sizeof w), 0);
    ck_assert_int_eq(put(FILE_A, BLK, w, BLK, 65536), 0);
    memcpy(w + BLK, w, BLK);
    reopen();
    ck_assert_int_eq(get(FILE_A, 0, r, sizeof r), 0);
    ck_assert_int_eq(memcmp(r, w, sizeof w), 0);
    flip_on_disk(FILE_A, 5);       /* an old block: not known, not verified */
    flip_on_disk(FILE_A, BLK + 5); /* a rewritten one: verified */
    reopen();
    ck_assert_int_eq(get(FILE_A, 0, r, BLK), 0);
    ck_assert_int_eq(get(FILE_A, BLK, r, BLK), -EBADMSG);
}
END_TEST

/* The upgrade path: adoption gives every block of a strip file from before
 * checksums (and the untouched blocks of one a write added a sidecar to)
 * the checksum of its bytes, so damage after it is found; a strip file
 * born with checksums is left alone, and adopting twice adds nothing. */
START_TEST(adoption_gives_old_strips_checksums)
{
    uint8_t w[3 * BLK + 100], r[sizeof w];
    rnd_fill(w, sizeof w);
    write_legacy(FILE_A, w, sizeof w);
    reopen();
    uint64_t n = 0;
    ck_assert_int_eq(ios_strips_adopt(st, FILE_A, &n), 0);
    ck_assert_uint_eq(n, (sizeof w + BLOCK_CRC_MIN - 1) / BLOCK_CRC_MIN);
    ck_assert_int_eq(ios_strips_adopt(st, FILE_A, &n), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(get(FILE_A, 0, r, sizeof r), 0);
    ck_assert_int_eq(memcmp(r, w, sizeof w), 0);
    flip_on_disk(FILE_A, 5);
    flip_on_disk(FILE_A, 3 * BLK + 50); /* in the last, partial block */
    reopen();
    ck_assert_int_eq(get(FILE_A, 0, r, BLOCK_CRC_MIN), -EBADMSG);
    ck_assert_int_eq(get(FILE_A, 3 * BLK, r, 100), -EBADMSG);
    ck_assert_int_eq(get(FILE_A, BLK, r, BLK), 0);
    /* born with checksums: nothing to adopt */
    ck_assert_int_eq(put(FILE_B, 0, w, 2 * BLK, 65536), 0);
    ck_assert_int_eq(ios_strips_adopt(st, FILE_B, &n), 0);
    ck_assert_uint_eq(n, 0);
    /* absent: nothing */
    ck_assert_int_eq(ios_strips_adopt(st, 0x777, &n), 0);
    ck_assert_uint_eq(n, 0);
}
END_TEST

/* A stripe unit of 512 bytes gets 512-byte blocks: units of neighbouring
 * stripes (under different stripe locks) never share a block. */
START_TEST(small_stripe_units_get_small_blocks)
{
    uint8_t w[4 * 512], r[4 * 512];
    rnd_fill(w, sizeof w);
    for (unsigned u = 0; u < 4; u++)
        ck_assert_int_eq(put(FILE_A, u * 512, w + u * 512, 512, 512), 0);
    flip_on_disk(FILE_A, 512 + 3);
    reopen();
    ck_assert_int_eq(get(FILE_A, 0, r, 512), 0);
    ck_assert_int_eq(get(FILE_A, 512, r, 512), -EBADMSG);
    ck_assert_int_eq(get(FILE_A, 1024, r, 1024), 0);
    ck_assert_int_eq(memcmp(r, w + 1024, 1024), 0);
}
END_TEST

/* A reader racing the creation of a strip file (sidecar first, then the
 * data file) never takes the half-made pair for a lost file. */
#define RACE_FILES 300u
static void *race_creator(void *arg)
{
    (void)arg;
    uint8_t w[512];
    memset(w, 0x5a, sizeof w);
    for (uint64_t id = 1; id <= RACE_FILES; id++)
        if (put(0x7000 + id, 0, w, sizeof w, 65536) != 0)
            return (void *)1;
    return NULL;
}

START_TEST(a_strip_being_created_is_not_lost)
{
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, race_creator, NULL), 0);
    uint8_t r[512];
    unsigned enodata = 0;
    for (unsigned round = 0; round < 20; round++)
        for (uint64_t id = 1; id <= RACE_FILES; id++)
            enodata += get(0x7000 + id, 0, r, sizeof r) == -ENODATA;
    void *failed;
    ck_assert_int_eq(pthread_join(t, &failed), 0);
    ck_assert_ptr_null(failed);
    ck_assert_uint_eq(enodata, 0);
}
END_TEST

/* Truncation racing with readers: a reader of the blocks being cut off
 * sees them whole or gone (zeros), never their bytes gone with their
 * checksums still there (the background scrub called that damage). */
#define TRUNC_ROUNDS 200
#define TRUNC_BYTES (2u << 20)

static void *race_truncator(void *arg)
{
    (void)arg;
    static uint8_t w[TRUNC_BYTES];
    memset(w, 0x6b, sizeof w);
    for (unsigned i = 0; i < TRUNC_ROUNDS; i++) {
        ios_extent e = {0, sizeof w};
        if (ios_strips_write(st, FILE_B, &e, 1, w, 65536, NULL) != 0 ||
            ios_strips_truncate(st, FILE_B, BLK) != 0)
            return (void *)1;
    }
    return NULL;
}

START_TEST(truncation_never_looks_like_damage)
{
    static uint8_t w[BLK], r[TRUNC_BYTES];
    memset(w, 0x6b, sizeof w);
    ck_assert_int_eq(put(FILE_B, 0, w, sizeof w, 65536), 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, race_truncator, NULL), 0);
    unsigned damaged = 0, reads = 0;
    void *done = (void *)-1;
    while (pthread_tryjoin_np(t, &done) != 0 && reads < 100000) {
        ios_extent e = {0, sizeof r};
        damaged += ios_strips_read(st, FILE_B, &e, 1, r, NULL, NULL) == -EBADMSG;
        reads++;
    }
    if (done == (void *)-1)
        ck_assert_int_eq(pthread_join(t, &done), 0);
    ck_assert_ptr_null(done);
    ck_assert_msg(damaged == 0, "%u of %u reads racing with truncation saw damage", damaged,
                  reads);
}
END_TEST

/* A write with the client's block CRCs (cut at b) of new[0, len) at off. */
static int put_checked(uint64_t id, uint64_t off, const uint8_t *b, uint64_t len, uint32_t su,
                       uint32_t blk, uint32_t *crcs, int corrupt_piece)
{
    struct iovec v = {(void *)b, len};
    block_crc_cursor cur = {.iov = &v, .n_iov = 1};
    block_crc_extent(blk, off, len, &cur, crcs, 0);
    if (corrupt_piece >= 0)
        crcs[corrupt_piece] ^= 0x100;
    ios_extent e = {off, len};
    ios_block_crcs want = {.block = blk, .crcs = crcs};
    return ios_strips_write(st, id, &e, 1, b, su, &want);
}

/* Bytes that do not match the client's CRCs (a whole block's, an edge's,
 * at the sidecar's block size or a smaller one) are refused with -EIO and
 * nothing of them is stored; matching ones are stored and read back. */
START_TEST(client_crcs_are_checked_before_storing)
{
    enum { SU = 65536, OFF = 100, LEN = 2 * BLK + 50 };
    static uint8_t base[3 * BLK], nw[LEN], r[3 * BLK];
    uint32_t crcs[3 * BLK / BLOCK_CRC_MIN + 2];
    rnd_fill(base, sizeof base);
    ck_assert_int_eq(put(FILE_A, 0, base, sizeof base, SU), 0);
    const struct { uint32_t blk; int bad; } cases[] = {
        {BLK, 1}, {BLK, 0}, {BLK, 2}, {BLOCK_CRC_MIN, 3}, {BLOCK_CRC_MIN, 0},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rnd_fill(nw, sizeof nw);
        ck_assert_int_eq(put_checked(FILE_A, OFF, nw, LEN, SU, cases[i].blk, crcs, cases[i].bad),
                         -EIO);
        reopen();
        ck_assert_int_eq(get(FILE_A, 0, r, sizeof r), 0);
        ck_assert_mem_eq(r, base, sizeof base);
    }
    const uint32_t good[] = {BLK, BLOCK_CRC_MIN};
    for (unsigned i = 0; i < 2; i++) {
        rnd_fill(nw, sizeof nw);
        ck_assert_int_eq(put_checked(FILE_A, OFF, nw, LEN, SU, good[i], crcs, -1), 0);
        memcpy(base + OFF, nw, LEN);
        reopen();
        ck_assert_int_eq(get(FILE_A, 0, r, sizeof r), 0);
        ck_assert_mem_eq(r, base, sizeof base);
    }
}
END_TEST

int main(void)
{
    seed_rng();
    Suite *s = suite_create("strip_csum");
    TCase *tc = tcase_create("csum");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_flipped_byte_is_reported_not_returned);
    tcase_add_test(tc, partial_and_unaligned_writes_keep_checksums);
    tcase_add_test(tc, a_partial_write_into_a_damaged_block_does_not_bless_it);
    tcase_add_test(tc, holes_read_as_zeros_and_stay_sparse);
    tcase_add_test(tc, truncation_keeps_checksums);
    tcase_add_test(tc, a_lost_strip_file_is_not_a_hole);
    tcase_add_test(tc, strip_files_from_before_checksums_keep_working);
    tcase_add_test(tc, adoption_gives_old_strips_checksums);
    tcase_add_test(tc, small_stripe_units_get_small_blocks);
    tcase_add_test(tc, a_strip_being_created_is_not_lost);
    tcase_add_test(tc, client_crcs_are_checked_before_storing);
    tcase_add_test(tc, truncation_never_looks_like_damage);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
