/* scrub.c - `depfs scrub [PATH...] | --all [--repair]`: walks files (directories
 * recursively, --all from "/"), has libdepfs check every stripe of every
 * regular file (depfs_scrub_file) and prints one line per bad unit it names
 *   scrub: /d/f (inode 12) stripe 37 unit 2 (data) on server 4: checksum mismatch - repaired
 * (units of an unreachable server: one line per file and server), then a
 * summary line
 *   scrub: N files, M stripes checked, B inconsistent, U unreadable
 * and, when anything was found, a line of bad units by cause and repairs.
 * Exit status 1 when anything bad remains unrepaired (without --repair:
 * anything found) or a file could not be scrubbed. */
#include "cli.h"
#include "json.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCRUB_CMD "scrub"
#define SCRUB_MAX_DEPTH 256u

typedef struct scrub_ctx {
    depfs_t *fs;
    bool repair;
    bool verbose;
    bool json;
    cli_json j;
    uint64_t files, errors;
    depfs_scrub_report total;   /* sums over the files */
    /* the file being scrubbed: its path and its unreachable units per server */
    const char *path;
    unsigned n_unreach;
    uint32_t unreach_server[DEPFS_MAX_SERVERS_PER_FILE];
    uint64_t unreach_units[DEPFS_MAX_SERVERS_PER_FILE];
} scrub_ctx;

/* Cause names of --json (stable) and of the text lines. */
static const char *cause_key(int cause)
{
    switch (cause) {
    case DEPFS_SCRUB_CHECKSUM: return "checksum";
    case DEPFS_SCRUB_IO_ERROR: return "io_error";
    case DEPFS_SCRUB_MISSING: return "missing";
    case DEPFS_SCRUB_UNREACHABLE: return "unreachable";
    case DEPFS_SCRUB_MISMATCH: return "mismatch";
    case DEPFS_SCRUB_MISMATCH_UNLOCATED: return "mismatch_unlocated";
    default: return "unknown";
    }
}

static const char *cause_text(int cause)
{
    switch (cause) {
    case DEPFS_SCRUB_CHECKSUM: return "checksum mismatch";
    case DEPFS_SCRUB_IO_ERROR: return "I/O error";
    case DEPFS_SCRUB_MISSING: return "missing";
    case DEPFS_SCRUB_UNREACHABLE: return "server unreachable";
    case DEPFS_SCRUB_MISMATCH: return "parity mismatch with good checksums, located in this unit";
    case DEPFS_SCRUB_MISMATCH_UNLOCATED: return "parity mismatch with good checksums, unit not located";
    default: return "unknown cause";
    }
}

static const char *outcome_text(const scrub_ctx *s, const depfs_scrub_finding *f)
{
    if (f->repaired)
        return f->cause == DEPFS_SCRUB_MISMATCH_UNLOCATED
                   ? "parity rewritten from the data (suspected bug)"
                   : "repaired";
    if (f->unrepairable)
        return "unrepairable (more bad units than parity units)";
    if (f->cause == DEPFS_SCRUB_UNREACHABLE)
        return "not checked";
    return s->repair ? "NOT repaired (see errors)" : "not repaired (--repair rebuilds it)";
}

static void finding_json(scrub_ctx *s, const depfs_scrub_finding *f)
{
    bool unit = f->unit != DEPFS_SCRUB_UNIT_NONE;
    cli_json_begin_object(&s->j, NULL);
    cli_json_uint(&s->j, "stripe", f->stripe);
    if (unit) {
        cli_json_uint(&s->j, "unit", f->unit);
        cli_json_string(&s->j, "kind", f->parity ? "parity" : "data");
        cli_json_uint(&s->j, "server", f->server_id);
    } else {
        cli_json_null(&s->j, "unit");
        cli_json_null(&s->j, "kind");
        cli_json_null(&s->j, "server");
    }
    cli_json_string(&s->j, "cause", cause_key(f->cause));
    cli_json_string(&s->j, "error", f->error ? strerror(f->error) : NULL);
    cli_json_bool(&s->j, "repaired", f->repaired);
    cli_json_bool(&s->j, "unrepairable", f->unrepairable);
    cli_json_end_object(&s->j);
}

