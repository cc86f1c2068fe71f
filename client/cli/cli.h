/* cli.h - shared pieces of the `depfs` command: exit codes, the subcommand
 * entry points (one file per group), error printing, connecting to the
 * cluster and turning CLI arguments into DePFS namespace paths.
 *
 * Every cli_cmd_* takes argv with argv[0] = the subcommand's name, plus the
 * --config given before the subcommand (NULL if none), and returns an exit
 * code: CLI_EXIT_OK, CLI_EXIT_FAIL or CLI_EXIT_USAGE. */
#ifndef DEPFS_CLI_H
#define DEPFS_CLI_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include "depfs_admin.h"
#include "label.h"

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

#define CLI_PROG "depfs"
#define CLI_PATH_MAX 4096u
#define CLI_LABEL_MAX (CLI_PATH_MAX + 64u)

/* Subcommands. */
int cli_cmd_cp(int argc, char **argv, const char *config_path);
int cli_cmd_layout(int argc, char **argv, const char *config_path);
int cli_cmd_stat(int argc, char **argv, const char *config_path);
int cli_cmd_scrub(int argc, char **argv, const char *config_path);
int cli_cmd_status(int argc, char **argv, const char *config_path);
int cli_cmd_ls(int argc, char **argv, const char *config_path);
int cli_cmd_mkdir(int argc, char **argv, const char *config_path);
int cli_cmd_rm(int argc, char **argv, const char *config_path);

/* "depfs: <message>\n" on stderr. */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "depfs: <what>: <strerror(-rc)>[ (<depfs_last_error()>)]\n" on stderr. */
void cli_err_rc(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A usage error: the message, then "Try 'depfs CMD --help'."; returns
 * CLI_EXIT_USAGE. */
int cli_usage_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Connects to the cluster. config_path NULL: $DEPFS_CONF, else the config
 * of the DePFS mount the path arguments lie in (cli_parse_ns_path), else
 * that of the node's only DePFS mount, else the default. Prints the reason
 * on failure; 0 or negative errno. */
int cli_connect(const char *config_path, depfs_t **fs);

/* An argument naming an object in the DePFS namespace: a label
 * (depfs[@N@K[@SU]]:/path), a path (absolute or relative) inside a DePFS
 * mount of this node, or else a plain absolute path (in the namespace). On
 * error prints why and returns -EINVAL. lab->path points into arg or into
 * memory kept until the process exits. */
int cli_parse_ns_path(const char *arg, depfs_label *lab);

/* The DePFS mounts of this node (mounts.c). */
#define CLI_MOUNTS_MAX 64u
typedef struct cli_mount {
    char dir[CLI_PATH_MAX];    /* mount point */
    char config[CLI_PATH_MAX]; /* its cluster config ("": the default) */
} cli_mount;
/* At most max mounts into v; 0 or -errno. */
int cli_mounts_read(cli_mount *v, unsigned max, unsigned *n);
/* 1 when path (absolute or relative; it need not exist, its parent must)
 * lies in a DePFS mount: the DePFS path it names into ns, the mount into
 * *m; 0 when it does not; -ENAMETOOLONG. */
int cli_mount_path(const char *path, char *ns, size_t ns_len, cli_mount *m);
/* True when arg carries a depfs label prefix (what `cp` uses to tell DePFS
 * from local paths). */
bool cli_is_label(const char *arg);

/* Rebuilds a label string for path with lab's layout ("depfs@8@6@65536:/p",
 * or the plain path when lab gives no layout). -ENAMETOOLONG if too long. */
int cli_format_label(char *buf, size_t len, const depfs_label *lab, const char *path);

/* dir + "/" + name into buf (no doubled slash). -ENAMETOOLONG if too long. */
int cli_join_path(char *buf, size_t len, const char *dir, const char *name);
/* Last component of path, ignoring trailing slashes; copied into buf. */
void cli_basename(char *buf, size_t len, const char *path);
/* Splits an absolute namespace path into its parent dir and last name.
 * -EINVAL for "/" (no name). */
int cli_split_path(const char *path, char *parent, size_t parent_len, char *name, size_t name_len);

/* A directory's entries without "." and "..", read in full before the
 * caller acts on them (no library calls from inside the readdir callback).
 * type: the S_IFMT bits when readdir knows them, else 0. */
typedef struct cli_dirent {
    char *name;
    uint64_t ino;
    mode_t type;
} cli_dirent;
typedef struct cli_dir_list {
    cli_dirent *v;
    size_t count, cap;
    int err;
} cli_dir_list;
int cli_dir_read(depfs_t *fs, uint64_t ino, cli_dir_list *out); /* 0 or -errno */
void cli_dir_free(cli_dir_list *l);
/* An entry's S_IFMT type: from readdir when known, else from getattr. */
int cli_dirent_type(depfs_t *fs, const cli_dirent *e, mode_t *type);

/* "regular file", "directory", ... */
const char *cli_type_name(mode_t mode);
/* Layout as "n=8 k=6 su=65536 servers=0,1,2 codec=1"; a directory's
 * (inherited) layout has no servers yet: "servers=-". */
void cli_format_layout(char *buf, size_t len, const depfs_layout_info *li, bool is_dir);

/* Standard option table entries, shared by every subcommand. */
#define CLI_OPT_CONFIG 'c'
#define CLI_OPT_HELP 'h'
#define CLI_OPT_JSON 'j'

#endif
