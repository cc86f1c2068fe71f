/* cp.c - `depfs cp SRC DST`: copies a file between a local path and DePFS
 * (either direction) or within DePFS. A side is DePFS when it carries a
 * label (depfs:/f, depfs@8@6:/f, depfs@8@6@1m:/f); a plain path is local.
 *
 * Data moves in chunks that are a whole number of stripes of the DePFS
 * file's layout (k * su, at least CP_CHUNK_MIN_BYTES), so every write but the
 * last one is a set of full stripes: no read-modify-write, no pre-read.
 * Napkin math: 8@6@64k -> 384 KiB stripes -> 11 stripes (4.1 MiB) a chunk. */
#include "clock.h"
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CP_CHUNK_MIN_BYTES (4u * 1024 * 1024)
#define CP_CMD "cp"
#define CP_MODE_MASK 07777u
#define BYTES_PER_MIB (1024.0 * 1024.0)

typedef struct cp_end {
    const char *arg;          /* as given on the command line */
    bool is_depfs;
    bool trailing_slash;      /* DST must then be a directory */
    depfs_label lab;          /* DePFS side: the parsed label */
    char path[CLI_PATH_MAX];  /* final path (after "copy into directory") */
    int fd;                   /* local side, -1 when closed */
    depfs_fh_t *fh;           /* DePFS side, NULL when closed */
} cp_end;

static void cp_usage(FILE *out)
{
    fprintf(out,
            "Usage: %s cp [OPTIONS] SRC DST\n"
            "\n"
            "Copy one file. A side written as a label, or a path in a DePFS mount, is in\n"
            "DePFS; another plain path is local:\n"
            "  %s cp data.bin depfs@8@6:/proj/data.bin     local -> DePFS, layout 8@6\n"
            "  %s cp data.bin depfs@10@8@1m:/proj/         into a DePFS directory\n"
            "  %s cp depfs:/proj/data.bin /tmp/copy         DePFS -> local\n"
            "  %s cp depfs:/a depfs@4@3:/b                  DePFS -> DePFS\n"
            "The destination's label chooses the new file's layout (none: the parent\n"
            "directory's layout or the cluster default). An existing destination file\n"
            "is truncated; an existing directory receives a file named like SRC.\n"
            "\n"
            "Options:\n"
            "  -c, --config PATH  cluster config\n"
            "  -v, --verbose      print bytes copied and throughput\n"
            "  -h, --help         show this help\n",
            CLI_PROG, CLI_PROG, CLI_PROG, CLI_PROG, CLI_PROG);
}

static int end_parse(cp_end *e, const char *arg)
{
    memset(e, 0, sizeof(*e));
    e->arg = arg;
    e->fd = -1;
    char ns[CLI_PATH_MAX];
    cli_mount m;
    e->is_depfs = cli_is_label(arg) || cli_mount_path(arg, ns, sizeof(ns), &m) == 1;
    if (!e->is_depfs) {
        if (strlen(arg) >= sizeof(e->path)) {
            cli_err("path too long: '%s'", arg);
            return -ENAMETOOLONG;
        }
        strcpy(e->path, arg);
        return 0;
    }
    if (cli_parse_ns_path(arg, &e->lab) < 0)
        return -EINVAL;
    if (strlen(e->lab.path) >= sizeof(e->path)) {
        cli_err("path too long: '%s'", arg);
        return -ENAMETOOLONG;
    }
    strcpy(e->path, e->lab.path);
    size_t len = strlen(e->path), arg_len = strlen(arg);
    while (len > 1 && e->path[len - 1] == '/') {
        e->path[--len] = '\0';
        e->trailing_slash = true;
    }
    if (arg_len > 1 && arg[arg_len - 1] == '/') /* a mount path's, resolved away */
        e->trailing_slash = true;
    return 0;
}

static bool ends_with_slash(const cp_end *e)
{
    size_t len = strlen(e->path);
    return e->trailing_slash || (len > 0 && e->path[len - 1] == '/');
}

/* Opens the source; fills *mode with its permission bits. */
static int src_open(depfs_t *fs, cp_end *src, mode_t *mode)
{
    struct stat st;
    int rc;

    if (!src->is_depfs) {
        src->fd = open(src->path, O_RDONLY | O_CLOEXEC);
        if (src->fd < 0 || fstat(src->fd, &st) < 0) {
            cli_err("cannot open '%s': %s", src->arg, strerror(errno));
            return -errno;
        }
    } else {
        uint64_t ino;
        rc = depfs_resolve(fs, src->path, &ino, &st);
        if (rc < 0) {
            cli_err_rc(rc, "cannot stat '%s'", src->arg);
            return rc;
        }
        if (S_ISREG(st.st_mode)) {
            rc = depfs_open(fs, src->path, O_RDONLY, 0, &src->fh);
            if (rc < 0) {
                cli_err_rc(rc, "cannot open '%s'", src->arg);
                return rc;
            }
        }
    }
    if (S_ISDIR(st.st_mode)) {
        cli_err("'%s' is a directory (copying directories is not supported)", src->arg);
        return -EISDIR;
    }
    if (!S_ISREG(st.st_mode)) {
        cli_err("'%s' is not a regular file (%s)", src->arg, cli_type_name(st.st_mode));
        return -EINVAL;
    }
    *mode = st.st_mode & CP_MODE_MASK;
    return 0;
}

