/* test_scrubber.c - the background scrub of an I/O server (ioserver/
 * scrubber.h) on a real strip store in a temporary directory: it finds a
 * flipped byte (joining adjacent damaged pieces into one range) and a
 * lost strip file, counts passes and bytes, keeps what it found until a
 * write covers it (repaired), drops it on remove, and a strip file cut
 * short beside its checksums is verified to the checksums' end. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "ioserver/scrubber.h"
#include "ioserver/strips.h"

#define FILE_A 0xa1ull
#define FILE_B 0xb2ull
#define SU 65536u
#define RATE (256u << 20)   /* fast: the test's data is small */
#define WAIT_MS 30000u      /* bound on any wait (a pass every IOS_SCRUB_PASS_GAP_MS) */
#define POLL_MS 20u

static char tmpdir[64];
static ios_strips *st;
static uint8_t unit[4 * SU];

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

static void setup(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/depfs-scrub-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    ck_assert_int_eq(ios_strips_open(tmpdir, 0, &st), 0);
    for (size_t i = 0; i < sizeof unit; i++)
        unit[i] = (uint8_t)(i * 131u + 7u);
}

static void teardown(void)
{
    ios_strips_close(st);
    st = NULL;
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void strip_path(uint64_t id, const char *suffix, char *out, size_t len)
{
    char name[IOS_STRIP_NAME_LEN];
    ios_strip_name(id, name);
    snprintf(out, len, "%s/%s/%s%s", tmpdir, IOS_STRIPS_SUBDIR, name, suffix);
}

static void put(uint64_t id, uint64_t off, uint64_t len)
{
    ios_extent e = { off, len };
    ck_assert_int_eq(ios_strips_write(st, id, &e, 1, unit, SU, NULL), 0);
}

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

/* Waits until the scrubber lists n ranges (at least one pass after
 * `passes`); returns them in v. */
static size_t wait_listed(ios_scrubber *sc, size_t n, uint64_t passes, ios_scrub_damage *v)
{
    uint64_t t0 = clock_now_ms();
    for (;;) {
        ios_scrub_stats s;
        ios_scrubber_stats(sc, &s);
        size_t got = ios_scrubber_damage(sc, v, IOS_SCRUB_DAMAGE_MAX);
        if (s.passes > passes && got >= n)
            return got;
        ck_assert_msg(clock_now_ms() - t0 < WAIT_MS, "scrubber listed %zu ranges after %llu passes",
                      got, (unsigned long long)s.passes);
        clock_sleep_ms(POLL_MS);
    }
}

START_TEST(finds_flips_and_repairs_count)
{
    put(FILE_A, 0, 4 * SU);
    put(FILE_B, 0, SU);
    ios_scrubber *sc;
    ck_assert_int_eq(ios_scrubber_start(st, RATE, NULL, &sc), 0);
    ios_scrub_damage v[IOS_SCRUB_DAMAGE_MAX];
    ck_assert_uint_eq(wait_listed(sc, 0, 0, v), 0); /* a clean pass */
    ios_scrub_stats s0;
    ios_scrubber_stats(sc, &s0);
    ck_assert_uint_ge(s0.bytes_verified, 5 * SU);
    ck_assert_uint_ne(s0.last_pass_end_s, 0);
    ck_assert_uint_eq(s0.rate, RATE);
    /* two flips in adjacent 4 KiB pieces of unit 1: one range of 8 KiB */
    flip_on_disk(FILE_A, SU + 4095);
    flip_on_disk(FILE_A, SU + 4096);
    size_t n = wait_listed(sc, 1, s0.passes, v);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(v[0].file_id, FILE_A);
    ck_assert_uint_eq(v[0].offset, SU);
    ck_assert_uint_eq(v[0].length, 2 * IOS_SCRUB_PROBE_BYTES);
    ios_scrub_stats s1;
    ios_scrubber_stats(sc, &s1);
    ck_assert_uint_eq(s1.blocks_damaged, 2);
    ck_assert_uint_eq(s1.blocks_repaired, 0);
    /* a write elsewhere repairs nothing; the unit's rewrite does */
    ios_scrubber_note_write(sc, FILE_B, 0, SU);
    ios_scrubber_note_write(sc, FILE_A, 2 * SU, SU);
    ck_assert_uint_eq(ios_scrubber_damage(sc, v, IOS_SCRUB_DAMAGE_MAX), 1);
    put(FILE_A, SU, SU);
    ios_scrubber_note_write(sc, FILE_A, SU, SU);
    ck_assert_uint_eq(ios_scrubber_damage(sc, v, IOS_SCRUB_DAMAGE_MAX), 0);
    ios_scrubber_stats(sc, &s1);
    ck_assert_uint_eq(s1.blocks_repaired, 2);
    /* found again, then the file is removed: dropped, not repaired */
    flip_on_disk(FILE_B, 10);
    ios_scrubber_stats(sc, &s1);
    ck_assert_uint_eq(wait_listed(sc, 1, s1.passes, v), 1);
    ck_assert_uint_eq(v[0].file_id, FILE_B);
    ios_scrubber_note_remove(sc, FILE_B);
    ck_assert_uint_eq(ios_scrubber_damage(sc, v, IOS_SCRUB_DAMAGE_MAX), 0);
    ios_scrubber_stats(sc, &s1);
    ck_assert_uint_eq(s1.blocks_repaired, 2);
    ios_scrubber_stop(sc);
}
END_TEST

/* Damaged pieces next to each other join into one range longer than the
 * scrubber's read buffer: rechecking it at the next pass must read it a
 * chunk at a time (campaign seed 104: read whole, it overran the buffer
 * and the I/O server died). */
START_TEST(long_damage_rechecked_in_chunks)
{
    const uint64_t damaged = IOS_SCRUB_CHUNK_BYTES + 16 * IOS_SCRUB_PROBE_BYTES;
    put(FILE_A, 0, 4 * SU);
    put(FILE_A, 4 * SU, 4 * SU);
    ck_assert_uint_ge(8 * SU, damaged);
    for (uint64_t off = 0; off < damaged; off += IOS_SCRUB_PROBE_BYTES)
        flip_on_disk(FILE_A, off + 100);
    ios_scrubber *sc;
    ck_assert_int_eq(ios_scrubber_start(st, RATE, NULL, &sc), 0);
    ios_scrub_damage v[IOS_SCRUB_DAMAGE_MAX];
    size_t n = wait_listed(sc, 1, 0, v);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(v[0].offset, 0);
    ck_assert_uint_eq(v[0].length, damaged);
    /* two more passes, each starting with the recheck of that range */
    ios_scrub_stats s;
    ios_scrubber_stats(sc, &s);
    ck_assert_uint_eq(wait_listed(sc, 1, s.passes + 1, v), 1);
    ck_assert_uint_eq(v[0].length, damaged); /* still damaged: still listed */
    /* rewritten: the recheck reads it whole, in chunks, and drops it */
    put(FILE_A, 0, 4 * SU);
    put(FILE_A, 4 * SU, 4 * SU);
    ios_scrubber_stats(sc, &s);
    ck_assert_uint_eq(wait_listed(sc, 0, s.passes + 1, v), 0);
    ios_scrubber_stop(sc);
}
END_TEST

/* A strip file deleted beside its checksums is lost (length 0); one cut
 * short is verified up to where its checksums go, so its missing tail is
 * found too. */
START_TEST(finds_lost_and_cut_strips)
{
    put(FILE_A, 0, 2 * SU);
    put(FILE_B, 0, 3 * SU);
    char path[256];
    strip_path(FILE_A, "", path, sizeof path);
    ck_assert_int_eq(unlink(path), 0);
    strip_path(FILE_B, "", path, sizeof path);
    ck_assert_int_eq(truncate(path, SU), 0);
    ios_strips_close(st); /* no cached descriptor hides what was done */
    ck_assert_int_eq(ios_strips_open(tmpdir, 0, &st), 0);
    ios_scrubber *sc;
    ck_assert_int_eq(ios_scrubber_start(st, RATE, NULL, &sc), 0);
    ios_scrub_damage v[IOS_SCRUB_DAMAGE_MAX];
    size_t n = wait_listed(sc, 2, 0, v);
    ck_assert_uint_eq(n, 2);
    bool lost = false, cut = false;
    for (size_t i = 0; i < n; i++) {
        if (v[i].file_id == FILE_A)
            lost = v[i].length == 0;
        if (v[i].file_id == FILE_B)
            cut = v[i].offset == SU && v[i].length == 2 * SU;
    }
    ck_assert_msg(lost, "the deleted strip file is not listed as lost");
    ck_assert_msg(cut, "the cut strip file's missing tail is not listed as one range");
    put(FILE_A, 0, SU); /* any write brings a lost strip file back */
    ios_scrubber_note_write(sc, FILE_A, 0, SU);
    ck_assert_uint_eq(ios_scrubber_damage(sc, v, IOS_SCRUB_DAMAGE_MAX), 1);
    ios_scrubber_stop(sc);
}
END_TEST

/* Rate 0: no thread, the counters answer, stop is clean. */
START_TEST(off_at_rate_zero)
{
    put(FILE_A, 0, SU);
    ios_scrubber *sc;
    ck_assert_int_eq(ios_scrubber_start(st, 0, NULL, &sc), 0);
    clock_sleep_ms(IOS_SCRUB_YIELD_MS);
    ios_scrub_stats s;
    ios_scrubber_stats(sc, &s);
    ck_assert_uint_eq(s.rate, 0);
    ck_assert_uint_eq(s.passes, 0);
    ck_assert_uint_eq(s.bytes_verified, 0);
    ios_scrubber_stop(sc);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("scrubber");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, finds_flips_and_repairs_count);
    tcase_add_test(tc, finds_lost_and_cut_strips);
    tcase_add_test(tc, long_damage_rechecked_in_chunks);
    tcase_add_test(tc, off_at_rate_zero);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
