/* cluster.c - a real DePFS cluster inside a test (cluster.h). */
#include "tests/lib/cluster.h"

#include <arpa/inet.h>
#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "rpc.h"

#define TD_PORT_WAIT_MS 10000u
#define TD_STOP_WAIT_MS 5000u
#define TD_START_ATTEMPTS 5u
#define TD_POLL_MS 20u

/* written for every key the caller's extra_conf does not set (the config
 * refuses a key set twice) */
static const struct {
    const char *key, *value;
} td_defaults[] = {
    {"default_layout", "4@2@4k"},
    {"request_timeout_ms", "1000"},
    {"connect_timeout_ms", "500"},
    {"server_down_expiry_ms", "60000"},
    {"lock_lease_ms", "5000"},
};

const char *td_bin_dir(void)
{
    const char *d = getenv("DEPFS_BIN_DIR");
    return d && *d ? d : "build/bin";
}

static void td_sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Gone: reaped here, or (a daemon started by another process of the test)
 * no longer running - a zombie waiting for its parent counts as gone. */
static bool td_pid_gone(pid_t pid)
{
    pid_t r = waitpid(pid, NULL, WNOHANG);
    if (r == pid)
        return true;
    if (r == 0)
        return false;
    char path[64], stat_line[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    bool gone = true;
    if (fgets(stat_line, sizeof stat_line, f)) {
        const char *paren = strrchr(stat_line, ')');
        gone = paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
    }
    fclose(f);
    return gone;
}

static bool td_port_open(unsigned port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = connect(s, (struct sockaddr *)&a, sizeof a) == 0;
    close(s);
    return ok;
}

static unsigned td_free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof a;
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(s, (struct sockaddr *)&a, &l) != 0)
        abort();
    close(s);
    return ntohs(a.sin_port);
}

/* true once the port answers; false when the daemon died or time ran out */
static bool td_wait_port(unsigned port, pid_t pid)
{
    for (unsigned waited_ms = 0; waited_ms < TD_PORT_WAIT_MS; waited_ms += TD_POLL_MS) {
        if (td_port_open(port))
            return true;
        if (td_pid_gone(pid))
            return false;
        td_sleep_ms(TD_POLL_MS);
    }
    return false;
}

static pid_t td_spawn(const td_cluster *cl, const char *prog, char *const argv[])
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", td_bin_dir(), prog);
    /* a forked test case's daemon outlives the case only when the parent
     * can see (and stop) it: a shared cluster */
    bool outlive_case = cl->shared && getpid() != cl->owner;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        if (outlive_case) {
            setsid(); /* out of the case's process group, which Check kills */
        } else {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(1);
        }
        char logp[600];
        snprintf(logp, sizeof logp, "%s/%s-%d.log", cl->dir, prog, (int)getpid());
        int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
        execv(path, argv);
        fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
        _exit(127);
    }
    return pid;
}

/* SIGTERM, then SIGKILL when it has not gone within TD_STOP_WAIT_MS. */
static void td_stop_pid(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    for (unsigned waited_ms = 0; waited_ms < TD_STOP_WAIT_MS; waited_ms += TD_POLL_MS) {
        if (td_pid_gone(pid))
            return;
        td_sleep_ms(TD_POLL_MS);
    }
    kill(pid, SIGKILL);
    while (!td_pid_gone(pid))
        td_sleep_ms(TD_POLL_MS);
}

td_cluster *td_cluster_shared(void)
{
    td_cluster *cl = mmap(NULL, sizeof *cl, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                          -1, 0);
    if (cl == MAP_FAILED) {
        perror("td_cluster_shared");
        exit(EXIT_FAILURE);
    }
    memset(cl, 0, sizeof *cl);
    cl->shared = true;
    return cl;
}

bool td_mds_start(td_cluster *cl)
{
    char *argv[] = {"depfs-mds", "--config", cl->conf, "--foreground", NULL};
    cl->mds = td_spawn(cl, "depfs-mds", argv);
    return cl->mds > 0 && td_wait_port(cl->ports[0], cl->mds);
}

void td_mds_stop(td_cluster *cl)
{
    td_stop_pid(cl->mds);
    cl->mds = 0;
}

bool td_ios_start(td_cluster *cl, unsigned i, const char *extra_arg)
{
    char id[16];
    snprintf(id, sizeof id, "%u", i);
    char *argv[] = {"depfs-ioserver", "--config", cl->conf, "--id", id, (char *)extra_arg, NULL};
    cl->ios[i] = td_spawn(cl, "depfs-ioserver", argv);
    return cl->ios[i] > 0 && td_wait_port(cl->ports[1 + i], cl->ios[i]);
}

/* A forked test case is not the daemon's parent (waitpid fails): it waits
 * until the daemon is gone and its port closed. */
void td_ios_kill(td_cluster *cl, unsigned i)
{
    if (cl->ios[i] <= 0)
        return;
    kill(cl->ios[i], SIGKILL);
    if (waitpid(cl->ios[i], NULL, 0) != cl->ios[i])
        for (unsigned waited_ms = 0; waited_ms < TD_PORT_WAIT_MS &&
                                     (!td_pid_gone(cl->ios[i]) || td_port_open(cl->ports[1 + i]));
             waited_ms += TD_POLL_MS)
            td_sleep_ms(TD_POLL_MS);
    cl->ios[i] = 0;
}

