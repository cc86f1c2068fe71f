/* migrate.c - `depfs migrate -r N@K[@SU] PATH...`: re-encode files into
 * another layout while they stay readable (Lustre's `lfs migrate`). For
 * each regular file (directories: every regular file below, recursively):
 * take its data version, create a copy of the new layout in its directory
 * without a name (O_TMPFILE: only our open handle keeps it, so a killed
 * migrate leaves a purge queue entry, drained once that hold ends), copy the data
 * extents (holes stay holes), fsync, and ask the MDS to swap
 * (depfs_migrate_swap): the copy takes the file's name and attributes in
 * one commit unless the file changed meanwhile (then the copy is dropped
 * and made again, up to MG_ATTEMPTS_MAX times). Progress on stderr (a bar
 * on a terminal), a JSON summary with --json. */
#include "cli.h"
#include "json.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

#define MG_CMD "migrate"
#define MG_ATTEMPTS_MAX 5u           /* copies made of one file before giving up */
#define MG_RETRY_PAUSE_MS 200u       /* first pause between attempts; doubles */
#define MG_CHUNK_MIN_BYTES (4u << 20) /* bytes copied per read/write (whole stripes) */
#define MG_DEPTH_MAX 256u            /* directory levels walked */
#define MG_PROGRESS_PERIOD_MS 500u   /* progress output at most this often */
#define MG_BAR_WIDTH 30u
#define MG_PERCENT 100.0
#define MG_SPEC_ERR_MAX 256u
#define MG_COPY_MODE 0600u           /* the copy's mode until it takes the file's */
#define MG_NS_PER_MS 1000000L

typedef enum { MG_MIGRATED, MG_SKIPPED, MG_FAILED } mg_status;

static const char *const status_names[] = { "migrated", "skipped", "failed" };

/* What the run asked and what it did. */
typedef struct mg_run {
    depfs_t *fs;
    unsigned n, k;
    uint32_t su;          /* 0: keep each file's stripe unit */
    bool json, tty;
    cli_json j;           /* --json: results as they come */
    uint64_t files, migrated, skipped, failed, retries, bytes;
    uint64_t last_report_ms;
} mg_run;

static void migrate_usage(FILE *out)
{
    fprintf(out,
            "Usage: %s migrate -r N@K[@SU] [--json] PATH...\n"
            "\n"
            "Re-encodes files into another layout while they stay readable: each file\n"
            "is copied into new strip files of layout N@K[@SU] (SU: the file's own when\n"
            "left out) and switched to them in one MDS commit, keeping its name, data,\n"
            "mode, owner, times and xattrs. A file written to during the copy is copied\n"
            "again (at most %u times); one held open for writing elsewhere is left as\n"
            "it is (failed, 'busy'). Handles opened before keep reading the old strip\n"
            "files until they close; the old strip files then go with the purge queue.\n"
            "The file's inode number changes; files with hard links are refused.\n"
            "A directory PATH migrates every regular file below it.\n"
            "PATH: a path in a DePFS mount, a DePFS namespace path or a label.\n"
            "\n"
            "Options:\n"
            "  -r, --layout N@K[@SU]  the new layout (required)\n"
            "  -c, --config PATH      cluster config\n"
            "  -j, --json             print a JSON summary on stdout\n"
            "  -h, --help             show this help\n"
            "\n"
            "Exit status: 0 every file migrated or already in the layout, 1 a file\n"
            "failed, 2 usage.\n",
            CLI_PROG, MG_ATTEMPTS_MAX);
}

/* ----------------------------------------------------------- progress */

static void progress(mg_run *r, const char *path, bool force)
{
    uint64_t now = clock_now_ms();
    if (!force && now - r->last_report_ms < MG_PROGRESS_PERIOD_MS)
        return;
    r->last_report_ms = now;
    if (r->tty) {
        char bar[MG_BAR_WIDTH + 1];
        uint64_t done = r->migrated + r->skipped + r->failed;
        double frac = r->files ? (double)done / (double)r->files : 1.0;
        unsigned fill = (unsigned)(frac * MG_BAR_WIDTH);
        for (unsigned i = 0; i < MG_BAR_WIDTH; i++)
            bar[i] = i < fill ? '#' : '-';
        bar[MG_BAR_WIDTH] = '\0';
        fprintf(stderr, "\r[%s] %5.1f%% files %llu/%llu %llu MB %s\033[K", bar, frac * MG_PERCENT,
                (unsigned long long)done, (unsigned long long)r->files,
                (unsigned long long)(r->bytes >> 20), path);
    } else if (force) {
        fprintf(stderr, "%s: migrate: %s\n", CLI_PROG, path);
    }
    fflush(stderr);
}

