/* scrub.c - `depfs scrub [PATH...] | --all [--repair]`: walks files (directories
 * recursively, --all from "/"), has libdepfs re-read every stripe of every
 * regular file, recompute its parity and compare (depfs_scrub_ino), and
 * reports per-file problems plus a summary line
 *   scrub: N files, M stripes checked, B inconsistent, U unreadable
 * Exit status 1 when any stripe is inconsistent or unreadable (even when
 * --repair fixed it: the run found damage) or a file could not be scrubbed. */
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
    uint64_t files, stripes_checked, stripes_bad, stripes_unreadable, errors;
} scrub_ctx;

static void scrub_usage(FILE *out)
{
    fprintf(out,
            "Usage: %s scrub [OPTIONS] PATH...\n"
            "       %s scrub [OPTIONS] --all\n"
            "\n"
            "Re-read every stripe of each regular file (directories are walked\n"
            "recursively; --all walks the whole namespace from /), recompute parity\n"
            "from the data units and compare it with the stored parity. Prints each\n"
            "file with problems and a summary:\n"
            "  scrub: N files, M stripes checked, B inconsistent, U unreadable\n"
            "Exit status: 0 all clean, 1 any inconsistent or unreadable stripe or a\n"
            "file that could not be scrubbed (also when --repair fixed it), 2 usage.\n"
            "\n"
            "Options:\n"
            "  -a, --all          scrub every file in the namespace\n"
            "  -r, --repair       rewrite inconsistent parity from the data\n"
            "  -v, --verbose      print every file, clean ones too\n"
            "  -j, --json         print a JSON report instead of text\n"
            "  -c, --config PATH  cluster config\n"
            "  -h, --help         show this help\n",
            CLI_PROG, CLI_PROG);
}

static void file_report(scrub_ctx *s, const char *path, uint64_t ino, const depfs_scrub_report *rep,
                        const char *error)
{
    if (s->json) {
        cli_json_begin_object(&s->j, NULL);
        cli_json_string(&s->j, "path", path);
        cli_json_uint(&s->j, "ino", ino);
        cli_json_uint(&s->j, "stripes_checked", rep->stripes_checked);
        cli_json_uint(&s->j, "stripes_bad", rep->stripes_bad);
        cli_json_uint(&s->j, "stripes_unreadable", rep->stripes_unreadable);
        if (rep->stripes_bad > 0)
            cli_json_uint(&s->j, "first_bad_stripe", rep->first_bad_stripe);
        else
            cli_json_null(&s->j, "first_bad_stripe");
        cli_json_bool(&s->j, "repaired", s->repair && rep->stripes_bad > 0 && error == NULL);
        cli_json_string(&s->j, "error", error);
        cli_json_end_object(&s->j);
        return;
    }
    if (error != NULL)
        return; /* already on stderr */
    if (rep->stripes_bad > 0)
        printf("%s: %llu inconsistent stripe(s), first at stripe %llu%s\n", path,
               (unsigned long long)rep->stripes_bad, (unsigned long long)rep->first_bad_stripe,
               s->repair ? " (parity rewritten)" : "");
    if (rep->stripes_unreadable > 0)
        printf("%s: %llu unreadable stripe(s) (some units could not be read: a server down?)\n", path,
               (unsigned long long)rep->stripes_unreadable);
    if (s->verbose && rep->stripes_bad == 0 && rep->stripes_unreadable == 0)
        printf("%s: ok, %llu stripe(s)\n", path, (unsigned long long)rep->stripes_checked);
}

static void scrub_file(scrub_ctx *s, const char *path, uint64_t ino)
{
    depfs_scrub_report rep;
    memset(&rep, 0, sizeof(rep));

    s->files++;
    int rc = depfs_scrub_ino(s->fs, ino, s->repair, &rep);
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
    s->stripes_checked += rep.stripes_checked;
    s->stripes_bad += rep.stripes_bad;
    s->stripes_unreadable += rep.stripes_unreadable;
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

static void summary(scrub_ctx *s)
{
    if (s->json) {
        cli_json_end_array(&s->j);
        cli_json_begin_object(&s->j, "summary");
        cli_json_uint(&s->j, "files", s->files);
        cli_json_uint(&s->j, "stripes_checked", s->stripes_checked);
        cli_json_uint(&s->j, "stripes_bad", s->stripes_bad);
        cli_json_uint(&s->j, "stripes_unreadable", s->stripes_unreadable);
        cli_json_uint(&s->j, "errors", s->errors);
        cli_json_bool(&s->j, "clean", s->stripes_bad == 0 && s->stripes_unreadable == 0 && s->errors == 0);
        cli_json_end_object(&s->j);
        cli_json_end_object(&s->j);
        cli_json_finish(&s->j);
        return;
    }
    printf("scrub: %llu files, %llu stripes checked, %llu inconsistent, %llu unreadable\n",
           (unsigned long long)s->files, (unsigned long long)s->stripes_checked,
           (unsigned long long)s->stripes_bad, (unsigned long long)s->stripes_unreadable);
    if (s->repair && s->stripes_bad > 0)
        printf("scrub: rewrote parity of %llu inconsistent stripes\n", (unsigned long long)s->stripes_bad);
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
    bool clean = s.stripes_bad == 0 && s.stripes_unreadable == 0 && s.errors == 0;
    return clean ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
