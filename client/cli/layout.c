/* layout.c - `depfs layout get PATH` and `depfs layout set PATH N@K[@SU]`:
 * show a file's layout (or a directory's inherited one), and set the layout
 * of a directory (inherited by new children) or of an empty file, through
 * the DEPFS_LAYOUT_XATTR extended attribute. */
#include "cli.h"
#include "json.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#define LAYOUT_CMD "layout"
#define LAYOUT_LINE_MAX 512u
#define SPEC_MAX 64u
#define SPEC_ERR_MAX 256u

static void layout_usage(FILE *out)
{
    fprintf(out,
            "Usage: %s layout get [--json] PATH\n"
            "       %s layout set PATH N@K[@SU]\n"
            "\n"
            "get  prints the layout of a file, or the layout a directory gives new files:\n"
            "       n=8 k=6 su=65536 servers=0,1,2,3,4,5,6,7 codec=1\n"
            "set  sets the layout of a directory (inherited by files and directories\n"
            "     created in it afterwards) or of an empty file (before its first write).\n"
            "     N units per stripe, K of them data (N-K servers may fail), SU the\n"
            "     stripe unit in bytes (k/m suffix allowed, default kept from the parent).\n"
            "     With a labelled PATH (depfs@8@6:/dir) the label's layout is used when\n"
            "     N@K is left out.\n"
            "PATH is a DePFS namespace path (/dir/file) or a label (depfs:/dir/file).\n"
            "\n"
            "Options:\n"
            "  -c, --config PATH  cluster config\n"
            "  -j, --json         (get) print JSON\n"
            "  -h, --help         show this help\n",
            CLI_PROG, CLI_PROG);
}

static void print_layout_json(const char *path, uint64_t ino, const depfs_layout_info *li, bool is_dir)
{
    cli_json j;
    cli_json_init(&j, stdout);
    cli_json_begin_object(&j, NULL);
    cli_json_string(&j, "path", path);
    cli_json_uint(&j, "ino", ino);
    cli_json_uint(&j, "n", li->n);
    cli_json_uint(&j, "k", li->k);
    cli_json_uint(&j, "stripe_unit", li->stripe_unit);
    cli_json_uint(&j, "stripe_bytes", (uint64_t)li->k * li->stripe_unit);
    cli_json_uint(&j, "version", li->version);
    cli_json_uint(&j, "codec_version", li->codec_version);
    if (is_dir) {
        cli_json_null(&j, "servers"); /* chosen per file at create */
    } else {
        cli_json_begin_array(&j, "servers");
        for (unsigned i = 0; i < li->n && i < DEPFS_MAX_SERVERS_PER_FILE; i++)
            cli_json_uint(&j, NULL, li->servers[i]);
        cli_json_end_array(&j);
    }
    cli_json_end_object(&j);
    cli_json_finish(&j);
}

static int layout_get(depfs_t *fs, const char *arg, const depfs_label *lab, bool json)
{
    depfs_layout_info li;
    struct stat st;
    uint64_t ino;
    int rc;

    rc = depfs_resolve(fs, lab->path, &ino, &st);
    if (rc < 0) {
        cli_err_rc(rc, "cannot stat '%s'", arg);
        return CLI_EXIT_FAIL;
    }
    memset(&li, 0, sizeof(li));
    rc = depfs_get_layout(fs, ino, &li);
    if (rc < 0) {
        cli_err_rc(rc, "cannot get the layout of '%s'", arg);
        return CLI_EXIT_FAIL;
    }
    if (json) {
        print_layout_json(lab->path, ino, &li, S_ISDIR(st.st_mode));
    } else {
        char line[LAYOUT_LINE_MAX];
        cli_format_layout(line, sizeof(line), &li, S_ISDIR(st.st_mode));
        printf("%s\n", line);
    }
    return CLI_EXIT_OK;
}

/* The xattr value: "N@K" or "N@K@SU" with SU in bytes. */
static int spec_normalize(const char *spec, char *out, size_t out_len)
{
    char why[SPEC_ERR_MAX] = "";
    unsigned n = 0, k = 0;
    uint32_t su = 0;

    if (label_parse_spec(spec, &n, &k, &su, why, sizeof(why)) < 0) {
        cli_err("bad layout '%s': %s (expected N@K or N@K@SU, e.g. 8@6 or 8@6@64k)", spec,
                why[0] ? why : "invalid");
        return -EINVAL;
    }
    if (su == 0)
        snprintf(out, out_len, "%u@%u", n, k);
    else
        snprintf(out, out_len, "%u@%u@%u", n, k, su);
    return 0;
}

