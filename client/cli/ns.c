/* ns.c - small namespace conveniences: `depfs ls`, `depfs mkdir` (a labelled
 * path also sets the new directory's layout) and `depfs rm` (files, empty
 * directories with -d, trees with -r). */
#include "cli.h"
#include "json.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define LS_CMD "ls"
#define MKDIR_CMD "mkdir"
#define RM_CMD "rm"
#define DIR_MODE_DEFAULT 0777u
#define PERM_MASK 07777u
#define SPEC_MAX 64u
#define RM_MAX_DEPTH 256u

/* ------------------------------------------------------------------ ls */

static void ls_usage(FILE *out)
{
    fprintf(out,
            "Usage: %s ls [-l] [--json] PATH...\n"
            "\n"
            "List directories (or show files) in the DePFS namespace, sorted by name.\n"
            "\n"
            "Options:\n"
            "  -l, --long         type, mode, links, owner, size and layout per entry\n"
            "  -j, --json         print JSON (always with the -l fields)\n"
            "  -c, --config PATH  cluster config\n"
            "  -h, --help         show this help\n",
            CLI_PROG);
}

static int dirent_cmp(const void *a, const void *b)
{
    return strcmp(((const cli_dirent *)a)->name, ((const cli_dirent *)b)->name);
}

static char type_char(mode_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFDIR: return 'd';
    case S_IFLNK: return 'l';
    case S_IFREG: return '-';
    case S_IFIFO: return 'p';
    case S_IFSOCK: return 's';
    case S_IFCHR: return 'c';
    case S_IFBLK: return 'b';
    default: return '?';
    }
}

static void ls_entry(depfs_t *fs, cli_json *j, bool json, bool lng, const char *name, uint64_t ino)
{
    struct stat st;
    depfs_layout_info li;
    bool have_st = false, have_li = false;

    if (json || lng) {
        have_st = depfs_getattr(fs, ino, &st) == 0;
        if (have_st && S_ISREG(st.st_mode))
            have_li = depfs_get_layout(fs, ino, &li) == 0;
    }
    if (json) {
        cli_json_begin_object(j, NULL);
        cli_json_string(j, "name", name);
        cli_json_uint(j, "ino", ino);
        if (have_st) {
            cli_json_string(j, "type", cli_type_name(st.st_mode));
            cli_json_uint(j, "mode", st.st_mode & PERM_MASK);
            cli_json_uint(j, "nlink", st.st_nlink);
            cli_json_uint(j, "uid", st.st_uid);
            cli_json_uint(j, "gid", st.st_gid);
            cli_json_int(j, "size", (int64_t)st.st_size);
            cli_json_int(j, "mtime", (int64_t)st.st_mtim.tv_sec);
        }
        if (have_li) {
            char spec[SPEC_MAX];
            snprintf(spec, sizeof(spec), "%u@%u@%u", li.n, li.k, li.stripe_unit);
            cli_json_string(j, "layout", spec);
        }
        cli_json_end_object(j);
        return;
    }
    if (!lng || !have_st) {
        printf("%s\n", name);
        return;
    }
    char spec[SPEC_MAX] = "-";
    if (have_li)
        snprintf(spec, sizeof(spec), "%u@%u@%u", li.n, li.k, li.stripe_unit);
    printf("%c%04o %3llu %5u %5u %12lld %-14s %s\n", type_char(st.st_mode),
           (unsigned)(st.st_mode & PERM_MASK), (unsigned long long)st.st_nlink, (unsigned)st.st_uid,
           (unsigned)st.st_gid, (long long)st.st_size, spec, name);
}

