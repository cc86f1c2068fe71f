/* test_label.c - resiliency labels, layout specs and sizes: good inputs parse
 * to the right values, bad ones fail with a message naming the bad part. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "depfs.h"
#include "label.h"
#include "layout.h"

#define ERR_LEN 256

START_TEST(test_good_labels)
{
    depfs_label l;
    char err[ERR_LEN];

    ck_assert_int_eq(label_parse("depfs:/a", &l, err, sizeof(err)), 0);
    ck_assert(l.has_label);
    ck_assert_uint_eq(l.n, 0);
    ck_assert_uint_eq(l.k, 0);
    ck_assert_uint_eq(l.su, 0);
    ck_assert_str_eq(l.path, "/a");

    const char *s = "DePFS@8@6:/a";
    ck_assert_int_eq(label_parse(s, &l, err, sizeof(err)), 0);
    ck_assert(l.has_label);
    ck_assert_uint_eq(l.n, 8);
    ck_assert_uint_eq(l.k, 6);
    ck_assert_uint_eq(l.su, 0);
    ck_assert_ptr_eq(l.path, s + strlen("DePFS@8@6:")); /* points into the input */

    ck_assert_int_eq(label_parse("depfs@8@6@64k:/a", &l, err, sizeof(err)), 0);
    ck_assert_uint_eq(l.n, 8);
    ck_assert_uint_eq(l.k, 6);
    ck_assert_uint_eq(l.su, 65536);
    ck_assert_str_eq(l.path, "/a");

    /* the '@'-free spelling for tools that split names at '@' */
    ck_assert_int_eq(label_parse("depfs+8+6:/a", &l, err, sizeof(err)), 0);
    ck_assert(l.has_label);
    ck_assert_uint_eq(l.n, 8);
    ck_assert_uint_eq(l.k, 6);
    ck_assert_uint_eq(l.su, 0);
    ck_assert_str_eq(l.path, "/a");
    ck_assert_int_eq(label_parse("DEPFS+4+2+64k:/b@c", &l, err, sizeof(err)), 0);
    ck_assert_uint_eq(l.n, 4);
    ck_assert_uint_eq(l.k, 2);
    ck_assert_uint_eq(l.su, 65536);
    ck_assert_str_eq(l.path, "/b@c");
    ck_assert(label_has_prefix("depfs+8+6:/a") && label_has_prefix("depfs@8@6:/a") &&
              label_has_prefix("depfs:/a") && !label_has_prefix("depfsx:/a") &&
              !label_has_prefix("/depfs+8+6:/a"));

    ck_assert_int_eq(label_parse("depfs@4@2@1m:/x", &l, err, sizeof(err)), 0);
    ck_assert_uint_eq(l.n, 4);
    ck_assert_uint_eq(l.k, 2);
    ck_assert_uint_eq(l.su, 1024 * 1024);
    ck_assert_str_eq(l.path, "/x");

    ck_assert_int_eq(label_parse("depfs@32@32@512:/d/e:f", &l, err, sizeof(err)), 0);
    ck_assert_uint_eq(l.n, 32);
    ck_assert_uint_eq(l.su, 512);
    ck_assert_str_eq(l.path, "/d/e:f");

    ck_assert_int_eq(label_parse("depfs@1@1@16M:/", &l, err, sizeof(err)), 0);
    ck_assert_uint_eq(l.su, LAYOUT_MAX_SU);

    ck_assert_int_eq(label_parse("/plain", &l, err, sizeof(err)), 0);
    ck_assert(!l.has_label);
    ck_assert_str_eq(l.path, "/plain");

    ck_assert_int_eq(label_parse("/depfs@8@6:/a", &l, err, sizeof(err)), 0);
    ck_assert(!l.has_label);
}
END_TEST