/* ------------------------------------------------------------ copying */

static void pause_ms(unsigned ms)
{
    struct timespec ts = { .tv_sec = ms / 1000u, .tv_nsec = (long)(ms % 1000u) * MG_NS_PER_MS };
    nanosleep(&ts, NULL);
}

static int read_full(depfs_fh_t *fh, char *buf, size_t len, uint64_t off, size_t *got)
{
    *got = 0;
    while (*got < len) {
        ssize_t r = depfs_read(fh, buf + *got, len - *got, off + *got);
        if (r < 0)
            return (int)r;
        if (r == 0)
            break;
        *got += (size_t)r;
    }
    return 0;
}

/* Bytes [off, end) of src into dst at the same offsets. */
static int copy_range(mg_run *r, depfs_fh_t *src, depfs_fh_t *dst, char *buf, size_t chunk,
                      uint64_t off, uint64_t end, const char *path)
{
    while (off < end) {
        size_t want = end - off < chunk ? (size_t)(end - off) : chunk, got;
        int rc = read_full(src, buf, want, off, &got);
        if (rc == 0 && got != want) /* the size is fixed while we copy (data version) */
            rc = -ESTALE;
        if (rc < 0)
            return rc;
        ssize_t w = depfs_write(dst, buf, got, off);
        if (w < 0)
            return (int)w;
        off += got;
        r->bytes += got;
        progress(r, path, false);
    }
    return 0;
}

/* The data extents of src (SEEK_DATA/SEEK_HOLE) into dst, which then gets
 * src's size (a trailing hole). */
static int copy_file(mg_run *r, depfs_fh_t *src, depfs_fh_t *dst, uint64_t size, const char *path)
{
    depfs_layout_info li;
    size_t chunk = MG_CHUNK_MIN_BYTES;
    if (depfs_fh_layout(dst, &li) == 0 && li.k && li.stripe_unit) {
        uint64_t stripe = (uint64_t)li.k * li.stripe_unit;
        chunk = (size_t)(((MG_CHUNK_MIN_BYTES + stripe - 1) / stripe) * stripe);
    }
    char *buf = malloc(chunk);
    if (!buf)
        return -ENOMEM;
    uint64_t off = 0;
    int rc = 0;
    while (off < size && rc == 0) {
        uint64_t data, hole;
        rc = depfs_lseek(src, off, SEEK_DATA, &data);
        if (rc == -ENXIO) { /* no data up to the end */
            rc = 0;
            break;
        }
        if (rc == 0)
            rc = depfs_lseek(src, data, SEEK_HOLE, &hole);
        if (rc < 0)
            break;
        if (hole > size)
            hole = size;
        rc = copy_range(r, src, dst, buf, chunk, data, hole, path);
        off = hole;
    }
    free(buf);
    if (rc == 0)
        rc = depfs_ftruncate(dst, size); /* the size, whatever holes end the file */
    return rc;
}

/* ------------------------------------------------------------ one file */

/* One attempt: a copy made at the file's data version, then the swap. */
static int attempt(mg_run *r, uint64_t parent, const char *name, uint64_t ino, const char *path,
                   uint64_t *copy_ino, struct stat *after)
{
    depfs_fh_t *src = NULL, *dst = NULL;
    depfs_layout_info want = { .n = r->n, .k = r->k, .stripe_unit = r->su };
    uint64_t version;
    struct stat st;

    int rc = depfs_data_version(r->fs, ino, &version); /* before any byte is read */
    if (rc == 0)
        rc = depfs_open_ino(r->fs, ino, O_RDONLY, &src);
    if (rc == 0)
        rc = depfs_fstat(src, &st);
    if (rc == 0)
        rc = depfs_create(r->fs, parent, NULL, MG_COPY_MODE, O_RDWR | O_TMPFILE, NULL, &want, NULL, &dst);
    if (rc < 0) /* the copy has no name: only our handle keeps it */
        goto out;
    *copy_ino = depfs_fh_ino(dst);
    rc = copy_file(r, src, dst, (uint64_t)st.st_size, path);
    if (rc == 0)
        rc = depfs_fsync(dst); /* bytes durable, size at the MDS */
    if (rc == 0)
        rc = depfs_migrate_swap(r->fs, parent, name, ino, *copy_ino, version, after);
out:
    if (dst && depfs_close(dst) < 0 && rc == 0)
        rc = -EIO;
    if (src)
        depfs_close(src);
    return rc;
}

static bool in_layout(const mg_run *r, const depfs_layout_info *li)
{
    return li->n == r->n && li->k == r->k && (r->su == 0 || li->stripe_unit == r->su);
}