static void td_daemons_stop(td_cluster *cl)
{
    for (unsigned i = 0; i < cl->nservers; i++) {
        td_stop_pid(cl->ios[i]);
        cl->ios[i] = 0;
    }
    td_mds_stop(cl);
}

/* Does conf set key on a line of its own ("key = value")? */
static bool td_conf_sets(const char *conf, const char *key)
{
    size_t len = strlen(key);
    for (const char *line = conf; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *p = line + strspn(line, " \t");
        if (strncmp(p, key, len) == 0 && (p[len] == '=' || isblank((unsigned char)p[len])))
            return true;
    }
    return false;
}

/* The cluster's key (auth.h), made once per cluster dir; its path. Runs
 * outside tests too (a shared cluster): aborts with a message on failure. */
static const char *td_cluster_key(td_cluster *cl)
{
    static _Thread_local char path[PATH_MAX];
    uint8_t key[AUTH_KEY_BYTES];
    snprintf(path, sizeof(path), "%s/cluster.key", cl->dir);
    if (access(path, F_OK) == 0)
        return path;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || auth_init() < 0) {
        fprintf(stderr, "td_cluster_key: cannot create %s: %s\n", path, strerror(errno));
        abort();
    }
    auth_random(key, sizeof(key));
    if (write(fd, key, sizeof(key)) != (ssize_t)sizeof(key)) {
        fprintf(stderr, "td_cluster_key: cannot write %s\n", path);
        abort();
    }
    close(fd);
    return path;
}

const rpc_auth_creds *td_creds(const td_cluster *cl)
{
    static _Thread_local rpc_auth_creds cr;
    char path[PATH_MAX], err[RPC_ERROR_TEXT_MAX];
    snprintf(path, sizeof(path), "%s/cluster.key", cl->dir);
    ck_assert_msg(rpc_auth_creds_key(path, &cr, err, sizeof(err)) == 0, "%s", err);
    return &cr;
}

static void td_write_config(td_cluster *cl, const char *extra_conf)
{
    for (unsigned i = 0; i <= cl->nservers; i++)
        cl->ports[i] = td_free_port();
    FILE *f = fopen(cl->conf, "w");
    if (f == NULL)
        abort();
    fprintf(f, "mds_address = 127.0.0.1:%u\nmds_data_dir = %s/mds\nrecovery_data_dir = %s\n",
            cl->ports[0], cl->dir, cl->dir);
    if (!extra_conf || !td_conf_sets(extra_conf, "cluster_key"))
        fprintf(f, "cluster_key = %s\n", td_cluster_key(cl));
    for (unsigned i = 0; i < cl->nservers; i++)
        fprintf(f, "ioserver = %u 127.0.0.1:%u %s/io%u\n", i, cl->ports[1 + i], cl->dir, i);
    for (size_t d = 0; d < sizeof td_defaults / sizeof td_defaults[0]; d++)
        if (!extra_conf || !td_conf_sets(extra_conf, td_defaults[d].key))
            fprintf(f, "%s = %s\n", td_defaults[d].key, td_defaults[d].value);
    fputs(extra_conf ? extra_conf : "", f);
    fclose(f);
}

static bool td_daemons_start(td_cluster *cl)
{
    if (!td_mds_start(cl))
        return false;
    for (unsigned i = 0; i < cl->nservers; i++)
        if (!td_ios_start(cl, i, NULL))
            return false;
    return true;
}

void td_cluster_up(td_cluster *cl, unsigned nservers, const char *extra_conf)
{
    bool shared = cl->shared;
    memset(cl, 0, sizeof *cl);
    if (nservers > TD_MAX_SERVERS)
        abort();
    cl->shared = shared;
    cl->owner = getpid();
    cl->nservers = nservers;
    snprintf(cl->dir, sizeof cl->dir, "/tmp/depfs-td-XXXXXX");
    if (mkdtemp(cl->dir) == NULL)
        abort();
    snprintf(cl->conf, sizeof cl->conf, "%s/depfs.conf", cl->dir);
    for (unsigned attempt = 0; attempt < TD_START_ATTEMPTS; attempt++) {
        td_write_config(cl, extra_conf);
        if (td_daemons_start(cl))
            return;
        td_daemons_stop(cl); /* a port was taken meanwhile: new ports, new try */
    }
    fprintf(stderr, "could not start the cluster (binaries in %s, logs in %s)\n", td_bin_dir(),
            cl->dir);
    exit(EXIT_FAILURE);
}

void td_cluster_down(td_cluster *cl)
{
    td_daemons_stop(cl);
    if (cl->keep_dir || getenv("DEPFS_KEEP_TEST_DIR") != NULL) {
        fprintf(stderr, "kept %s for inspection\n", cl->dir);
        return;
    }
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cl->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", cl->dir);
}

depfs_t *td_mount(const td_cluster *cl)
{
    depfs_options o = {.config_path = cl->conf};
    depfs_t *fs = NULL;
    int rc = depfs_mount(&o, &fs);
    ck_assert_msg(rc == 0, "mount: %s (%s)", strerror(-rc), depfs_last_error());
    return fs;
}

void td_strip_path(const td_cluster *cl, unsigned i, uint64_t file_id, char *out, size_t len)
{
    snprintf(out, len, "%s/io%u/strips/%016" PRIx64, cl->dir, i, file_id);
}