/* Each bad label fails with -EINVAL and an error containing `needle`. */
static const struct { const char *input; const char *needle; } bad_labels[] = {
    { "depfs@8@9:/a", "k (9) > n (8)" },
    { "depfs@8@0:/a", "k (0)" },
    { "depfs@0@0:/a", "n (0)" },
    { "depfs@0@1:/a", "n (0)" },
    { "depfs@33@2:/a", "n (33)" },
    { "depfs@8@x:/a", "'x'" },
    { "depfs@8@6x:/a", "junk after k: 'x'" },
    { "depfs@8x@6:/a", "junk after n: 'x@6'" },
    { "depfs@8:/a", "missing k" },
    { "depfs@@:", "missing n" },
    { "depfs@8@6", "missing ':'" },
    { "depfs:a", "must start with '/'" },
    { "depfs@8@6:", "must start with '/'" },
    { "depfs@8@6@1000:/a", "multiple of 512" },
    { "depfs@8@6@0:/a", "stripe unit" },
    { "depfs@8@6@32m:/a", "'32m'" },
    { "depfs@8@6@99999999999999999999999:/a", "bad stripe unit" },
    { "depfs@8@6@18014398509481984k:/a", "bad stripe unit" },
    { "depfs@8@6@64q:/a", "'64q'" },
    { "depfs@8@6@:/a", "missing stripe unit" },
    { "depfs@8@6@64k@1:/a", "junk after stripe unit" },
    { "depfs@99999999999999@6:/a", "n too large" },
    { "depfsx:/a", "depfsx" },
    { "depfs+8@6:/a", "junk after n: '@6'" },
    { "depfs@8+6:/a", "junk after n: '+6'" },
    { "depfs+8+6@64k:/a", "junk after k: '@64k'" },
    { "depfs+8:/a", "missing k in '8' (expected N+K or N+K+SU)" },
    { "depfs+9+8+:/a", "missing stripe unit" },
    { "relative/path", "must start with '/'" },
    { "", "empty" },
};

START_TEST(test_bad_labels)
{
    depfs_label l;
    char err[ERR_LEN];
    const char *in = bad_labels[_i].input;

    err[0] = '\0';
    int rc = label_parse(in, &l, err, sizeof(err));
    ck_assert_msg(rc == -EINVAL, "'%s' parsed (rc %d)", in, rc);
    ck_assert_msg(strstr(err, bad_labels[_i].needle) != NULL, "'%s': error '%s' lacks '%s'", in,
                  err, bad_labels[_i].needle);
    /* a NULL or tiny error buffer is fine */
    ck_assert_int_eq(label_parse(in, &l, NULL, 0), -EINVAL);
    ck_assert_int_eq(label_parse(in, &l, err, 4), -EINVAL);
    ck_assert_uint_le(strlen(err), 3);
}
END_TEST