/* A swap whose reply was lost (the MDS call was sent again) may have been
 * applied: the name links the copy, copy_ino, now. */
static bool swapped_anyway(mg_run *r, uint64_t parent, const char *name, uint64_t copy_ino)
{
    struct stat st;
    return copy_ino != 0 && depfs_lookup(r->fs, parent, name, &st) == 0 &&
           (uint64_t)st.st_ino == copy_ino;
}

static void result(mg_run *r, const char *path, mg_status s, uint64_t ino_before, uint64_t ino_after,
                   unsigned attempts, int err)
{
    if (s == MG_MIGRATED)
        r->migrated++;
    else if (s == MG_SKIPPED)
        r->skipped++;
    else
        r->failed++;
    if (err)
        cli_err("migrate '%s': %s (%s)", path, strerror(-err), depfs_last_error());
    progress(r, path, true);
    if (!r->json)
        return;
    cli_json_begin_object(&r->j, NULL);
    cli_json_string(&r->j, "path", path);
    cli_json_string(&r->j, "status", status_names[s]);
    cli_json_uint(&r->j, "ino_before", ino_before);
    cli_json_uint(&r->j, "ino_after", ino_after);
    cli_json_uint(&r->j, "attempts", attempts);
    if (err)
        cli_json_string(&r->j, "error", strerror(-err));
    cli_json_end_object(&r->j);
}

static void migrate_file(mg_run *r, uint64_t parent, const char *name, const char *path)
{
    struct stat st, after;
    depfs_layout_info li = { 0 };
    unsigned pause = MG_RETRY_PAUSE_MS, nth = 0;
    int rc = depfs_lookup(r->fs, parent, name, &st);
    if (rc == 0)
        rc = depfs_get_layout(r->fs, (uint64_t)st.st_ino, &li);
    if (rc < 0) {
        result(r, path, MG_FAILED, 0, 0, 0, rc);
        return;
    }
    uint64_t ino = (uint64_t)st.st_ino;
    if (in_layout(r, &li)) {
        result(r, path, MG_SKIPPED, ino, ino, 0, 0);
        return;
    }
    for (nth = 1; nth <= MG_ATTEMPTS_MAX; nth++) {
        uint64_t copy_ino = 0;
        rc = attempt(r, parent, name, ino, path, &copy_ino, &after);
        if (rc == -ESTALE && swapped_anyway(r, parent, name, copy_ino))
            rc = depfs_lookup(r->fs, parent, name, &after);
        if (rc != -ESTALE && rc != -EBUSY)
            break;
        if (nth < MG_ATTEMPTS_MAX) {
            r->retries++;
            cli_err("migrate '%s': %s (%s); copying again", path, strerror(-rc), depfs_last_error());
            pause_ms(pause);
            pause *= 2;
        }
    }
    if (nth > MG_ATTEMPTS_MAX)
        nth = MG_ATTEMPTS_MAX;
    result(r, path, rc == 0 ? MG_MIGRATED : MG_FAILED, ino, rc == 0 ? (uint64_t)after.st_ino : ino, nth, rc);
}

/* ------------------------------------------------------------- walking */

static void migrate_tree(mg_run *r, uint64_t dir, const char *path, unsigned depth);

static void migrate_entry(mg_run *r, uint64_t parent, const cli_dirent *e, const char *path,
                          unsigned depth)
{
    mode_t type = 0;
    int rc = cli_dirent_type(r->fs, e, &type);
    if (rc < 0) {
        r->files++;
        result(r, path, MG_FAILED, e->ino, e->ino, 0, rc);
        return;
    }
    if (S_ISDIR(type)) {
        migrate_tree(r, e->ino, path, depth + 1);
    } else if (S_ISREG(type)) {
        r->files++;
        migrate_file(r, parent, e->name, path);
    } /* other types have no data */
}

static void migrate_tree(mg_run *r, uint64_t dir, const char *path, unsigned depth)
{
    cli_dir_list l = { 0 };
    char child[CLI_PATH_MAX];
    if (depth > MG_DEPTH_MAX) {
        r->files++;
        result(r, path, MG_FAILED, dir, dir, 0, -ELOOP);
        return;
    }
    int rc = cli_dir_read(r->fs, dir, &l);
    if (rc < 0) {
        r->files++;
        result(r, path, MG_FAILED, dir, dir, 0, rc);
        cli_dir_free(&l);
        return;
    }
    for (size_t i = 0; i < l.count; i++) {
        if (cli_join_path(child, sizeof child, path, l.v[i].name) < 0) {
            r->files++;
            result(r, path, MG_FAILED, l.v[i].ino, l.v[i].ino, 0, -ENAMETOOLONG);
            continue;
        }
        migrate_entry(r, dir, &l.v[i], child, depth);
    }
    cli_dir_free(&l);
}