/* depfs_scrub_fn: one finding of the file being scrubbed. */
static void on_finding(void *arg, const depfs_scrub_finding *f)
{
    scrub_ctx *s = arg;
    if (s->json) {
        finding_json(s, f);
        return;
    }
    if (f->cause == DEPFS_SCRUB_UNREACHABLE) {
        unsigned i = 0;
        while (i < s->n_unreach && s->unreach_server[i] != f->server_id)
            i++;
        if (i < DEPFS_MAX_SERVERS_PER_FILE) {
            if (i == s->n_unreach) {
                s->unreach_server[s->n_unreach++] = f->server_id;
                s->unreach_units[i] = 0;
            }
            s->unreach_units[i]++;
            return;
        }
    }
    if (f->unit == DEPFS_SCRUB_UNIT_NONE) {
        printf("scrub: %s (inode %llu) stripe %llu: %s - %s\n", s->path,
               (unsigned long long)f->ino, (unsigned long long)f->stripe, cause_text(f->cause),
               outcome_text(s, f));
        return;
    }
    char why[160];
    if (f->cause == DEPFS_SCRUB_IO_ERROR)
        snprintf(why, sizeof why, "%s (%s)", cause_text(f->cause), strerror(f->error));
    else
        snprintf(why, sizeof why, "%s", cause_text(f->cause));
    printf("scrub: %s (inode %llu) stripe %llu unit %u (%s) on server %u: %s - %s\n", s->path,
           (unsigned long long)f->ino, (unsigned long long)f->stripe, f->unit,
           f->parity ? "parity" : "data", f->server_id, why, outcome_text(s, f));
}

static void total_add(depfs_scrub_report *t, const depfs_scrub_report *r)
{
    t->stripes_checked += r->stripes_checked;
    t->stripes_bad += r->stripes_bad;
    t->stripes_unreadable += r->stripes_unreadable;
    t->units_checksum += r->units_checksum;
    t->units_io_error += r->units_io_error;
    t->units_missing += r->units_missing;
    t->units_unreachable += r->units_unreachable;
    t->units_mismatch += r->units_mismatch;
    t->stripes_unlocated += r->stripes_unlocated;
    t->units_repaired += r->units_repaired;
    t->stripes_parity_rewritten += r->stripes_parity_rewritten;
    t->stripes_unrepairable += r->stripes_unrepairable;
    t->findings_unrepaired += r->findings_unrepaired;
}

static uint64_t units_bad(const depfs_scrub_report *r)
{
    return r->units_checksum + r->units_io_error + r->units_missing + r->units_unreachable +
           r->units_mismatch;
}

static void scrub_usage(FILE *out)
{
    fprintf(out,
            "Usage: %s scrub [OPTIONS] PATH...\n"
            "       %s scrub [OPTIONS] --all\n"
            "\n"
            "Re-read every stripe of each regular file (directories are walked\n"
            "recursively; --all walks the whole namespace from /) under its stripe\n"
            "locks, and name every bad unit: its stripe, unit, server and cause\n"
            "(checksum mismatch, I/O error, missing, server unreachable, or a parity\n"
            "mismatch with good checksums, located in one unit when the layout has\n"
            "two or more parity units). One line per bad unit, then a summary:\n"
            "  scrub: N files, M stripes checked, B inconsistent, U unreadable\n"
            "Exit status: 0 nothing bad left (all clean, or all repaired), 1 a bad unit\n"
            "left unrepaired or a file that could not be scrubbed, 2 usage.\n"
            "\n"
            "Options:\n"
            "  -a, --all          scrub every file in the namespace\n"
            "  -r, --repair       rebuild exactly the bad units from the good ones (an\n"
            "                     unlocated mismatch: parity rewritten from the data)\n"
            "  -v, --verbose      print every file, clean ones too\n"
            "  -j, --json         print a JSON report instead of text\n"
            "  -c, --config PATH  cluster config\n"
            "  -h, --help         show this help\n",
            CLI_PROG, CLI_PROG);
}

/* The end of a file's report: counters (JSON), or the unreachable units
 * and problems that need a line of their own (text). */
static void file_report(scrub_ctx *s, const char *path, uint64_t ino, const depfs_scrub_report *rep,
                        const char *error)
{
    if (s->json) {
        cli_json_end_array(&s->j); /* findings */
        cli_json_uint(&s->j, "stripes_checked", rep->stripes_checked);
        cli_json_uint(&s->j, "stripes_bad", rep->stripes_bad);
        cli_json_uint(&s->j, "stripes_unreadable", rep->stripes_unreadable);
        if (rep->stripes_bad > 0)
            cli_json_uint(&s->j, "first_bad_stripe", rep->first_bad_stripe);
        else
            cli_json_null(&s->j, "first_bad_stripe");
        cli_json_uint(&s->j, "units_bad", units_bad(rep));
        cli_json_uint(&s->j, "findings_unrepaired", rep->findings_unrepaired);
        cli_json_bool(&s->j, "repaired", error == NULL && rep->findings_unrepaired == 0 &&
                                             (units_bad(rep) > 0 || rep->stripes_unlocated > 0));
        cli_json_string(&s->j, "error", error);
        cli_json_end_object(&s->j);
        return;
    }
    for (unsigned i = 0; i < s->n_unreach; i++)
        printf("scrub: %s (inode %llu): %llu unit(s) on server %u not checked: server unreachable\n",
               path, (unsigned long long)ino, (unsigned long long)s->unreach_units[i],
               s->unreach_server[i]);
    if (error != NULL)
        return; /* already on stderr */
    if (s->verbose && units_bad(rep) == 0 && rep->stripes_unlocated == 0)
        printf("%s: ok, %llu stripe(s)\n", path, (unsigned long long)rep->stripes_checked);
}

