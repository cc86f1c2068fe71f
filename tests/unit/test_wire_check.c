/* test_wire_check.c - the checks of values taken from the wire
 * (common/wire_check.h): strings with NUL bytes found in encoded messages
 * at any depth (protobuf-c itself cuts them silently, shown first), names,
 * symlink targets, xattr names, modes, owners, device numbers, epochs and
 * the timespec conversion at both ends of the int64 range. */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "depfs.pb-c.h"
#include "log.h"
#include "wire_check.h"

#define WHY_BYTES 256
#define BUF_BYTES 512
#define MDS_NAME_FIELD 3      /* MdsRequest.name */
#define MDS_ATTR_FIELD 14     /* MdsRequest.attr */
#define MDS_XVALUE_FIELD 21   /* MdsRequest.xattr_value (bytes: NULs are fine) */
#define WT_LEN 2u

static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* A length-delimited field (id, bytes[0..len)) at p; returns its size. */
static size_t put_len_field(uint8_t *p, unsigned id, const void *bytes, size_t len)
{
    size_t n = put_varint(p, (uint64_t)id << 3 | WT_LEN);
    n += put_varint(p + n, len);
    memcpy(p + n, bytes, len);
    return n + len;
}

START_TEST(test_protobuf_c_cuts_at_nul)
{
    /* why the walk exists: protobuf-c hands back "a" for the bytes "a\0b" */
    uint8_t buf[BUF_BYTES];
    size_t n = put_len_field(buf, MDS_NAME_FIELD, "a\0b", 3);
    Depfs__MdsRequest *q = depfs__mds_request__unpack(NULL, n, buf);
    ck_assert_ptr_nonnull(q);
    ck_assert_str_eq(q->name, "a");
    depfs__mds_request__free_unpacked(q, NULL);
}
END_TEST

START_TEST(test_strings_with_nul_refused)
{
    uint8_t buf[BUF_BYTES];
    char why[WHY_BYTES] = "";
    size_t n = put_len_field(buf, MDS_NAME_FIELD, "a\0b", 3);
    ck_assert_int_eq(wire_check_strings(&depfs__mds_request__descriptor, buf, n, why, sizeof(why)),
                     -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "name"));
    /* a clean name, and NULs in a bytes field, pass */
    n = put_len_field(buf, MDS_NAME_FIELD, "ab", 2);
    n += put_len_field(buf + n, MDS_XVALUE_FIELD, "\0\0", 2);
    ck_assert_int_eq(wire_check_strings(&depfs__mds_request__descriptor, buf, n, why, sizeof(why)),
                     0);
    /* not UTF-8: accepted (names are bytes) */
    n = put_len_field(buf, MDS_NAME_FIELD, "\xff\xfe", 2);
    ck_assert_int_eq(wire_check_strings(&depfs__mds_request__descriptor, buf, n, why, sizeof(why)),
                     0);
}
END_TEST

START_TEST(test_nested_strings)
{
    /* an IoReply's ServerInfo-like nesting: MdsReply.servers[].address */
    uint8_t inner[BUF_BYTES], buf[BUF_BYTES];
    char why[WHY_BYTES] = "";
    const unsigned address_field = 2, servers_field = 15;
    size_t m = put_len_field(inner, address_field, "127.0.0.1\0:1", 12);
    size_t n = put_len_field(buf, servers_field, inner, m);
    ck_assert_int_eq(wire_check_strings(&depfs__mds_reply__descriptor, buf, n, why, sizeof(why)),
                     -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "ServerInfo.address"));
    /* a message field whose bytes are junk: left to the decoder */
    n = put_len_field(buf, MDS_ATTR_FIELD, "\xff\xff\xff", 3);
    ck_assert_int_eq(wire_check_strings(&depfs__mds_request__descriptor, buf, n, why, sizeof(why)),
                     0);
}
END_TEST

START_TEST(test_malformed_left_to_decoder)
{
    const uint8_t cut[] = { MDS_NAME_FIELD << 3 | WT_LEN, 0x7f, 'a' };
    const uint8_t long_varint[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80 };
    ck_assert_int_eq(wire_check_strings(&depfs__mds_request__descriptor, cut, sizeof(cut), NULL, 0), 0);
    ck_assert_int_eq(wire_check_strings(&depfs__mds_request__descriptor, long_varint,
                                        sizeof(long_varint), NULL, 0), 0);
    ck_assert_int_eq(wire_check_strings(&depfs__mds_request__descriptor, NULL, 0, NULL, 0), 0);
}
END_TEST

START_TEST(test_names)
{
    char name[WIRE_NAME_MAX + 2];
    char why[WHY_BYTES];
    memset(name, 'n', sizeof(name));
    name[WIRE_NAME_MAX] = '\0';
    ck_assert_int_eq(wire_check_name(name, "name", why, sizeof(why)), 0);
    name[WIRE_NAME_MAX] = 'n';
    name[WIRE_NAME_MAX + 1] = '\0';
    ck_assert_int_eq(wire_check_name(name, "name", why, sizeof(why)), -ENAMETOOLONG);
    ck_assert_int_eq(wire_check_name("", "name", why, sizeof(why)), -EINVAL);
    ck_assert_int_eq(wire_check_name(NULL, "name", why, sizeof(why)), -EINVAL);
    ck_assert_int_eq(wire_check_name("a/b", "new_name", why, sizeof(why)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "new_name"));
    ck_assert_int_eq(wire_check_name("..", "name", why, sizeof(why)), 0);
    ck_assert_int_eq(wire_check_name("\xff\xfe", "name", why, sizeof(why)), 0);
    ck_assert_int_eq(wire_check_symlink_target("", why, sizeof(why)), -ENOENT);
    static char target[WIRE_SYMLINK_MAX + 2];
    memset(target, 't', WIRE_SYMLINK_MAX);
    ck_assert_int_eq(wire_check_symlink_target(target, why, sizeof(why)), 0);
    target[WIRE_SYMLINK_MAX] = 't';
    ck_assert_int_eq(wire_check_symlink_target(target, why, sizeof(why)), -ENAMETOOLONG);
    ck_assert_int_eq(wire_check_xattr_name("", why, sizeof(why)), -ERANGE);
    ck_assert_int_eq(wire_check_xattr_name(name, why, sizeof(why)), -ERANGE);
    ck_assert_int_eq(wire_check_xattr_name("user.x", why, sizeof(why)), 0);
}
END_TEST

