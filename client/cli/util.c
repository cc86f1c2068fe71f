/* util.c - helpers shared by the depfs CLI subcommands: error printing,
 * connecting to the cluster, namespace path and label handling, and the
 * human formats of types and layouts. See cli.h. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LABEL_ERR_MAX 256u
#define DIRENTS_INITIAL 64u

void cli_err(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", CLI_PROG);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void cli_err_rc(int rc, const char *fmt, ...)
{
    va_list ap;
    const char *detail = depfs_last_error();

    fprintf(stderr, "%s: ", CLI_PROG);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, ": %s", strerror(rc < 0 ? -rc : rc));
    if (detail != NULL && detail[0] != '\0')
        fprintf(stderr, " (%s)", detail);
    fputc('\n', stderr);
}

int cli_usage_err(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", CLI_PROG);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s%s%s --help'.\n", CLI_PROG, cmd ? " " : "", cmd ? cmd : "");
    return CLI_EXIT_USAGE;
}

/* The config of the DePFS mount the path arguments lie in ("": the
 * default; unset until one does), and the namespace paths they name
 * (kept until exit: labels point into them). */
static bool mount_config_set;
static char mount_config[CLI_PATH_MAX];

typedef struct kept_path {
    struct kept_path *next;
    char path[];
} kept_path;
static kept_path *kept;

static void kept_free(void)
{
    while (kept) {
        kept_path *k = kept;
        kept = k->next;
        free(k);
    }
}

static const char *keep_path(const char *path)
{
    size_t len = strlen(path) + 1;
    kept_path *k = malloc(sizeof(*k) + len);
    if (!k)
        return NULL;
    if (!kept)
        atexit(kept_free);
    memcpy(k->path, path, len);
    k->next = kept;
    kept = k;
    return k->path;
}

/* Without --config or $DEPFS_CONF: the mount's config the paths lie in,
 * else the one the working directory lies in, else the node's only DePFS
 * mount's. NULL: the library's default. */
static const char *config_from_mounts(void)
{
    static cli_mount v[CLI_MOUNTS_MAX];
    unsigned n = 0;
    char ns[CLI_PATH_MAX];
    if (mount_config_set)
        return mount_config[0] ? mount_config : NULL;
    bool in_cwd = cli_mount_path(".", ns, sizeof(ns), &v[0]) == 1;
    if (!in_cwd && (cli_mounts_read(v, CLI_MOUNTS_MAX, &n) < 0 || n != 1))
        return NULL;
    if (v[0].config[0]) {
        snprintf(mount_config, sizeof(mount_config), "%s", v[0].config);
        return mount_config;
    }
    return NULL;
}

int cli_connect(const char *config_path, depfs_t **fs)
{
    depfs_options opt = {0};
    if (config_path == NULL && getenv("DEPFS_CONF") == NULL)
        config_path = config_from_mounts();
    opt.config_path = config_path;
    int rc = depfs_mount(&opt, fs);
    if (rc < 0) {
        const char *shown = config_path;
        if (shown == NULL)
            shown = getenv("DEPFS_CONF");
        if (shown == NULL)
            shown = "/etc/depfs/depfs.conf";
        cli_err_rc(rc, "cannot connect to the cluster (config %s)", shown);
    }
    return rc;
}

bool cli_is_label(const char *arg)
{
    return label_has_prefix(arg);
}

/* A path in a DePFS mount: its namespace path, and its mount's config
 * for cli_connect (all path arguments in one cluster). */
static int mount_arg(const char *arg, const char *ns, const cli_mount *m, depfs_label *lab)
{
    if (mount_config_set && strcmp(mount_config, m->config) != 0) {
        cli_err("'%s' is in another DePFS mount (config %s) than the paths before it", arg,
                m->config[0] ? m->config : "default");
        return -EINVAL;
    }
    mount_config_set = true;
    snprintf(mount_config, sizeof(mount_config), "%s", m->config);
    lab->path = keep_path(ns);
    if (!lab->path) {
        cli_err("out of memory");
        return -ENOMEM;
    }
    return 0;
}

int cli_parse_ns_path(const char *arg, depfs_label *lab)
{
    char why[LABEL_ERR_MAX] = "";

    memset(lab, 0, sizeof(*lab));
    if (!cli_is_label(arg)) {
        char ns[CLI_PATH_MAX];
        cli_mount m;
        int in = cli_mount_path(arg, ns, sizeof(ns), &m);
        if (in < 0) {
            cli_err("path too long: '%s'", arg);
            return in;
        }
        if (in == 1)
            return mount_arg(arg, ns, &m, lab);
        if (arg[0] == '/') {
            lab->path = arg;
            return 0;
        }
        cli_err("'%s' is not a DePFS path: use a path in a DePFS mount, /path, or a label such "
                "as depfs:/path, depfs@8@6:/path", arg);
        return -EINVAL;
    }
    if (label_parse(arg, lab, why, sizeof(why)) < 0) {
        cli_err("bad label '%s': %s", arg, why[0] ? why : "invalid");
        return -EINVAL;
    }
    if (lab->path == NULL || lab->path[0] != '/') {
        cli_err("bad label '%s': the path after ':' must be absolute", arg);
        return -EINVAL;
    }
    return 0;
}