static void scrub_file(scrub_ctx *s, const char *path, uint64_t ino)
{
    depfs_scrub_report rep;
    memset(&rep, 0, sizeof(rep));
    depfs_scrub_options opt = {.repair = s->repair, .on_finding = on_finding, .arg = s};

    s->files++;
    s->path = path;
    s->n_unreach = 0;
    if (s->json) {
        cli_json_begin_object(&s->j, NULL);
        cli_json_string(&s->j, "path", path);
        cli_json_uint(&s->j, "ino", ino);
        cli_json_begin_array(&s->j, "findings");
    }
    int rc = depfs_scrub_file(s->fs, ino, &opt, &rep);
    total_add(&s->total, &rep);
    if (rc < 0) {
        char why[CLI_PATH_MAX];
        const char *detail = depfs_last_error();
        snprintf(why, sizeof(why), "%s%s%s%s", strerror(-rc), detail && detail[0] ? " (" : "",
                 detail && detail[0] ? detail : "", detail && detail[0] ? ")" : "");
        cli_err("scrub '%s': %s", path, why);
        s->errors++;
        file_report(s, path, ino, &rep, why);
        return;
    }
    file_report(s, path, ino, &rep, NULL);
}

static void scrub_tree(scrub_ctx *s, const char *path, uint64_t ino, mode_t type, unsigned depth);

static void scrub_dir(scrub_ctx *s, const char *path, uint64_t ino, unsigned depth)
{
    cli_dir_list l;

    if (depth >= SCRUB_MAX_DEPTH) {
        cli_err("'%s': deeper than %u levels, not descending", path, SCRUB_MAX_DEPTH);
        s->errors++;
        return;
    }
    /* Collect first, recurse after: no library call from inside readdir. */
    int rc = cli_dir_read(s->fs, ino, &l);
    if (rc < 0) {
        cli_err_rc(rc, "cannot list '%s'", path);
        s->errors++;
        goto out;
    }
    for (size_t i = 0; i < l.count; i++) {
        char child[CLI_PATH_MAX];
        mode_t t;
        if (cli_join_path(child, sizeof(child), path, l.v[i].name) < 0) {
            cli_err("path too long under '%s'", path);
            s->errors++;
            continue;
        }
        rc = cli_dirent_type(s->fs, &l.v[i], &t);
        if (rc < 0) {
            if (rc != -ENOENT) { /* removed meanwhile: nothing to scrub */
                cli_err_rc(rc, "cannot stat '%s'", child);
                s->errors++;
            }
            continue;
        }
        scrub_tree(s, child, l.v[i].ino, t, depth + 1);
    }
out:
    cli_dir_free(&l);
}

static void scrub_tree(scrub_ctx *s, const char *path, uint64_t ino, mode_t type, unsigned depth)
{
    if (S_ISREG(type))
        scrub_file(s, path, ino);
    else if (S_ISDIR(type))
        scrub_dir(s, path, ino, depth);
    /* symlinks, fifos, devices: no data, nothing to scrub */
}

static void scrub_arg(scrub_ctx *s, const char *arg)
{
    depfs_label lab;
    struct stat st;
    uint64_t ino;

    if (cli_parse_ns_path(arg, &lab) < 0) {
        s->errors++;
        return;
    }
    int rc = depfs_resolve(s->fs, lab.path, &ino, &st);
    if (rc < 0) {
        cli_err_rc(rc, "cannot stat '%s'", arg);
        s->errors++;
        return;
    }
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
        cli_err("'%s' is a %s: nothing to scrub", arg, cli_type_name(st.st_mode));
    scrub_tree(s, lab.path, ino, st.st_mode & S_IFMT, 0);
}

static bool scrub_clean(const scrub_ctx *s)
{
    return s->total.findings_unrepaired == 0 && s->errors == 0;
}

