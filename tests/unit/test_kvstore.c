/* test_kvstore.c - the LevelDB wrapper against a real LevelDB in a temp dir:
 * put/get/delete, batches (including all-or-nothing under SIGKILL), prefix
 * iteration with start keys, durability across close/reopen, and writes
 * after a write that failed half way (a full disk) kept. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kvstore.h"

#define ERR_LEN 256
#define BATCH_KEYS 50
#define MAX_GENERATIONS 100000
#define TORN_VALUE_BYTES 4000 /* a log record much longer than the room left */
#define TORN_ROOM_BYTES 100   /* bytes the failing write gets onto the disk */
#define AFTER_KEYS 20         /* acknowledged writes after the failed one */

static char tmpdir[64];
static char dbdir[128];

static void setup(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/depfs-test-kv-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    snprintf(dbdir, sizeof(dbdir), "%s/db", tmpdir);
}

static void teardown(void)
{
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cleanup of %s failed\n", tmpdir);
}

static kvstore *open_db(bool sync)
{
    char err[ERR_LEN] = "";
    kvstore *kv = NULL;
    int rc = kv_open(dbdir, sync, &kv, err, sizeof(err));
    ck_assert_msg(rc == 0, "kv_open: %s", err);
    ck_assert_ptr_nonnull(kv);
    return kv;
}

static void put_str(kvstore *kv, const char *k, const char *v)
{
    ck_assert_int_eq(kv_put(kv, k, strlen(k), v, strlen(v)), 0);
}

static void expect_str(kvstore *kv, const char *k, const char *want)
{
    void *v = NULL;
    size_t vlen = 0;
    int rc = kv_get(kv, k, strlen(k), &v, &vlen);
    if (!want) {
        ck_assert_msg(rc == -ENOENT, "key %s: rc %d, want -ENOENT", k, rc);
        ck_assert_ptr_null(v);
        return;
    }
    ck_assert_msg(rc == 0, "key %s: rc %d", k, rc);
    ck_assert_uint_eq(vlen, strlen(want));
    ck_assert(memcmp(v, want, vlen) == 0);
    free(v);
}

START_TEST(test_put_get_delete)
{
    kvstore *kv = open_db(false);
    expect_str(kv, "a", NULL);
    put_str(kv, "a", "one");
    put_str(kv, "b", "two");
    expect_str(kv, "a", "one");
    put_str(kv, "a", "uno");
    expect_str(kv, "a", "uno");
    ck_assert_int_eq(kv_delete(kv, "a", 1), 0);
    expect_str(kv, "a", NULL);
    expect_str(kv, "b", "two");
    ck_assert_int_eq(kv_delete(kv, "zz", 2), 0); /* deleting nothing is fine */

    /* binary keys and values, embedded NULs, empty value */
    const uint8_t bkey[] = { 0, 1, 0, 0xff };
    const uint8_t bval[] = { 0xff, 0, 0, 7, 0 };
    ck_assert_int_eq(kv_put(kv, bkey, sizeof(bkey), bval, sizeof(bval)), 0);
    ck_assert_int_eq(kv_put(kv, "empty", 5, "", 0), 0);
    void *v;
    size_t vlen;
    ck_assert_int_eq(kv_get(kv, bkey, sizeof(bkey), &v, &vlen), 0);
    ck_assert_uint_eq(vlen, sizeof(bval));
    ck_assert(memcmp(v, bval, vlen) == 0);
    free(v);
    ck_assert_int_eq(kv_get(kv, bkey, 3, &v, &vlen), -ENOENT); /* a prefix is another key */
    ck_assert_int_eq(kv_get(kv, "empty", 5, &v, &vlen), 0);
    ck_assert_uint_eq(vlen, 0);
    free(v);
    kv_close(kv);
}
END_TEST

START_TEST(test_reopen_keeps_data)
{
    kvstore *kv = open_db(true);
    char k[32], val[32];
    for (int i = 0; i < 500; i++) {
        snprintf(k, sizeof(k), "key%04d", i);
        snprintf(val, sizeof(val), "val%d", i * 7);
        put_str(kv, k, val);
    }
    ck_assert_int_eq(kv_delete(kv, "key0100", 7), 0);
    kv_close(kv);

    kv = open_db(true);
    for (int i = 0; i < 500; i++) {
        snprintf(k, sizeof(k), "key%04d", i);
        snprintf(val, sizeof(val), "val%d", i * 7);
        expect_str(kv, k, i == 100 ? NULL : val);
    }
    kv_close(kv);
}
END_TEST

/* Bytes of the store's LevelDB log files (NNNNNN.log) together. */
static off_t log_bytes(void)
{
    DIR *d = opendir(dbdir);
    ck_assert_ptr_nonnull(d);
    off_t total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 4, ".log") != 0)
            continue;
        char path[sizeof(dbdir) + sizeof(e->d_name) + 1];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dbdir, e->d_name);
        if (stat(path, &st) == 0)
            total += st.st_size;
    }
    closedir(d);
    return total;
}

