/* main.c - the `depfs` command: global options and subcommand dispatch.
 * Each subcommand group lives in its own file (cp.c, layout.c, stat.c,
 * scrub.c, status.c, ns.c). Exit codes: 0 ok, 1 failure, 2 usage. */
#include "cli.h"
#include "log.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#define CLI_VERSION "0.1.0"

/* reconstruct.c (declared here: cli.h belongs to the CLI's core) */
int cli_cmd_reconstruct(int argc, char **argv, const char *config_path);
/* migrate.c */
int cli_cmd_migrate(int argc, char **argv, const char *config_path);

typedef struct cli_command {
    const char *name;
    int (*fn)(int argc, char **argv, const char *config_path);
    const char *summary;
} cli_command;

static const cli_command commands[] = {
    {"cp", cli_cmd_cp, "copy a file between a local path and DePFS (or DePFS to DePFS)"},
    {"layout", cli_cmd_layout, "show or set a file's or directory's layout (n@k@su)"},
    {"migrate", cli_cmd_migrate, "re-encode files into another layout (n@k@su) while they stay readable"},
    {"stat", cli_cmd_stat, "show a file's attributes and layout"},
    {"scrub", cli_cmd_scrub, "recompute parity and compare it with the stored parity"},
    {"status", cli_cmd_status, "show every I/O server's state, space and lock counters"},
    {"reconstruct", cli_cmd_reconstruct, "rebuild every unit of a replaced I/O server, then let it rejoin"},
    {"ls", cli_cmd_ls, "list a directory"},
    {"mkdir", cli_cmd_mkdir, "create a directory (a label sets its layout)"},
    {"rm", cli_cmd_rm, "remove a file or an empty directory"},
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: %s [--config PATH] COMMAND [ARGS...]\n"
            "\n"
            "The DePFS command line tool. Paths name objects in the DePFS namespace,\n"
            "either plainly (/dir/file) or with a resiliency label:\n"
            "  depfs:/dir/file        the default layout\n"
            "  depfs@N@K:/dir/file    N units per stripe, K of them data\n"
            "  depfs@N@K@SU:/dir/file and a stripe unit of SU bytes (k/m suffix ok)\n"
            "\n"
            "Commands:\n",
            CLI_PROG);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(out,
            "\n"
            "Options (accepted by every command):\n"
            "  -c, --config PATH  cluster config (default: $DEPFS_CONF, else /etc/depfs/depfs.conf)\n"
            "  -h, --help         show help; '%s COMMAND --help' for a command\n"
            "  -V, --version      show the version\n"
            "\n"
            "Exit status: 0 success, 1 failure, 2 usage error.\n",
            CLI_PROG);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, CLI_OPT_CONFIG},
        {"help", no_argument, NULL, CLI_OPT_HELP},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char *config_path = NULL;
    int c;

    /* Library chatter (connects, retries) only when it matters; the
     * DEPFS_LOG_LEVEL environment variable still overrides. */
    dlog_init(CLI_PROG, DLOG_WARN);
    opterr = 0;
    /* '+': stop at the first non-option, the subcommand. */
    while ((c = getopt_long(argc, argv, "+:c:hV", opts, NULL)) != -1) {
        switch (c) {
        case CLI_OPT_CONFIG:
            config_path = optarg;
            break;
        case CLI_OPT_HELP:
            usage(stdout);
            return CLI_EXIT_OK;
        case 'V':
            printf("%s %s\n", CLI_PROG, CLI_VERSION);
            return CLI_EXIT_OK;
        case ':':
            return cli_usage_err(NULL, "option '%s' needs an argument", argv[optind - 1]);
        default:
            return cli_usage_err(NULL, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[optind];
    if (strcmp(name, "help") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (strcmp(commands[i].name, name) == 0) {
            int sub_argc = argc - optind;
            char **sub_argv = argv + optind;
            optind = 0; /* full getopt re-initialisation for the subcommand */
            return commands[i].fn(sub_argc, sub_argv, config_path);
        }
    }
    return cli_usage_err(NULL, "unknown command '%s'", name);
}