START_TEST(test_numbers)
{
    char why[WHY_BYTES];
    ck_assert_int_eq(wire_check_mode(S_IFREG | 0644, why, sizeof(why)), 0);
    ck_assert_int_eq(wire_check_mode(07777, why, sizeof(why)), 0);
    ck_assert_int_eq(wire_check_mode(S_IFSOCK | 04755, why, sizeof(why)), 0);
    ck_assert_int_eq(wire_check_mode(0x80000000u | 0644, why, sizeof(why)), -EINVAL);
    ck_assert_int_eq(wire_check_mode(UINT32_MAX, why, sizeof(why)), -EINVAL);
    ck_assert_int_eq(wire_check_mode(S_IFMT | 0644, why, sizeof(why)), -EINVAL); /* no such type */
    ck_assert_int_eq(wire_check_owner(0, "uid", why, sizeof(why)), 0);
    ck_assert_int_eq(wire_check_owner(UINT32_MAX - 1, "uid", why, sizeof(why)), 0);
    ck_assert_int_eq(wire_check_owner(UINT32_MAX, "gid", why, sizeof(why)), -EINVAL);
    ck_assert_int_eq(wire_check_rdev(UINT32_MAX, why, sizeof(why)), 0);
    ck_assert_int_eq(wire_check_rdev((uint64_t)UINT32_MAX + 1, why, sizeof(why)), -EINVAL);
    ck_assert_int_eq(wire_check_epoch(WIRE_EPOCH_MAX, why, sizeof(why)), 0);
    ck_assert_int_eq(wire_check_epoch(WIRE_EPOCH_MAX + 1, why, sizeof(why)), -ERANGE);
    ck_assert_int_eq(wire_check_epoch(UINT64_MAX, why, sizeof(why)), -ERANGE);
}
END_TEST

START_TEST(test_times)
{
    char why[WHY_BYTES];
    int64_t ns = 0;
    struct timespec ts = { .tv_sec = 1, .tv_nsec = 5 };
    ck_assert_int_eq(wire_time_ns(&ts, &ns, why, sizeof(why)), 0);
    ck_assert_int_eq(ns, 1000000005LL);
    ts = (struct timespec){ .tv_sec = -1, .tv_nsec = 999999999 };
    ck_assert_int_eq(wire_time_ns(&ts, &ns, why, sizeof(why)), 0);
    ck_assert_int_eq(ns, -1);
    /* both ends of the int64 range, and one nanosecond past each */
    ts = (struct timespec){ .tv_sec = INT64_MAX / WIRE_NS_PER_SEC,
                            .tv_nsec = INT64_MAX % WIRE_NS_PER_SEC };
    ck_assert_int_eq(wire_time_ns(&ts, &ns, why, sizeof(why)), 0);
    ck_assert(ns == INT64_MAX);
    ts.tv_nsec++;
    ck_assert_int_eq(wire_time_ns(&ts, &ns, why, sizeof(why)), -ERANGE);
    ts = (struct timespec){ .tv_sec = INT64_MIN / WIRE_NS_PER_SEC - 1,
                            .tv_nsec = WIRE_NS_PER_SEC + INT64_MIN % WIRE_NS_PER_SEC };
    ck_assert_int_eq(wire_time_ns(&ts, &ns, why, sizeof(why)), 0);
    ck_assert(ns == INT64_MIN);
    ts.tv_nsec--;
    ck_assert_int_eq(wire_time_ns(&ts, &ns, why, sizeof(why)), -ERANGE);
    /* the year 3000 and nanoseconds out of range */
    ts = (struct timespec){ .tv_sec = 32503680000LL, .tv_nsec = 0 };
    ck_assert_int_eq(wire_time_ns(&ts, &ns, why, sizeof(why)), -ERANGE);
    ts = (struct timespec){ .tv_sec = 0, .tv_nsec = WIRE_NS_PER_SEC };
    ck_assert_int_eq(wire_time_ns(&ts, &ns, why, sizeof(why)), -EINVAL);
    ts.tv_nsec = -1;
    ck_assert_int_eq(wire_time_ns(&ts, &ns, why, sizeof(why)), -EINVAL);
}
END_TEST

int main(void)
{
    dlog_init("test_wire_check", DLOG_WARN);
    Suite *s = suite_create("wire_check");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_protobuf_c_cuts_at_nul);
    tcase_add_test(tc, test_strings_with_nul_refused);
    tcase_add_test(tc, test_nested_strings);
    tcase_add_test(tc, test_malformed_left_to_decoder);
    tcase_add_test(tc, test_names);
    tcase_add_test(tc, test_numbers);
    tcase_add_test(tc, test_times);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