static void set_file_size_limit(rlim_t bytes)
{
    struct rlimit rl = { .rlim_cur = bytes, .rlim_max = RLIM_INFINITY };
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

/* A write that fails after part of its log record reached the disk (as on
 * a full disk; here RLIMIT_FSIZE cuts it) must not cost the writes that
 * succeed after it: LevelDB's log writer would go on past the torn record
 * and its reader drop them on the next open. */
START_TEST(test_writes_after_torn_write_kept)
{
    kvstore *kv = open_db(false);
    put_str(kv, "before", "kept");
    signal(SIGXFSZ, SIG_IGN); /* over the limit: EFBIG, not a signal */
    set_file_size_limit((rlim_t)log_bytes() + TORN_ROOM_BYTES);
    static char big[TORN_VALUE_BYTES + 1];
    memset(big, 'x', TORN_VALUE_BYTES);
    ck_assert_int_eq(kv_put(kv, "torn", 4, big, TORN_VALUE_BYTES), -EIO);
    set_file_size_limit(RLIM_INFINITY);

    char k[32], val[32];
    for (int i = 0; i < AFTER_KEYS; i++) {
        snprintf(k, sizeof(k), "after%02d", i);
        snprintf(val, sizeof(val), "v%d", i);
        put_str(kv, k, val);
    }
    kv_close(kv);

    kv = open_db(false);
    expect_str(kv, "before", "kept");
    for (int i = 0; i < AFTER_KEYS; i++) {
        snprintf(k, sizeof(k), "after%02d", i);
        snprintf(val, sizeof(val), "v%d", i);
        expect_str(kv, k, val);
    }
    kv_close(kv);
}
END_TEST

START_TEST(test_open_errors)
{
    char err[ERR_LEN] = "";
    kvstore *kv = (kvstore *)0x1;
    char path[200];
    /* a regular file where the directory should be */
    snprintf(path, sizeof(path), "%s/file", tmpdir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    ck_assert_int_eq(kv_open(path, false, &kv, err, sizeof(err)), -EIO);
    ck_assert_ptr_null(kv);
    ck_assert_ptr_nonnull(strstr(err, path));

    /* the same store open twice: LevelDB's lock refuses the second */
    kvstore *first = open_db(false);
    ck_assert_int_eq(kv_open(dbdir, false, &kv, err, sizeof(err)), -EIO);
    ck_assert_ptr_nonnull(strstr(err, "lock"));
    kv_close(first);
}
END_TEST

START_TEST(test_batch)
{
    kvstore *kv = open_db(false);
    put_str(kv, "old", "x");
    put_str(kv, "keep", "y");

    kv_batch *b = kv_batch_new();
    ck_assert_ptr_nonnull(b);
    kv_batch_put(b, "n1", 2, "v1", 2);
    kv_batch_put(b, "n2", 2, "v2", 2);
    kv_batch_delete(b, "old", 3);
    kv_batch_put(b, "n1", 2, "v1b", 3); /* later op in the batch wins */
    /* nothing is visible before commit */
    expect_str(kv, "n1", NULL);
    expect_str(kv, "old", "x");
    ck_assert_int_eq(kv_batch_commit(kv, b), 0);
    kv_batch_free(b);
    expect_str(kv, "n1", "v1b");
    expect_str(kv, "n2", "v2");
    expect_str(kv, "old", NULL);
    expect_str(kv, "keep", "y");

    /* an abandoned batch changes nothing */
    b = kv_batch_new();
    kv_batch_put(b, "ghost", 5, "boo", 3);
    kv_batch_free(b);
    expect_str(kv, "ghost", NULL);
    kv_batch_free(NULL);
    kv_close(kv);
}
END_TEST

/* Child: commit generation after generation of BATCH_KEYS keys until killed. */
static void batch_writer(void)
{
    char err[ERR_LEN];
    kvstore *kv;
    if (kv_open(dbdir, true, &kv, err, sizeof(err)) != 0)
        _exit(2);
    for (int gen = 0; gen < MAX_GENERATIONS; gen++) {
        kv_batch *b = kv_batch_new();
        char k[32], v[32];
        for (int i = 0; i < BATCH_KEYS; i++) {
            snprintf(k, sizeof(k), "g%06d/%03d", gen, i);
            snprintf(v, sizeof(v), "%d", gen);
            kv_batch_put(b, k, strlen(k), v, strlen(v));
        }
        if (kv_batch_commit(kv, b) != 0)
            _exit(3);
        kv_batch_free(b);
    }
    _exit(0);
}

/* SIGKILL a writer mid-stream: every generation is wholly there or absent,
 * and the ones there are a prefix 0..G-1. */
START_TEST(test_batch_all_or_nothing_under_kill)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        batch_writer();
    struct timespec ts = { .tv_sec = 0, .tv_nsec = 300 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status), "writer ended early (status %d)", status);

    kvstore *kv = open_db(false);
    kv_iter *it = kv_iter_new(kv, "g", 1, NULL, 0);
    ck_assert_ptr_nonnull(it);
    const void *k, *v;
    size_t klen, vlen;
    int gen = 0, count = 0, total = 0;
    while (kv_iter_next(it, &k, &klen, &v, &vlen)) {
        char want[32];
        snprintf(want, sizeof(want), "g%06d/%03d", gen, count);
        ck_assert_uint_eq(klen, strlen(want));
        ck_assert_msg(memcmp(k, want, klen) == 0, "key %.*s, expected %s", (int)klen,
                      (const char *)k, want);
        total++;
        if (++count == BATCH_KEYS) {
            count = 0;
            gen++;
        }
    }
    kv_iter_free(it);
    ck_assert_msg(count == 0, "generation %d is torn: %d of %d keys", gen, count, BATCH_KEYS);
    ck_assert_int_gt(gen, 0); /* the writer got somewhere in 300 ms */
    ck_assert_int_eq(total, gen * BATCH_KEYS);
    kv_close(kv);
}
END_TEST