int cli_format_label(char *buf, size_t len, const depfs_label *lab, const char *path)
{
    int w;
    if (lab->n == 0 && lab->k == 0 && lab->su == 0)
        w = snprintf(buf, len, "%s", path);
    else if (lab->su == 0)
        w = snprintf(buf, len, "%s@%u@%u:%s", LABEL_PREFIX, lab->n, lab->k, path);
    else
        w = snprintf(buf, len, "%s@%u@%u@%u:%s", LABEL_PREFIX, lab->n, lab->k, lab->su, path);
    return (w < 0 || (size_t)w >= len) ? -ENAMETOOLONG : 0;
}

int cli_join_path(char *buf, size_t len, const char *dir, const char *name)
{
    size_t dlen = strlen(dir);
    while (dlen > 1 && dir[dlen - 1] == '/')
        dlen--;
    const char *sep = (dlen > 0 && dir[dlen - 1] == '/') ? "" : "/";
    int w = snprintf(buf, len, "%.*s%s%s", (int)dlen, dir, sep, name);
    return (w < 0 || (size_t)w >= len) ? -ENAMETOOLONG : 0;
}

void cli_basename(char *buf, size_t len, const char *path)
{
    size_t end = strlen(path);
    while (end > 1 && path[end - 1] == '/')
        end--;
    size_t start = end;
    while (start > 0 && path[start - 1] != '/')
        start--;
    snprintf(buf, len, "%.*s", (int)(end - start), path + start);
}

int cli_split_path(const char *path, char *parent, size_t parent_len, char *name, size_t name_len)
{
    size_t end = strlen(path);
    while (end > 1 && path[end - 1] == '/')
        end--;
    size_t start = end;
    while (start > 0 && path[start - 1] != '/')
        start--;
    if (end == start || (end == 1 && path[0] == '/'))
        return -EINVAL;
    size_t pend = start;
    while (pend > 1 && path[pend - 1] == '/')
        pend--;
    int w1 = snprintf(parent, parent_len, "%.*s", (int)pend, path);
    int w2 = snprintf(name, name_len, "%.*s", (int)(end - start), path + start);
    if (w1 < 0 || (size_t)w1 >= parent_len || w2 < 0 || (size_t)w2 >= name_len)
        return -ENAMETOOLONG;
    if (parent[0] == '\0')
        snprintf(parent, parent_len, "/");
    return 0;
}

const char *cli_type_name(mode_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG:  return "regular file";
    case S_IFDIR:  return "directory";
    case S_IFLNK:  return "symbolic link";
    case S_IFIFO:  return "fifo";
    case S_IFSOCK: return "socket";
    case S_IFCHR:  return "character device";
    case S_IFBLK:  return "block device";
    default:       return "unknown";
    }
}

void cli_format_layout(char *buf, size_t len, const depfs_layout_info *li, bool is_dir)
{
    size_t used = 0;
    int w = snprintf(buf, len, "n=%u k=%u su=%u servers=", li->n, li->k, li->stripe_unit);
    if (w < 0 || (size_t)w >= len)
        return;
    used = (size_t)w;
    unsigned n = li->n < DEPFS_MAX_SERVERS_PER_FILE ? li->n : DEPFS_MAX_SERVERS_PER_FILE;
    if (is_dir) {
        n = 0;
        snprintf(buf + used, len - used, "-");
        used += strlen(buf + used);
    }
    for (unsigned i = 0; i < n; i++) {
        w = snprintf(buf + used, len - used, "%s%u", i ? "," : "", li->servers[i]);
        if (w < 0 || (size_t)w >= len - used)
            return;
        used += (size_t)w;
    }
    snprintf(buf + used, len - used, " codec=%u", li->codec_version);
}

static int collect_dirent(void *arg, const char *name, uint64_t ino, mode_t type, uint64_t cookie)
{
    cli_dir_list *l = arg;
    (void)cookie;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return 0;
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : DIRENTS_INITIAL;
        cli_dirent *v = realloc(l->v, cap * sizeof(*v));
        if (v == NULL) {
            l->err = -ENOMEM;
            return 1;
        }
        l->v = v;
        l->cap = cap;
    }
    char *copy = strdup(name);
    if (copy == NULL) {
        l->err = -ENOMEM;
        return 1;
    }
    l->v[l->count++] = (cli_dirent){.name = copy, .ino = ino, .type = type & S_IFMT};
    return 0;
}

int cli_dir_read(depfs_t *fs, uint64_t ino, cli_dir_list *out)
{
    memset(out, 0, sizeof(*out));
    int rc = depfs_readdir(fs, ino, 0, collect_dirent, out);
    if (rc == -ESTALE) /* the directory was removed since it was looked up */
        rc = -ENOENT;
    if (rc == 0)
        rc = out->err;
    return rc;
}

void cli_dir_free(cli_dir_list *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->v[i].name);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

int cli_dirent_type(depfs_t *fs, const cli_dirent *e, mode_t *type)
{
    if (e->type != 0) {
        *type = e->type;
        return 0;
    }
    struct stat st;
    int rc = depfs_getattr(fs, e->ino, &st);
    if (rc == 0)
        *type = st.st_mode & S_IFMT;
    return rc;
}
