/* stat.c - `depfs stat PATH...`: type, size, mode, owner, link count, times
 * and layout of DePFS objects, as text or JSON. */
#include "cli.h"
#include "json.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define STAT_CMD "stat"
#define TIME_TEXT_MAX 64u
#define LAYOUT_LINE_MAX 512u
#define PERM_MASK 07777u
#define MODE_TEXT_LEN 11u

static void stat_usage(FILE *out)
{
    fprintf(out,
            "Usage: %s stat [--json] PATH...\n"
            "\n"
            "Show type, size, mode, uid, gid, link count, times and layout of each PATH\n"
            "(a DePFS namespace path such as /dir/file, or a label such as depfs:/dir/file).\n"
            "With several PATHs, --json prints an array.\n"
            "\n"
            "Options:\n"
            "  -c, --config PATH  cluster config\n"
            "  -j, --json         print JSON\n"
            "  -h, --help         show this help\n",
            CLI_PROG);
}

/* "2024-05-01 12:00:00.123456789 +0000", like stat(1). */
static void format_time(char *buf, size_t len, const struct timespec *ts)
{
    struct tm tm;
    char base[32], zone[8];
    time_t secs = ts->tv_sec;

    if (localtime_r(&secs, &tm) == NULL) {
        snprintf(buf, len, "%lld.%09ld", (long long)ts->tv_sec, ts->tv_nsec);
        return;
    }
    strftime(base, sizeof(base), "%Y-%m-%d %H:%M:%S", &tm);
    strftime(zone, sizeof(zone), "%z", &tm);
    snprintf(buf, len, "%s.%09ld %s", base, ts->tv_nsec, zone);
}

/* "-rw-r--r--" */
static void format_mode(char *buf, mode_t mode)
{
    static const char rwx[] = "rwxrwxrwx";
    char t = '?';
    switch (mode & S_IFMT) {
    case S_IFREG: t = '-'; break;
    case S_IFDIR: t = 'd'; break;
    case S_IFLNK: t = 'l'; break;
    case S_IFIFO: t = 'p'; break;
    case S_IFSOCK: t = 's'; break;
    case S_IFCHR: t = 'c'; break;
    case S_IFBLK: t = 'b'; break;
    }
    buf[0] = t;
    for (unsigned i = 0; i < 9; i++)
        buf[1 + i] = (mode & (1u << (8 - i))) ? rwx[i] : '-';
    if (mode & S_ISUID) buf[3] = (mode & S_IXUSR) ? 's' : 'S';
    if (mode & S_ISGID) buf[6] = (mode & S_IXGRP) ? 's' : 'S';
    if (mode & S_ISVTX) buf[9] = (mode & S_IXOTH) ? 't' : 'T';
    buf[MODE_TEXT_LEN - 1] = '\0';
}

typedef struct stat_result {
    const char *path;
    uint64_t ino;
    struct stat st;
    bool has_layout;
    depfs_layout_info li;
    bool has_target;
    char target[CLI_PATH_MAX];
} stat_result;

static void print_text(const stat_result *r)
{
    char mode[MODE_TEXT_LEN], t[TIME_TEXT_MAX];
    format_mode(mode, r->st.st_mode);
    printf("  path: %s\n", r->path);
    printf("  type: %s\n", cli_type_name(r->st.st_mode));
    if (r->has_target)
        printf("target: %s\n", r->target);
    printf("   ino: %llu\n", (unsigned long long)r->ino);
    printf("  size: %lld\n", (long long)r->st.st_size);
    printf("  mode: %04o (%s)\n", (unsigned)(r->st.st_mode & PERM_MASK), mode);
    printf("   uid: %u\n", (unsigned)r->st.st_uid);
    printf("   gid: %u\n", (unsigned)r->st.st_gid);
    printf(" nlink: %llu\n", (unsigned long long)r->st.st_nlink);
    format_time(t, sizeof(t), &r->st.st_atim);
    printf(" atime: %s\n", t);
    format_time(t, sizeof(t), &r->st.st_mtim);
    printf(" mtime: %s\n", t);
    format_time(t, sizeof(t), &r->st.st_ctim);
    printf(" ctime: %s\n", t);
    if (r->has_layout) {
        char line[LAYOUT_LINE_MAX];
        cli_format_layout(line, sizeof(line), &r->li, S_ISDIR(r->st.st_mode));
        printf("layout: %s\n", line);
    } else {
        printf("layout: -\n");
    }
}

static void json_time(cli_json *j, const char *key, const struct timespec *ts)
{
    char t[TIME_TEXT_MAX];
    cli_json_begin_object(j, key);
    cli_json_int(j, "sec", (int64_t)ts->tv_sec);
    cli_json_int(j, "nsec", (int64_t)ts->tv_nsec);
    format_time(t, sizeof(t), ts);
    cli_json_string(j, "text", t);
    cli_json_end_object(j);
}