/* Collect the keys an iterator yields, joined by ','. */
static void collect(kvstore *kv, const char *prefix, const char *start, char *out, size_t cap)
{
    kv_iter *it = kv_iter_new(kv, prefix, strlen(prefix), start, start ? strlen(start) : 0);
    ck_assert_ptr_nonnull(it);
    const void *k, *v;
    size_t klen, vlen, used = 0;
    out[0] = '\0';
    while (kv_iter_next(it, &k, &klen, &v, &vlen)) {
        /* the value stored is the key reversed-case marker "v:" + key */
        ck_assert_uint_eq(vlen, klen + 2);
        ck_assert(memcmp(v, "v:", 2) == 0 && memcmp((const char *)v + 2, k, klen) == 0);
        used += (size_t)snprintf(out + used, cap - used, "%s%.*s", used ? "," : "", (int)klen,
                                 (const char *)k);
        ck_assert_uint_lt(used, cap);
    }
    kv_iter_free(it);
}

START_TEST(test_prefix_iteration)
{
    kvstore *kv = open_db(false);
    static const char *const keys[] = { "d/1/b", "d/1/a", "d/10/a", "d/2/z", "d/1/c",
                                        "e/1",   "c/9",   "d/",     "d",     "d/1/" };
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        char v[32];
        snprintf(v, sizeof(v), "v:%s", keys[i]);
        put_str(kv, keys[i], v);
    }
    char got[512];
    collect(kv, "d/1/", NULL, got, sizeof(got));
    ck_assert_str_eq(got, "d/1/,d/1/a,d/1/b,d/1/c");
    collect(kv, "d/1", NULL, got, sizeof(got));
    ck_assert_str_eq(got, "d/1/,d/1/a,d/1/b,d/1/c,d/10/a");
    collect(kv, "d/", NULL, got, sizeof(got));
    ck_assert_str_eq(got, "d/,d/1/,d/1/a,d/1/b,d/1/c,d/10/a,d/2/z");
    /* start inside the range, exactly on a key, between keys, before, after */
    collect(kv, "d/1/", "d/1/b", got, sizeof(got));
    ck_assert_str_eq(got, "d/1/b,d/1/c");
    collect(kv, "d/1/", "d/1/aa", got, sizeof(got));
    ck_assert_str_eq(got, "d/1/b,d/1/c");
    collect(kv, "d/1/", "a", got, sizeof(got));
    ck_assert_str_eq(got, "d/1/,d/1/a,d/1/b,d/1/c");
    collect(kv, "d/1/", "d/1/d", got, sizeof(got));
    ck_assert_str_eq(got, "");
    collect(kv, "d/1/", "zzz", got, sizeof(got));
    ck_assert_str_eq(got, "");
    collect(kv, "x", NULL, got, sizeof(got));
    ck_assert_str_eq(got, "");
    /* empty prefix: everything, in order */
    collect(kv, "", NULL, got, sizeof(got));
    ck_assert_str_eq(got, "c/9,d,d/,d/1/,d/1/a,d/1/b,d/1/c,d/10/a,d/2/z,e/1");
    collect(kv, "", "d/2", got, sizeof(got));
    ck_assert_str_eq(got, "d/2/z,e/1");

    /* an iterator sees a snapshot: a put after creation is not seen,
     * and calling next after the end keeps returning false */
    kv_iter *it = kv_iter_new(kv, "e", 1, NULL, 0);
    put_str(kv, "e/2", "v:e/2");
    const void *k, *v;
    size_t klen, vlen;
    ck_assert(kv_iter_next(it, &k, &klen, &v, &vlen));
    ck_assert_uint_eq(klen, 3);
    ck_assert(memcmp(k, "e/1", 3) == 0);
    ck_assert(!kv_iter_next(it, &k, &klen, &v, &vlen));
    ck_assert(!kv_iter_next(it, &k, &klen, &v, &vlen));
    kv_iter_free(it);
    kv_iter_free(NULL);
    kv_close(kv);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kvstore");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, test_put_get_delete);
    tcase_add_test(tc, test_reopen_keeps_data);
    tcase_add_test(tc, test_writes_after_torn_write_kept);
    tcase_add_test(tc, test_open_errors);
    tcase_add_test(tc, test_batch);
    tcase_add_test(tc, test_batch_all_or_nothing_under_kill);
    tcase_add_test(tc, test_prefix_iteration);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