/* The spec to set: SPEC when given, else the labelled PATH's layout. */
static int set_spec(const depfs_label *lab, const char *spec_arg, char *spec, size_t spec_len)
{
    if (spec_arg != NULL)
        return spec_normalize(spec_arg, spec, spec_len);
    if (lab->n == 0) {
        cli_usage_err(LAYOUT_CMD, "layout set needs N@K[@SU] (or a labelled PATH such as depfs@8@6:/dir)");
        return -EINVAL;
    }
    if (lab->su == 0)
        snprintf(spec, spec_len, "%u@%u", lab->n, lab->k);
    else
        snprintf(spec, spec_len, "%u@%u@%u", lab->n, lab->k, lab->su);
    return 0;
}

static int layout_set(depfs_t *fs, const char *arg, const depfs_label *lab, const char *spec)
{
    struct stat st;
    uint64_t ino;
    int rc;

    rc = depfs_resolve(fs, lab->path, &ino, &st);
    if (rc < 0) {
        cli_err_rc(rc, "cannot stat '%s'", arg);
        return CLI_EXIT_FAIL;
    }
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
        cli_err("'%s' is a %s: only directories and empty files have a layout", arg,
                cli_type_name(st.st_mode));
        return CLI_EXIT_FAIL;
    }
    if (S_ISREG(st.st_mode) && st.st_size != 0) {
        cli_err("'%s' is not empty (%lld bytes): a file's layout can only be set before its first "
                "write; to re-encode it use: %s migrate %s -r %s", arg, (long long)st.st_size, CLI_PROG,
                arg, spec);
        return CLI_EXIT_FAIL;
    }
    rc = depfs_setxattr(fs, ino, DEPFS_LAYOUT_XATTR, spec, strlen(spec), 0);
    if (rc < 0) {
        cli_err_rc(rc, "cannot set layout %s on '%s'", spec, arg);
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

int cli_cmd_layout(int argc, char **argv, const char *config_path)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, CLI_OPT_CONFIG},
        {"help", no_argument, NULL, CLI_OPT_HELP},
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {NULL, 0, NULL, 0},
    };
    bool json = false;
    depfs_t *fs = NULL;
    int c, ret;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:hj", opts, NULL)) != -1) {
        switch (c) {
        case CLI_OPT_CONFIG: config_path = optarg; break;
        case CLI_OPT_HELP: layout_usage(stdout); return CLI_EXIT_OK;
        case CLI_OPT_JSON: json = true; break;
        case ':': return cli_usage_err(LAYOUT_CMD, "option '%s' needs an argument", argv[optind - 1]);
        default: return cli_usage_err(LAYOUT_CMD, "unknown option '%s'", argv[optind - 1]);
        }
    }
    int nargs = argc - optind;
    char **args = argv + optind;
    if (nargs < 1)
        return cli_usage_err(LAYOUT_CMD, "missing subcommand: get or set");
    bool is_get = strcmp(args[0], "get") == 0;
    bool is_set = strcmp(args[0], "set") == 0;
    if (!is_get && !is_set)
        return cli_usage_err(LAYOUT_CMD, "unknown subcommand '%s' (get or set)", args[0]);
    if (is_get && nargs != 2)
        return cli_usage_err(LAYOUT_CMD, "layout get takes one PATH");
    if (is_set && (nargs < 2 || nargs > 3))
        return cli_usage_err(LAYOUT_CMD, "layout set takes PATH and N@K[@SU]");
    if (is_set && json)
        return cli_usage_err(LAYOUT_CMD, "--json applies to layout get");

    depfs_label lab;
    char spec[SPEC_MAX] = "";
    if (cli_parse_ns_path(args[1], &lab) < 0)
        return CLI_EXIT_USAGE;
    if (is_set && set_spec(&lab, nargs == 3 ? args[2] : NULL, spec, sizeof(spec)) < 0)
        return CLI_EXIT_USAGE;

    if (cli_connect(config_path, &fs) < 0)
        return CLI_EXIT_FAIL;
    if (is_get)
        ret = layout_get(fs, args[1], &lab, json);
    else
        ret = layout_set(fs, args[1], &lab, spec);
    depfs_unmount(fs);
    return ret;
}
