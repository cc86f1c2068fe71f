/* daemon.c - daemon startup: logging, config, directories, signals (daemon.h). */
#include "daemon.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>

#define DAEMON_ERR_MAX 512u

int daemon_start(const char *prog, enum dlog_level level, const char *config_path,
                 depfs_config *cfg)
{
    char err[DAEMON_ERR_MAX];
    dlog_init(prog, level);
    int rc = config_load(config_path, cfg, err, sizeof(err));
    if (rc != 0) {
        log_err("config: %s", err);
        return rc < 0 ? rc : -EINVAL;
    }
    return 0;
}

int daemon_make_dirs(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return -ENAMETOOLONG;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, DAEMON_DIR_MODE) != 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(buf, DAEMON_DIR_MODE) != 0 && errno != EEXIST)
        return -errno;
    return 0;
}

void daemon_block_stop_signals(sigset_t *stop)
{
    sigemptyset(stop);
    sigaddset(stop, SIGTERM);
    sigaddset(stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, stop, NULL);
    signal(SIGPIPE, SIG_IGN);
}