static void print_json(cli_json *j, const stat_result *r)
{
    cli_json_begin_object(j, NULL);
    cli_json_string(j, "path", r->path);
    cli_json_string(j, "type", cli_type_name(r->st.st_mode));
    if (r->has_target)
        cli_json_string(j, "target", r->target);
    cli_json_uint(j, "ino", r->ino);
    cli_json_int(j, "size", (int64_t)r->st.st_size);
    cli_json_uint(j, "mode", r->st.st_mode & PERM_MASK);
    cli_json_uint(j, "uid", r->st.st_uid);
    cli_json_uint(j, "gid", r->st.st_gid);
    cli_json_uint(j, "nlink", r->st.st_nlink);
    cli_json_int(j, "blocks", (int64_t)r->st.st_blocks);
    json_time(j, "atime", &r->st.st_atim);
    json_time(j, "mtime", &r->st.st_mtim);
    json_time(j, "ctime", &r->st.st_ctim);
    if (r->has_layout) {
        cli_json_begin_object(j, "layout");
        cli_json_uint(j, "n", r->li.n);
        cli_json_uint(j, "k", r->li.k);
        cli_json_uint(j, "stripe_unit", r->li.stripe_unit);
        cli_json_uint(j, "version", r->li.version);
        cli_json_uint(j, "codec_version", r->li.codec_version);
        if (S_ISDIR(r->st.st_mode)) {
            cli_json_null(j, "servers");
        } else {
            cli_json_begin_array(j, "servers");
            for (unsigned i = 0; i < r->li.n && i < DEPFS_MAX_SERVERS_PER_FILE; i++)
                cli_json_uint(j, NULL, r->li.servers[i]);
            cli_json_end_array(j);
        }
        cli_json_end_object(j);
    } else {
        cli_json_null(j, "layout");
    }
    cli_json_end_object(j);
}

static int stat_one(depfs_t *fs, const char *arg, stat_result *r)
{
    depfs_label lab;
    int rc;

    memset(r, 0, sizeof(*r));
    if (cli_parse_ns_path(arg, &lab) < 0)
        return -1;
    r->path = lab.path;
    rc = depfs_resolve(fs, lab.path, &r->ino, &r->st);
    if (rc < 0) {
        cli_err_rc(rc, "cannot stat '%s'", arg);
        return rc;
    }
    if (S_ISREG(r->st.st_mode) || S_ISDIR(r->st.st_mode))
        r->has_layout = depfs_get_layout(fs, r->ino, &r->li) == 0;
    if (S_ISLNK(r->st.st_mode))
        r->has_target = depfs_readlink(fs, r->ino, r->target, sizeof(r->target)) >= 0;
    return 0;
}

int cli_cmd_stat(int argc, char **argv, const char *config_path)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, CLI_OPT_CONFIG},
        {"help", no_argument, NULL, CLI_OPT_HELP},
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {NULL, 0, NULL, 0},
    };
    bool json = false;
    depfs_t *fs = NULL;
    int c, ret = CLI_EXIT_OK;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:hj", opts, NULL)) != -1) {
        switch (c) {
        case CLI_OPT_CONFIG: config_path = optarg; break;
        case CLI_OPT_HELP: stat_usage(stdout); return CLI_EXIT_OK;
        case CLI_OPT_JSON: json = true; break;
        case ':': return cli_usage_err(STAT_CMD, "option '%s' needs an argument", argv[optind - 1]);
        default: return cli_usage_err(STAT_CMD, "unknown option '%s'", argv[optind - 1]);
        }
    }
    int nargs = argc - optind;
    if (nargs < 1)
        return cli_usage_err(STAT_CMD, "missing PATH");
    for (int i = optind; i < argc; i++) {
        depfs_label lab;
        if (cli_parse_ns_path(argv[i], &lab) < 0)
            return CLI_EXIT_USAGE;
    }
    if (cli_connect(config_path, &fs) < 0)
        return CLI_EXIT_FAIL;

    cli_json j;
    cli_json_init(&j, stdout);
    if (json && nargs > 1)
        cli_json_begin_array(&j, NULL);
    bool first = true;
    for (int i = optind; i < argc; i++) {
        stat_result r;
        if (stat_one(fs, argv[i], &r) < 0) {
            ret = CLI_EXIT_FAIL;
            continue;
        }
        if (json) {
            print_json(&j, &r);
        } else {
            if (!first)
                putchar('\n');
            print_text(&r);
        }
        first = false;
    }
    if (json && nargs > 1)
        cli_json_end_array(&j);
    if (json && (nargs > 1 || !first))
        cli_json_finish(&j);
    depfs_unmount(fs);
    return ret;
}