static void summary_json(scrub_ctx *s)
{
    const depfs_scrub_report *t = &s->total;
    cli_json_end_array(&s->j);
    cli_json_begin_object(&s->j, "summary");
    cli_json_uint(&s->j, "files", s->files);
    cli_json_uint(&s->j, "stripes_checked", t->stripes_checked);
    cli_json_uint(&s->j, "stripes_bad", t->stripes_bad);
    cli_json_uint(&s->j, "stripes_unreadable", t->stripes_unreadable);
    cli_json_begin_object(&s->j, "units_bad");
    cli_json_uint(&s->j, "checksum", t->units_checksum);
    cli_json_uint(&s->j, "io_error", t->units_io_error);
    cli_json_uint(&s->j, "missing", t->units_missing);
    cli_json_uint(&s->j, "unreachable", t->units_unreachable);
    cli_json_uint(&s->j, "mismatch", t->units_mismatch);
    cli_json_end_object(&s->j);
    cli_json_uint(&s->j, "stripes_mismatch_unlocated", t->stripes_unlocated);
    cli_json_uint(&s->j, "units_repaired", t->units_repaired);
    cli_json_uint(&s->j, "stripes_parity_rewritten", t->stripes_parity_rewritten);
    cli_json_uint(&s->j, "stripes_unrepairable", t->stripes_unrepairable);
    cli_json_uint(&s->j, "unrepaired", t->findings_unrepaired);
    cli_json_uint(&s->j, "errors", s->errors);
    /* nothing found at all; the exit status says whether anything is left */
    cli_json_bool(&s->j, "clean", units_bad(t) == 0 && t->stripes_unlocated == 0 &&
                                      t->stripes_bad == 0 && s->errors == 0);
    cli_json_end_object(&s->j);
    cli_json_end_object(&s->j);
    cli_json_finish(&s->j);
}

static void summary(scrub_ctx *s)
{
    const depfs_scrub_report *t = &s->total;
    if (s->json) {
        summary_json(s);
        return;
    }
    printf("scrub: %llu files, %llu stripes checked, %llu inconsistent, %llu unreadable\n",
           (unsigned long long)s->files, (unsigned long long)t->stripes_checked,
           (unsigned long long)t->stripes_bad, (unsigned long long)t->stripes_unreadable);
    if (units_bad(t) > 0 || t->stripes_unlocated > 0)
        printf("scrub: %llu bad units (%llu checksum, %llu I/O error, %llu missing, "
               "%llu unreachable, %llu located mismatch), %llu unlocated mismatches; "
               "%llu units repaired, %llu parity rewrites, %llu stripes unrepairable, "
               "%llu left unrepaired\n",
               (unsigned long long)units_bad(t), (unsigned long long)t->units_checksum,
               (unsigned long long)t->units_io_error, (unsigned long long)t->units_missing,
               (unsigned long long)t->units_unreachable, (unsigned long long)t->units_mismatch,
               (unsigned long long)t->stripes_unlocated, (unsigned long long)t->units_repaired,
               (unsigned long long)t->stripes_parity_rewritten,
               (unsigned long long)t->stripes_unrepairable,
               (unsigned long long)t->findings_unrepaired);
    if (s->errors > 0)
        printf("scrub: %llu errors (see above)\n", (unsigned long long)s->errors);
}

int cli_cmd_scrub(int argc, char **argv, const char *config_path)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, CLI_OPT_CONFIG},
        {"help", no_argument, NULL, CLI_OPT_HELP},
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"all", no_argument, NULL, 'a'},
        {"repair", no_argument, NULL, 'r'},
        {"verbose", no_argument, NULL, 'v'},
        {NULL, 0, NULL, 0},
    };
    scrub_ctx s;
    bool all = false;
    int c;

    memset(&s, 0, sizeof(s));
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:hjarv", opts, NULL)) != -1) {
        switch (c) {
        case CLI_OPT_CONFIG: config_path = optarg; break;
        case CLI_OPT_HELP: scrub_usage(stdout); return CLI_EXIT_OK;
        case CLI_OPT_JSON: s.json = true; break;
        case 'a': all = true; break;
        case 'r': s.repair = true; break;
        case 'v': s.verbose = true; break;
        case ':': return cli_usage_err(SCRUB_CMD, "option '%s' needs an argument", argv[optind - 1]);
        default: return cli_usage_err(SCRUB_CMD, "unknown option '%s'", argv[optind - 1]);
        }
    }
    int nargs = argc - optind;
    if (all && nargs > 0)
        return cli_usage_err(SCRUB_CMD, "give either PATHs or --all, not both");
    if (!all && nargs == 0)
        return cli_usage_err(SCRUB_CMD, "nothing to scrub: give PATHs or --all");
    for (int i = optind; i < argc; i++) {
        depfs_label lab;
        if (cli_parse_ns_path(argv[i], &lab) < 0)
            return CLI_EXIT_USAGE;
    }
    if (cli_connect(config_path, &s.fs) < 0)
        return CLI_EXIT_FAIL;

    if (s.json) {
        cli_json_init(&s.j, stdout);
        cli_json_begin_object(&s.j, NULL);
        cli_json_bool(&s.j, "repair", s.repair);
        cli_json_begin_array(&s.j, "files");
    }
    if (all)
        scrub_arg(&s, "/");
    for (int i = optind; i < argc; i++)
        scrub_arg(&s, argv[i]);
    summary(&s);
    depfs_unmount(s.fs);
    return scrub_clean(&s) ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