static int ls_one(depfs_t *fs, cli_json *j, bool json, bool lng, const char *arg, bool header)
{
    depfs_label lab;
    struct stat st;
    uint64_t ino;
    cli_dir_list l;

    if (cli_parse_ns_path(arg, &lab) < 0)
        return CLI_EXIT_USAGE;
    int rc = depfs_resolve(fs, lab.path, &ino, &st);
    if (rc < 0) {
        cli_err_rc(rc, "cannot access '%s'", arg);
        return CLI_EXIT_FAIL;
    }
    if (!S_ISDIR(st.st_mode)) {
        ls_entry(fs, j, json, lng, lab.path, ino);
        return CLI_EXIT_OK;
    }
    rc = cli_dir_read(fs, ino, &l);
    if (rc < 0) {
        cli_err_rc(rc, "cannot list '%s'", arg);
        cli_dir_free(&l);
        return CLI_EXIT_FAIL;
    }
    qsort(l.v, l.count, sizeof(l.v[0]), dirent_cmp);
    if (header && !json)
        printf("%s:\n", lab.path);
    for (size_t i = 0; i < l.count; i++)
        ls_entry(fs, j, json, lng, l.v[i].name, l.v[i].ino);
    cli_dir_free(&l);
    return CLI_EXIT_OK;
}

int cli_cmd_ls(int argc, char **argv, const char *config_path)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, CLI_OPT_CONFIG},
        {"help", no_argument, NULL, CLI_OPT_HELP},
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"long", no_argument, NULL, 'l'},
        {NULL, 0, NULL, 0},
    };
    bool json = false, lng = false;
    depfs_t *fs = NULL;
    int c, ret = CLI_EXIT_OK;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:hjl", opts, NULL)) != -1) {
        switch (c) {
        case CLI_OPT_CONFIG: config_path = optarg; break;
        case CLI_OPT_HELP: ls_usage(stdout); return CLI_EXIT_OK;
        case CLI_OPT_JSON: json = true; break;
        case 'l': lng = true; break;
        case ':': return cli_usage_err(LS_CMD, "option '%s' needs an argument", argv[optind - 1]);
        default: return cli_usage_err(LS_CMD, "unknown option '%s'", argv[optind - 1]);
        }
    }
    char *root[] = {"/"};
    char **paths = optind < argc ? argv + optind : root;
    int npaths = optind < argc ? argc - optind : 1;
    for (int i = 0; i < npaths; i++) {
        depfs_label lab;
        if (cli_parse_ns_path(paths[i], &lab) < 0)
            return CLI_EXIT_USAGE;
    }
    if (cli_connect(config_path, &fs) < 0)
        return CLI_EXIT_FAIL;
    cli_json j;
    cli_json_init(&j, stdout);
    if (json)
        cli_json_begin_array(&j, NULL);
    for (int i = 0; i < npaths; i++) {
        if (i > 0 && !json)
            putchar('\n');
        int r = ls_one(fs, &j, json, lng, paths[i], npaths > 1);
        if (r != CLI_EXIT_OK)
            ret = r;
    }
    if (json) {
        cli_json_end_array(&j);
        cli_json_finish(&j);
    }
    depfs_unmount(fs);
    return ret;
}

/* --------------------------------------------------------------- mkdir */

static void mkdir_usage(FILE *out)
{
    fprintf(out,
            "Usage: %s mkdir [-p] [-m MODE] PATH...\n"
            "\n"
            "Create directories. A labelled PATH (depfs@8@6:/dir) also sets the new\n"
            "directory's layout, inherited by what is created in it.\n"
            "\n"
            "Options:\n"
            "  -p, --parents      create missing parents; no error if PATH exists\n"
            "  -m, --mode MODE    permission bits in octal (default 0777 minus umask)\n"
            "  -c, --config PATH  cluster config\n"
            "  -h, --help         show this help\n",
            CLI_PROG);
}

/* mkdir that, with parents, also creates missing ancestors and accepts an
 * existing directory. */
static int mkdir_path(depfs_t *fs, const char *path, mode_t mode, bool parents)
{
    if (!parents)
        return depfs_mkdir_path(fs, path, mode);
    char buf[CLI_PATH_MAX];
    if (strlen(path) >= sizeof(buf))
        return -ENAMETOOLONG;
    strcpy(buf, path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (p > buf + 1 && p[-1] != '/') {
            int rc = depfs_mkdir_path(fs, buf, mode);
            if (rc == -EEXIST) {
                struct stat st;
                uint64_t ino;
                rc = depfs_resolve(fs, buf, &ino, &st);
                if (rc == 0 && !S_ISDIR(st.st_mode))
                    rc = -ENOTDIR;
            }
            if (rc < 0)
                return rc;
        }
        *p = saved;
        if (saved == '\0')
            return 0;
    }
}

