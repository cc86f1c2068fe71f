/* daemons.h - header-only helper for unit tests that need a real cluster:
 * depfs-mds and N depfs-ioserver daemons (binaries from $DEPFS_BIN_DIR,
 * default build/bin) on free 127.0.0.1 ports, a temp dir with the config,
 * LevelDB and strip files. Daemons die with the test runner
 * (PR_SET_PDEATHSIG) and log to files in the temp dir, never to the
 * caller's stdout. Same approach as test_client_data.c, reusable.
 *
 *   td_cluster_up(&cl, 8, "lock_lease_ms = 300\n");  ... td_cluster_down(&cl);
 *   td_ios_kill(&cl, 3); td_ios_start(&cl, 3, "--rebuild");
 * Set DEPFS_KEEP_TEST_DIR to keep the temp dir. */
#ifndef DEPFS_TEST_DAEMONS_H
#define DEPFS_TEST_DAEMONS_H
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define TD_MAX_SERVERS 16u
#define TD_PORT_WAIT_MS 10000
#define TD_START_ATTEMPTS 5u
#define TD_POLL_US 20000

typedef struct td_cluster {
    char dir[256];
    char conf[300];
    unsigned nservers;
    unsigned ports[TD_MAX_SERVERS + 1]; /* mds, then ioservers */
    pid_t mds;
    pid_t ios[TD_MAX_SERVERS];
} td_cluster;

static inline const char *td_bin_dir(void)
{
    const char *d = getenv("DEPFS_BIN_DIR");
    return d && *d ? d : "build/bin";
}

static inline pid_t td_spawn(const td_cluster *cl, const char *prog, char *const argv[])
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", td_bin_dir(), prog);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        char logp[600];
        snprintf(logp, sizeof logp, "%s/%s-%d.log", cl->dir, prog, (int)getpid());
        int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
        execv(path, argv);
        _exit(127);
    }
    return pid;
}

static inline bool td_port_open(unsigned port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = connect(s, (struct sockaddr *)&a, sizeof a) == 0;
    close(s);
    return ok;
}

static inline unsigned td_free_port(void)
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
static inline bool td_wait_port(unsigned port, pid_t pid)
{
    for (int waited_ms = 0; waited_ms < TD_PORT_WAIT_MS; waited_ms += TD_POLL_US / 1000) {
        if (td_port_open(port))
            return true;
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return false;
        usleep(TD_POLL_US);
    }
    return false;
}

/* Start I/O server i; extra_arg e.g. "--rebuild" or NULL. */
static inline bool td_ios_start(td_cluster *cl, unsigned i, const char *extra_arg)
{
    char id[16];
    snprintf(id, sizeof id, "%u", i);
    char *argv[] = {"depfs-ioserver", "--config", cl->conf, "--id", id, (char *)extra_arg, NULL};
    cl->ios[i] = td_spawn(cl, "depfs-ioserver", argv);
    return td_wait_port(cl->ports[1 + i], cl->ios[i]);
}

/* SIGKILL I/O server i and wait until it is gone. A forked test case is
 * not the daemon's parent (waitpid fails): it waits for the port to close. */
static inline void td_ios_kill(td_cluster *cl, unsigned i)
{
    if (cl->ios[i] <= 0)
        return;
    kill(cl->ios[i], SIGKILL);
    if (waitpid(cl->ios[i], NULL, 0) != cl->ios[i])
        for (int waited_ms = 0; waited_ms < TD_PORT_WAIT_MS && td_port_open(cl->ports[1 + i]);
             waited_ms += TD_POLL_US / 1000)
            usleep(TD_POLL_US);
    cl->ios[i] = 0;
}

static inline void td_daemons_stop(td_cluster *cl)
{
    for (unsigned i = 0; i < cl->nservers; i++)
        if (cl->ios[i] > 0) {
            kill(cl->ios[i], SIGTERM);
            waitpid(cl->ios[i], NULL, 0);
            cl->ios[i] = 0;
        }
    if (cl->mds > 0) {
        kill(cl->mds, SIGTERM);
        waitpid(cl->mds, NULL, 0);
        cl->mds = 0;
    }
}

static inline void td_write_config(td_cluster *cl, const char *extra_conf)
{
    for (unsigned i = 0; i <= cl->nservers; i++)
        cl->ports[i] = td_free_port();
    FILE *f = fopen(cl->conf, "w");
    if (f == NULL)
        abort();
    fprintf(f, "mds_address = 127.0.0.1:%u\nmds_data_dir = %s/mds\nrecovery_data_dir = %s\n",
            cl->ports[0], cl->dir, cl->dir);
    for (unsigned i = 0; i < cl->nservers; i++)
        fprintf(f, "ioserver = %u 127.0.0.1:%u %s/io%u\n", i, cl->ports[1 + i], cl->dir, i);
    fprintf(f, "default_layout = 4@2@4k\nrequest_timeout_ms = 1000\nconnect_timeout_ms = 500\n"
               "server_down_expiry_ms = 60000\n%s",
            extra_conf ? extra_conf : "lock_lease_ms = 5000\n");
    fclose(f);
}

static inline bool td_daemons_start(td_cluster *cl)
{
    char *argv[] = {"depfs-mds", "--config", cl->conf, "--foreground", NULL};
    cl->mds = td_spawn(cl, "depfs-mds", argv);
    if (!td_wait_port(cl->ports[0], cl->mds))
        return false;
    for (unsigned i = 0; i < cl->nservers; i++)
        if (!td_ios_start(cl, i, NULL))
            return false;
    return true;
}

/* Exits the test program when the cluster cannot be started. */
static inline void td_cluster_up(td_cluster *cl, unsigned nservers, const char *extra_conf)
{
    memset(cl, 0, sizeof *cl);
    if (nservers > TD_MAX_SERVERS)
        abort();
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

static inline void td_cluster_down(td_cluster *cl)
{
    td_daemons_stop(cl);
    if (getenv("DEPFS_KEEP_TEST_DIR") == NULL) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", cl->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", cl->dir);
    }
}

/* The strip file of file_id on I/O server i. */
static inline void td_strip_path(const td_cluster *cl, unsigned i, uint64_t file_id, char *out,
                                 size_t len)
{
    snprintf(out, len, "%s/io%u/strips/%016llx", cl->dir, i, (unsigned long long)file_id);
}

#endif