START_TEST(test_spec)
{
    unsigned n, k;
    uint32_t su;
    char err[ERR_LEN];

    ck_assert_int_eq(label_parse_spec("8@6", &n, &k, &su, err, sizeof(err)), 0);
    ck_assert_uint_eq(n, 8);
    ck_assert_uint_eq(k, 6);
    ck_assert_uint_eq(su, 0);
    ck_assert_int_eq(label_parse_spec("3@2@4096", &n, &k, &su, err, sizeof(err)), 0);
    ck_assert_uint_eq(su, 4096);
    ck_assert_int_eq(label_parse_spec("6@6@128K", &n, &k, &su, err, sizeof(err)), 0);
    ck_assert_uint_eq(su, 131072);

    ck_assert_int_eq(label_parse_spec("8", &n, &k, &su, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "missing k"));
    ck_assert_int_eq(label_parse_spec("", &n, &k, &su, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "missing n"));
    ck_assert_int_eq(label_parse_spec("4@5", &n, &k, &su, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "k (5) > n (4)"));
    ck_assert_int_eq(label_parse_spec(" 8@6", &n, &k, &su, err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(label_parse_spec("8@6 ", &n, &k, &su, err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(label_parse_spec("-8@6", &n, &k, &su, err, sizeof(err)), -EINVAL);

    /* format -> parse round trip */
    char buf[64];
    label_format_spec(buf, sizeof(buf), 8, 6, 65536);
    ck_assert_str_eq(buf, "8@6@65536");
    ck_assert_int_eq(label_parse_spec(buf, &n, &k, &su, err, sizeof(err)), 0);
    ck_assert_uint_eq(n, 8);
    ck_assert_uint_eq(k, 6);
    ck_assert_uint_eq(su, 65536);
    label_format_spec(buf, sizeof(buf), 4, 3, 0);
    ck_assert_str_eq(buf, "4@3");
}
END_TEST

START_TEST(test_cluster_check)
{
    char err[ERR_LEN];
    ck_assert_int_eq(label_check_cluster(4, 4, err, sizeof(err)), 0);
    ck_assert_int_eq(label_check_cluster(3, 10, err, sizeof(err)), 0);
    ck_assert_int_eq(label_check_cluster(8, 4, err, sizeof(err)), -EINVAL);
    ck_assert_str_eq(err, "n (8) > servers in the cluster (4)");
}
END_TEST

START_TEST(test_parse_size)
{
    uint64_t v;
    ck_assert_int_eq(parse_size("4096", &v), 0);
    ck_assert_uint_eq(v, 4096);
    ck_assert_int_eq(parse_size("64k", &v), 0);
    ck_assert_uint_eq(v, 65536);
    ck_assert_int_eq(parse_size("64K", &v), 0);
    ck_assert_uint_eq(v, 65536);
    ck_assert_int_eq(parse_size("1m", &v), 0);
    ck_assert_uint_eq(v, 1048576);
    ck_assert_int_eq(parse_size("2G", &v), 0);
    ck_assert_uint_eq(v, 2ull << 30);
    ck_assert_int_eq(parse_size("0", &v), 0);
    ck_assert_uint_eq(v, 0);
    ck_assert_int_eq(parse_size("18446744073709551615", &v), 0);
    ck_assert_uint_eq(v, UINT64_MAX);
    ck_assert_int_eq(parse_size("18446744073709551616", &v), -EINVAL);
    ck_assert_int_eq(parse_size("17179869184g", &v), -EINVAL);
    ck_assert_int_eq(parse_size("", &v), -EINVAL);
    ck_assert_int_eq(parse_size("k", &v), -EINVAL);
    ck_assert_int_eq(parse_size("64kb", &v), -EINVAL);
    ck_assert_int_eq(parse_size("6 4", &v), -EINVAL);
    ck_assert_int_eq(parse_size("-1", &v), -EINVAL);
    ck_assert_int_eq(parse_size("0x10", &v), -EINVAL);
}
END_TEST

/* The public parser the MPI-IO driver uses: labels only, path unchecked. */
START_TEST(test_public_label_parse)
{
    unsigned n = 99, k = 99;
    uint32_t su = 99;
    const char *path = NULL;
    char err[256];

    ck_assert_int_eq(depfs_label_parse("DePFS@4@2@64k:rel", &n, &k, &su, &path, err, sizeof err), 1);
    ck_assert_uint_eq(n, 4);
    ck_assert_uint_eq(k, 2);
    ck_assert_uint_eq(su, 65536);
    ck_assert_str_eq(path, "rel");
    ck_assert_int_eq(depfs_label_parse("depfs@4@2:", &n, &k, &su, &path, err, sizeof err), 1);
    ck_assert_str_eq(path, "");
    ck_assert_int_eq(depfs_label_parse("depfs:/x", &n, &k, &su, &path, err, sizeof err), 1);
    ck_assert_uint_eq(n + k + su, 0);
    ck_assert_int_eq(depfs_label_parse("/plain", &n, &k, &su, &path, err, sizeof err), 0);
    ck_assert_int_eq(depfs_label_parse("depfs@4@6:/x", &n, &k, &su, &path, err, sizeof err), -EINVAL);
    ck_assert_str_eq(err, "k (6) > n (4)");
    ck_assert_int_eq(depfs_label_parse("depfs@8@x:/x", &n, &k, &su, &path, NULL, 0), -EINVAL);
    ck_assert_int_eq(depfs_label_parse("depfs@8@6@32m:/x", &n, &k, &su, &path, NULL, 0), -EINVAL);
    ck_assert_int_eq(depfs_layout_spec_parse("8@6@1m", &n, &k, &su, err, sizeof err), 0);
    ck_assert_uint_eq(su, DEPFS_STRIPE_UNIT_MAX / 16);
    ck_assert_int_eq(depfs_layout_spec_parse("8", &n, &k, &su, err, sizeof err), -EINVAL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("label");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_good_labels);
    tcase_add_loop_test(tc, test_bad_labels, 0, (int)(sizeof(bad_labels) / sizeof(bad_labels[0])));
    tcase_add_test(tc, test_spec);
    tcase_add_test(tc, test_cluster_check);
    tcase_add_test(tc, test_parse_size);
    tcase_add_test(tc, test_public_label_parse);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