static int mkdir_one(depfs_t *fs, const char *arg, mode_t mode, bool parents)
{
    depfs_label lab;
    if (cli_parse_ns_path(arg, &lab) < 0)
        return CLI_EXIT_USAGE;
    int rc = mkdir_path(fs, lab.path, mode, parents);
    if (rc < 0) {
        cli_err_rc(rc, "cannot create directory '%s'", arg);
        return CLI_EXIT_FAIL;
    }
    if (lab.n == 0)
        return CLI_EXIT_OK;
    char spec[SPEC_MAX];
    struct stat st;
    uint64_t ino;
    if (lab.su == 0)
        snprintf(spec, sizeof(spec), "%u@%u", lab.n, lab.k);
    else
        snprintf(spec, sizeof(spec), "%u@%u@%u", lab.n, lab.k, lab.su);
    rc = depfs_resolve(fs, lab.path, &ino, &st);
    if (rc == 0)
        rc = depfs_setxattr(fs, ino, DEPFS_LAYOUT_XATTR, spec, strlen(spec), 0);
    if (rc < 0) {
        cli_err_rc(rc, "created '%s' but cannot set its layout %s", lab.path, spec);
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

int cli_cmd_mkdir(int argc, char **argv, const char *config_path)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, CLI_OPT_CONFIG},
        {"help", no_argument, NULL, CLI_OPT_HELP},
        {"parents", no_argument, NULL, 'p'},
        {"mode", required_argument, NULL, 'm'},
        {NULL, 0, NULL, 0},
    };
    bool parents = false;
    mode_t mask = umask(0);
    umask(mask);
    mode_t mode = DIR_MODE_DEFAULT & ~mask;
    depfs_t *fs = NULL;
    int c, ret = CLI_EXIT_OK;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:hpm:", opts, NULL)) != -1) {
        switch (c) {
        case CLI_OPT_CONFIG: config_path = optarg; break;
        case CLI_OPT_HELP: mkdir_usage(stdout); return CLI_EXIT_OK;
        case 'p': parents = true; break;
        case 'm': {
            char *end;
            unsigned long m = strtoul(optarg, &end, 8);
            if (*optarg == '\0' || *end != '\0' || m > PERM_MASK)
                return cli_usage_err(MKDIR_CMD, "bad mode '%s' (octal, e.g. 755)", optarg);
            mode = (mode_t)m;
            break;
        }
        case ':': return cli_usage_err(MKDIR_CMD, "option '%s' needs an argument", argv[optind - 1]);
        default: return cli_usage_err(MKDIR_CMD, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_err(MKDIR_CMD, "missing PATH");
    for (int i = optind; i < argc; i++) {
        depfs_label lab;
        if (cli_parse_ns_path(argv[i], &lab) < 0)
            return CLI_EXIT_USAGE;
    }
    if (cli_connect(config_path, &fs) < 0)
        return CLI_EXIT_FAIL;
    for (int i = optind; i < argc; i++) {
        int r = mkdir_one(fs, argv[i], mode, parents);
        if (r != CLI_EXIT_OK)
            ret = r;
    }
    depfs_unmount(fs);
    return ret;
}

/* ------------------------------------------------------------------ rm */

typedef struct rm_opts {
    bool recursive, dirs, force;
} rm_opts;

static void rm_usage(FILE *out)
{
    fprintf(out,
            "Usage: %s rm [-r] [-d] [-f] PATH...\n"
            "\n"
            "Remove files (and with -d empty directories, with -r whole trees).\n"
            "\n"
            "Options:\n"
            "  -r, --recursive    remove directories and their contents\n"
            "  -d, --dir          remove empty directories\n"
            "  -f, --force        no error for PATHs that do not exist\n"
            "  -c, --config PATH  cluster config\n"
            "  -h, --help         show this help\n",
            CLI_PROG);
}

/* Removes everything inside directory ino (path is for messages). */
static int rm_contents(depfs_t *fs, uint64_t ino, const char *path, unsigned depth)
{
    cli_dir_list l;
    int rc;

    if (depth >= RM_MAX_DEPTH) {
        cli_err("'%s': deeper than %u levels", path, RM_MAX_DEPTH);
        return -ELOOP;
    }
    rc = cli_dir_read(fs, ino, &l);
    if (rc < 0) {
        cli_err_rc(rc, "cannot list '%s'", path);
        goto out;
    }
    for (size_t i = 0; i < l.count && rc == 0; i++) {
        char child[CLI_PATH_MAX];
        mode_t t;
        cli_join_path(child, sizeof(child), path, l.v[i].name);
        rc = cli_dirent_type(fs, &l.v[i], &t);
        if (rc == 0 && S_ISDIR(t)) {
            rc = rm_contents(fs, l.v[i].ino, child, depth + 1);
            if (rc == 0)
                rc = depfs_rmdir(fs, ino, l.v[i].name);
        } else if (rc == 0) {
            rc = depfs_unlink(fs, ino, l.v[i].name);
        }
        if (rc < 0)
            cli_err_rc(rc, "cannot remove '%s'", child);
    }
out:
    cli_dir_free(&l);
    return rc;
}

static int rm_one(depfs_t *fs, const char *arg, const rm_opts *o)
{
    depfs_label lab;
    char parent[CLI_PATH_MAX], name[CLI_PATH_MAX];
    struct stat st, pst;
    uint64_t ino, pino;
    int rc;

    if (cli_parse_ns_path(arg, &lab) < 0)
        return CLI_EXIT_USAGE;
    if (cli_split_path(lab.path, parent, sizeof(parent), name, sizeof(name)) < 0) {
        cli_err("refusing to remove '%s'", arg);
        return CLI_EXIT_FAIL;
    }
    rc = depfs_resolve(fs, lab.path, &ino, &st);
    if (rc == -ENOENT && o->force)
        return CLI_EXIT_OK;
    if (rc == 0)
        rc = depfs_resolve(fs, parent, &pino, &pst);
    if (rc < 0) {
        cli_err_rc(rc, "cannot remove '%s'", arg);
        return CLI_EXIT_FAIL;
    }
    if (S_ISDIR(st.st_mode)) {
        if (!o->recursive && !o->dirs) {
            cli_err("cannot remove '%s': is a directory (use -d or -r)", arg);
            return CLI_EXIT_FAIL;
        }
        if (o->recursive && rm_contents(fs, ino, lab.path, 0) < 0)
            return CLI_EXIT_FAIL;
        rc = depfs_rmdir(fs, pino, name);
    } else {
        rc = depfs_unlink(fs, pino, name);
    }
    if (rc < 0) {
        cli_err_rc(rc, "cannot remove '%s'", arg);
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

int cli_cmd_rm(int argc, char **argv, const char *config_path)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, CLI_OPT_CONFIG},
        {"help", no_argument, NULL, CLI_OPT_HELP},
        {"recursive", no_argument, NULL, 'r'},
        {"dir", no_argument, NULL, 'd'},
        {"force", no_argument, NULL, 'f'},
        {NULL, 0, NULL, 0},
    };
    rm_opts o = {0};
    depfs_t *fs = NULL;
    int c, ret = CLI_EXIT_OK;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:hrRdf", opts, NULL)) != -1) {
        switch (c) {
        case CLI_OPT_CONFIG: config_path = optarg; break;
        case CLI_OPT_HELP: rm_usage(stdout); return CLI_EXIT_OK;
        case 'r': case 'R': o.recursive = true; break;
        case 'd': o.dirs = true; break;
        case 'f': o.force = true; break;
        case ':': return cli_usage_err(RM_CMD, "option '%s' needs an argument", argv[optind - 1]);
        default: return cli_usage_err(RM_CMD, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_err(RM_CMD, "missing PATH");
    for (int i = optind; i < argc; i++) {
        depfs_label lab;
        if (cli_parse_ns_path(argv[i], &lab) < 0)
            return CLI_EXIT_USAGE;
    }
    if (cli_connect(config_path, &fs) < 0)
        return CLI_EXIT_FAIL;
    for (int i = optind; i < argc; i++) {
        int r = rm_one(fs, argv[i], &o);
        if (r != CLI_EXIT_OK)
            ret = r;
    }
    depfs_unmount(fs);
    return ret;
}