/* Where the copy goes: DST itself, or DST/basename(SRC) when DST is an
 * existing directory. *dst_st gets DST's attributes when it exists. */
static int dst_resolve(depfs_t *fs, const cp_end *src, cp_end *dst, bool *exists, struct stat *dst_st)
{
    int rc;
    uint64_t ino;

    if (dst->is_depfs) {
        rc = depfs_resolve(fs, dst->path, &ino, dst_st);
    } else {
        rc = stat(dst->path, dst_st) < 0 ? -errno : 0;
    }
    *exists = rc == 0;
    if (rc < 0 && rc != -ENOENT) {
        cli_err_rc(rc, "cannot stat '%s'", dst->arg);
        return rc;
    }
    if (*exists && S_ISDIR(dst_st->st_mode)) {
        char base[CLI_PATH_MAX];
        char joined[CLI_PATH_MAX];
        cli_basename(base, sizeof(base), src->path);
        if (cli_join_path(joined, sizeof(joined), dst->path, base) < 0) {
            cli_err("path too long: '%s/%s'", dst->path, base);
            return -ENAMETOOLONG;
        }
        strcpy(dst->path, joined);
        rc = dst->is_depfs ? depfs_resolve(fs, dst->path, &ino, dst_st)
                           : (stat(dst->path, dst_st) < 0 ? -errno : 0);
        *exists = rc == 0;
        if (rc < 0 && rc != -ENOENT) {
            cli_err_rc(rc, "cannot stat '%s'", dst->path);
            return rc;
        }
        if (*exists && S_ISDIR(dst_st->st_mode)) {
            cli_err("cannot overwrite directory '%s' with a file", dst->path);
            return -EISDIR;
        }
        return 0;
    }
    if (!*exists && ends_with_slash(dst)) {
        cli_err("directory '%s' does not exist", dst->arg);
        return -ENOENT;
    }
    return 0;
}

/* Refuses to copy a file onto itself (it would be truncated first). */
static int check_not_same(const cp_end *src, const cp_end *dst, bool dst_exists,
                          const struct stat *dst_st)
{
    struct stat src_st;
    int rc;

    if (!dst_exists || src->is_depfs != dst->is_depfs)
        return 0;
    if (src->is_depfs) {
        rc = depfs_fstat(src->fh, &src_st);
        if (rc < 0)
            return 0; /* the copy itself will report the problem */
        if (src_st.st_ino == dst_st->st_ino) {
            cli_err("'%s' and '%s' are the same file", src->arg, dst->arg);
            return -EINVAL;
        }
        return 0;
    }
    if (fstat(src->fd, &src_st) == 0 && src_st.st_dev == dst_st->st_dev &&
        src_st.st_ino == dst_st->st_ino) {
        cli_err("'%s' and '%s' are the same file", src->arg, dst->arg);
        return -EINVAL;
    }
    return 0;
}

