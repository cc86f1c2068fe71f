/* mounts.c - the DePFS mounts of this node, so the CLI takes mount paths
 * (Lustre's lfs does): which mount a local path lies in, the DePFS path it
 * names there, and the cluster config the mount was made with. They come
 * from /proc/self/mountinfo, type fuse.depfs; depfs-fuse names its config
 * in the mount's source ("depfs:CONFIG"; a plain "depfs": the default
 * config). See cli.h. */
#include "cli.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOUNTINFO "/proc/self/mountinfo"
#define MOUNT_TYPE "fuse.depfs"
#define MOUNT_SOURCE_PREFIX "depfs:"
#define MOUNTINFO_LINE_MAX (3u * CLI_PATH_MAX)
#define MOUNTINFO_MOUNT_POINT_FIELD 5 /* 1-based, before the " - " separator */

/* mountinfo escapes space, tab, newline and backslash as \ooo: undone in place. */
static void unescape(char *s)
{
    char *out = s;
    for (char *in = s; *in; in++) {
        if (in[0] == '\\' && in[1] >= '0' && in[1] <= '3' && in[2] >= '0' && in[2] <= '7' &&
            in[3] >= '0' && in[3] <= '7') {
            *out++ = (char)((in[1] - '0') * 64 + (in[2] - '0') * 8 + (in[3] - '0'));
            in += 3;
        } else {
            *out++ = *in;
        }
    }
    *out = '\0';
}

/* One mountinfo line: 1 and *m for a DePFS mount, else 0. */
static int parse_line(char *line, cli_mount *m)
{
    char *save = NULL, *dir = NULL, *tok;
    int field = 0;
    for (tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
        if (++field == MOUNTINFO_MOUNT_POINT_FIELD)
            dir = tok;
        if (strcmp(tok, "-") == 0)
            break;
    }
    char *type = strtok_r(NULL, " \n", &save), *source = strtok_r(NULL, " \n", &save);
    if (!tok || !dir || !type || !source || strcmp(type, MOUNT_TYPE) != 0)
        return 0;
    unescape(dir);
    unescape(source);
    const char *config = strncmp(source, MOUNT_SOURCE_PREFIX, strlen(MOUNT_SOURCE_PREFIX)) == 0
                             ? source + strlen(MOUNT_SOURCE_PREFIX) : "";
    if (strlen(dir) >= sizeof(m->dir) || strlen(config) >= sizeof(m->config))
        return 0;
    strcpy(m->dir, dir);
    strcpy(m->config, config);
    return 1;
}

int cli_mounts_read(cli_mount *v, unsigned max, unsigned *n)
{
    *n = 0;
    FILE *f = fopen(MOUNTINFO, "re");
    if (!f)
        return -errno;
    char *line = malloc(MOUNTINFO_LINE_MAX);
    if (!line) {
        fclose(f);
        return -ENOMEM;
    }
    while (*n < max && fgets(line, MOUNTINFO_LINE_MAX, f))
        *n += (unsigned)parse_line(line, &v[*n]);
    free(line);
    fclose(f);
    return 0;
}

/* The absolute, resolved form of path; for a path that does not exist
 * (yet: a copy's or mkdir's target), its parent resolved + its name. */
static int resolve(const char *path, char *out)
{
    char parent[PATH_MAX], base[PATH_MAX];
    if (realpath(path, out))
        return 0;
    if (errno != ENOENT || strlen(path) >= sizeof(parent))
        return -errno;
    strcpy(parent, path);
    strcpy(base, path);
    const char *name = basename(base);
    if (!realpath(dirname(parent), out))
        return -errno;
    size_t len = strlen(out);
    if (len + 1 + strlen(name) >= PATH_MAX)
        return -ENAMETOOLONG;
    snprintf(out + len, PATH_MAX - len, "%s%s", len > 1 ? "/" : "", name);
    return 0;
}

/* Whether dir is path or one of its parents. */
static bool under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return true;
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int cli_mount_path(const char *path, char *ns, size_t ns_len, cli_mount *m)
{
    static cli_mount v[CLI_MOUNTS_MAX];
    unsigned n = 0;
    if (cli_mounts_read(v, CLI_MOUNTS_MAX, &n) < 0 || n == 0)
        return 0;
    char real[PATH_MAX];
    if (resolve(path, real) < 0)
        return 0;
    const cli_mount *best = NULL;
    for (unsigned i = 0; i < n; i++)
        if (under(real, v[i].dir) && (!best || strlen(v[i].dir) > strlen(best->dir)))
            best = &v[i];
    if (!best)
        return 0;
    const char *rest = real + (strcmp(best->dir, "/") == 0 ? 0 : strlen(best->dir));
    if (snprintf(ns, ns_len, "%s", rest[0] ? rest : "/") >= (int)ns_len)
        return -ENAMETOOLONG;
    *m = *best;
    return 1;
}