static void migrate_arg(mg_run *r, const char *arg)
{
    depfs_label lab;
    char parent[CLI_PATH_MAX], name[CLI_PATH_MAX];
    uint64_t ino, pino;
    struct stat st;
    if (cli_parse_ns_path(arg, &lab) < 0) {
        r->files++;
        result(r, arg, MG_FAILED, 0, 0, 0, -EINVAL);
        return;
    }
    int rc = depfs_resolve(r->fs, lab.path, &ino, &st);
    if (rc == 0 && S_ISDIR(st.st_mode)) {
        migrate_tree(r, ino, lab.path, 0);
        return;
    }
    if (rc == 0 && !S_ISREG(st.st_mode))
        rc = -EINVAL;
    if (rc == 0)
        rc = cli_split_path(lab.path, parent, sizeof parent, name, sizeof name);
    if (rc == 0)
        rc = depfs_resolve(r->fs, parent, &pino, NULL);
    r->files++;
    if (rc < 0) {
        result(r, arg, MG_FAILED, 0, 0, 0, rc);
        return;
    }
    migrate_file(r, pino, name, lab.path);
}

/* ---------------------------------------------------------------- main */

static int parse_layout(mg_run *r, const char *spec)
{
    char why[MG_SPEC_ERR_MAX] = "";
    if (label_parse_spec(spec, &r->n, &r->k, &r->su, why, sizeof why) < 0)
        return cli_usage_err(MG_CMD, "bad layout '%s': %s (expected N@K or N@K@SU, e.g. 4@2 or "
                             "8@6@64k)", spec, why[0] ? why : "invalid");
    return 0;
}

static void summary(mg_run *r)
{
    if (r->tty)
        fprintf(stderr, "\n");
    if (!r->json) {
        printf("migrated %llu, skipped %llu (already in %u@%u), failed %llu, retries %llu, %llu bytes "
               "copied\n", (unsigned long long)r->migrated, (unsigned long long)r->skipped, r->n, r->k,
               (unsigned long long)r->failed, (unsigned long long)r->retries,
               (unsigned long long)r->bytes);
        return;
    }
    cli_json_end_array(&r->j);
    cli_json_uint(&r->j, "files", r->files);
    cli_json_uint(&r->j, "migrated", r->migrated);
    cli_json_uint(&r->j, "skipped", r->skipped);
    cli_json_uint(&r->j, "failed", r->failed);
    cli_json_uint(&r->j, "retries", r->retries);
    cli_json_uint(&r->j, "bytes_copied", r->bytes);
    cli_json_end_object(&r->j);
    cli_json_finish(&r->j);
}

int cli_cmd_migrate(int argc, char **argv, const char *config_path)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, CLI_OPT_CONFIG},
        {"help", no_argument, NULL, CLI_OPT_HELP},
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"layout", required_argument, NULL, 'r'},
        {NULL, 0, NULL, 0},
    };
    mg_run r = { 0 };
    const char *spec = NULL;
    int c;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:hjr:", opts, NULL)) != -1) {
        switch (c) {
        case CLI_OPT_CONFIG: config_path = optarg; break;
        case CLI_OPT_HELP: migrate_usage(stdout); return CLI_EXIT_OK;
        case CLI_OPT_JSON: r.json = true; break;
        case 'r': spec = optarg; break;
        case ':': return cli_usage_err(MG_CMD, "option '%s' needs an argument", argv[optind - 1]);
        default: return cli_usage_err(MG_CMD, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!spec)
        return cli_usage_err(MG_CMD, "the new layout is required: -r N@K[@SU]");
    if (optind >= argc)
        return cli_usage_err(MG_CMD, "missing PATH");
    if (parse_layout(&r, spec) != 0)
        return CLI_EXIT_USAGE;
    for (int i = optind; i < argc; i++) {
        depfs_label lab;
        if (cli_parse_ns_path(argv[i], &lab) < 0)
            return CLI_EXIT_USAGE;
    }
    if (cli_connect(config_path, &r.fs) < 0)
        return CLI_EXIT_FAIL;
    r.tty = isatty(STDERR_FILENO) != 0;
    if (r.json) {
        cli_json_init(&r.j, stdout);
        cli_json_begin_object(&r.j, NULL);
        cli_json_string(&r.j, "layout", spec);
        cli_json_begin_array(&r.j, "results");
    }
    for (int i = optind; i < argc; i++)
        migrate_arg(&r, argv[i]);
    summary(&r);
    depfs_unmount(r.fs);
    return r.failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