static int dst_open(depfs_t *fs, cp_end *dst, mode_t mode)
{
    mode_t mask = umask(0);
    umask(mask);
    mode &= ~mask;

    if (!dst->is_depfs) {
        dst->fd = open(dst->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        if (dst->fd < 0) {
            cli_err("cannot create '%s': %s", dst->path, strerror(errno));
            return -errno;
        }
        return 0;
    }
    char label[CLI_LABEL_MAX];
    if (cli_format_label(label, sizeof(label), &dst->lab, dst->path) < 0) {
        cli_err("path too long: '%s'", dst->path);
        return -ENAMETOOLONG;
    }
    int rc = depfs_open(fs, label, O_CREAT | O_TRUNC | O_WRONLY, mode, &dst->fh);
    if (rc < 0)
        cli_err_rc(rc, "cannot create '%s'", label);
    return rc;
}

/* Smallest whole number of stripes holding at least CP_CHUNK_MIN_BYTES,
 * from the DePFS side's layout (the destination's when both are DePFS). */
static size_t chunk_bytes(const cp_end *src, const cp_end *dst)
{
    const depfs_fh_t *fh = dst->fh != NULL ? dst->fh : src->fh;
    depfs_layout_info li;
    uint64_t stripe_bytes = 0;

    if (fh != NULL && depfs_fh_layout(fh, &li) == 0)
        stripe_bytes = (uint64_t)li.k * li.stripe_unit;
    if (stripe_bytes == 0)
        return CP_CHUNK_MIN_BYTES;
    uint64_t stripes = (CP_CHUNK_MIN_BYTES + stripe_bytes - 1) / stripe_bytes;
    return (size_t)(stripes * stripe_bytes);
}

/* Fills buf up to len bytes (fewer only at end of file). */
static ssize_t read_chunk(cp_end *src, char *buf, size_t len, uint64_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r;
        if (src->is_depfs) {
            r = depfs_read(src->fh, buf + got, len - got, off + got);
        } else {
            r = pread(src->fd, buf + got, len - got, (off_t)(off + got));
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0)
                r = -errno;
        }
        if (r < 0)
            return r;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static int write_chunk(cp_end *dst, const char *buf, size_t len, uint64_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t w;
        if (dst->is_depfs) {
            w = depfs_write(dst->fh, buf + done, len - done, off + done);
        } else {
            w = pwrite(dst->fd, buf + done, len - done, (off_t)(off + done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0)
                w = -errno;
        }
        if (w < 0)
            return (int)w;
        if (w == 0)
            return -EIO;
        done += (size_t)w;
    }
    return 0;
}

static int copy_data(cp_end *src, cp_end *dst, uint64_t *copied)
{
    size_t chunk = chunk_bytes(src, dst);
    char *buf = malloc(chunk);
    uint64_t off = 0;
    int rc = 0;

    if (buf == NULL) {
        cli_err("out of memory for a %zu-byte copy buffer", chunk);
        return -ENOMEM;
    }
    for (;;) {
        ssize_t got = read_chunk(src, buf, chunk, off);
        if (got < 0) {
            rc = (int)got;
            cli_err_rc(rc, "read '%s' at offset %llu", src->arg, (unsigned long long)off);
            goto out;
        }
        if (got == 0)
            break;
        rc = write_chunk(dst, buf, (size_t)got, off);
        if (rc < 0) {
            cli_err_rc(rc, "write '%s' at offset %llu", dst->path, (unsigned long long)off);
            goto out;
        }
        off += (uint64_t)got;
    }
out:
    *copied = off;
    free(buf);
    return rc;
}

/* Closes both ends; a failed close of the destination is a failed copy
 * (DePFS flushes buffered stripes on close). */
static int ends_close(cp_end *src, cp_end *dst)
{
    int rc = 0;
    if (src->fh != NULL)
        depfs_close(src->fh);
    if (src->fd >= 0)
        close(src->fd);
    if (dst->fh != NULL) {
        int c = depfs_close(dst->fh);
        if (c < 0) {
            cli_err_rc(c, "close '%s'", dst->path);
            rc = c;
        }
    }
    if (dst->fd >= 0 && close(dst->fd) < 0) {
        rc = -errno;
        cli_err("close '%s': %s", dst->path, strerror(errno));
    }
    src->fh = dst->fh = NULL;
    src->fd = dst->fd = -1;
    return rc;
}

static double now_s(void)
{
    return (double)clock_now_ns() / CLOCK_NS_PER_S;
}

static int cp_run(const char *config_path, const char *src_arg, const char *dst_arg, bool verbose)
{
    cp_end src, dst;
    depfs_t *fs = NULL;
    struct stat dst_st;
    bool dst_exists = false;
    mode_t mode = 0;
    uint64_t copied = 0;
    int rc;
    double t0 = now_s();

    if (end_parse(&src, src_arg) < 0 || end_parse(&dst, dst_arg) < 0)
        return CLI_EXIT_USAGE;
    if (!src.is_depfs && !dst.is_depfs)
        return cli_usage_err(CP_CMD, "neither SRC nor DST is a DePFS label (depfs:/path); use cp(1) for local copies");
    if (cli_connect(config_path, &fs) < 0)
        return CLI_EXIT_FAIL;

    rc = src_open(fs, &src, &mode);
    if (rc == 0)
        rc = dst_resolve(fs, &src, &dst, &dst_exists, &dst_st);
    if (rc == 0)
        rc = check_not_same(&src, &dst, dst_exists, &dst_st);
    if (rc == 0)
        rc = dst_open(fs, &dst, mode);
    if (rc == 0)
        rc = copy_data(&src, &dst, &copied);
    int crc = ends_close(&src, &dst);
    if (rc == 0)
        rc = crc;
    depfs_unmount(fs);
    if (rc == 0 && verbose) {
        double secs = now_s() - t0;
        printf("%s -> %s: %llu bytes in %.3f s (%.1f MiB/s)\n", src_arg, dst.path,
               (unsigned long long)copied, secs, secs > 0 ? (double)copied / BYTES_PER_MIB / secs : 0.0);
    }
    return rc == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

int cli_cmd_cp(int argc, char **argv, const char *config_path)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, CLI_OPT_CONFIG},
        {"help", no_argument, NULL, CLI_OPT_HELP},
        {"verbose", no_argument, NULL, 'v'},
        {NULL, 0, NULL, 0},
    };
    bool verbose = false;
    int c;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:hv", opts, NULL)) != -1) {
        switch (c) {
        case CLI_OPT_CONFIG: config_path = optarg; break;
        case CLI_OPT_HELP: cp_usage(stdout); return CLI_EXIT_OK;
        case 'v': verbose = true; break;
        case ':': return cli_usage_err(CP_CMD, "option '%s' needs an argument", argv[optind - 1]);
        default: return cli_usage_err(CP_CMD, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 2)
        return cli_usage_err(CP_CMD, "expected SRC and DST, got %d argument(s)", argc - optind);
    return cp_run(config_path, argv[optind], argv[optind + 1], verbose);
}
