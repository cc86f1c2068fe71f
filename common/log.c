/* log.c - leveled, timestamped, thread-safe logging to stderr (log.h),
 * and the rate limits of dlog_limited.
 * Each message is formatted into one buffer and written with a single
 * write(2) under a mutex, so lines from different threads never interleave. */
#include "log.h"

#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

#define LOG_LINE_MAX 2048
#define LOG_PROGNAME_MAX 64
#define LOG_LEVEL_ENV "DEPFS_LOG_LEVEL"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t limit_lock = PTHREAD_MUTEX_INITIALIZER; /* every dlog_limit */
static char log_progname[LOG_PROGNAME_MAX] = "depfs";
static enum dlog_level log_level = DLOG_INFO;

static pthread_once_t log_env_once = PTHREAD_ONCE_INIT;

static const char *const level_names[] = { "ERR", "WARN", "INFO", "DEBUG" };

int dlog_level_parse(const char *s, enum dlog_level *out)
{
    static const struct { const char *name; enum dlog_level level; } names[] = {
        { "err", DLOG_ERR },   { "error", DLOG_ERR }, { "warn", DLOG_WARN },
        { "warning", DLOG_WARN }, { "info", DLOG_INFO }, { "debug", DLOG_DEBUG },
        { "0", DLOG_ERR },     { "1", DLOG_WARN },    { "2", DLOG_INFO },
        { "3", DLOG_DEBUG },
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcasecmp(s, names[i].name) == 0) {
            *out = names[i].level;
            return 0;
        }
    }
    return -EINVAL;
}

/* Programs (and tests) that never call dlog_init still honour the env var. */
static void log_env_default(void)
{
    const char *env = getenv(LOG_LEVEL_ENV);
    enum dlog_level env_level;

    if (env && *env && dlog_level_parse(env, &env_level) == 0)
        log_level = env_level;
}

void dlog_init(const char *progname, enum dlog_level level)
{
    const char *env = getenv(LOG_LEVEL_ENV);
    enum dlog_level env_level;

    if (env && *env && dlog_level_parse(env, &env_level) == 0)
        level = env_level;
    pthread_once(&log_env_once, log_env_default);
    pthread_mutex_lock(&log_lock);
    if (progname) {
        const char *slash = strrchr(progname, '/');
        snprintf(log_progname, sizeof(log_progname), "%s", slash ? slash + 1 : progname);
    }
    log_level = level;
    pthread_mutex_unlock(&log_lock);
}

enum dlog_level dlog_get_level(void)
{
    pthread_once(&log_env_once, log_env_default);
    pthread_mutex_lock(&log_lock);
    enum dlog_level level = log_level;
    pthread_mutex_unlock(&log_lock);
    return level;
}

static size_t format_prefix(char *buf, size_t len, enum dlog_level level)
{
    struct timeval tv;
    struct tm tm;
    char stamp[32];

    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
    int w = snprintf(buf, len, "%s.%03ld %s[%ld] %s ", stamp, (long)(tv.tv_usec / 1000),
                     log_progname, (long)getpid(), level_names[level]);
    if (w < 0)
        return 0;
    return (size_t)w < len ? (size_t)w : len - 1;
}

static void vdlog(enum dlog_level level, const char *fmt, va_list ap)
{
    char line[LOG_LINE_MAX];

    if (level < DLOG_ERR)
        level = DLOG_ERR;
    if (level > DLOG_DEBUG)
        level = DLOG_DEBUG;

    pthread_once(&log_env_once, log_env_default);
    pthread_mutex_lock(&log_lock);
    if (level > log_level)
        goto out;
    size_t used = format_prefix(line, sizeof(line), level);
    int w = vsnprintf(line + used, sizeof(line) - used, fmt, ap);
    if (w > 0)
        used += (size_t)w < sizeof(line) - used ? (size_t)w : sizeof(line) - used - 1;
    /* strip the caller's trailing newline(s); we add exactly one */
    while (used > 0 && line[used - 1] == '\n')
        used--;
    if (used >= sizeof(line) - 1)
        used = sizeof(line) - 2;
    line[used++] = '\n';
    size_t done = 0;
    while (done < used) {
        ssize_t n = write(STDERR_FILENO, line + done, used - done);
        if (n <= 0)
            break;
        done += (size_t)n;
    }
out:
    pthread_mutex_unlock(&log_lock);
}

void dlog(enum dlog_level level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vdlog(level, fmt, ap);
    va_end(ap);
}

/* Counts the line against lim; true when it may be printed, with the number
 * of lines held back before it in *held. */
static bool limit_admit(dlog_limit *lim, unsigned long long *held)
{
    unsigned long long now_ms = clock_now_ms();
    bool ok;

    pthread_mutex_lock(&limit_lock);
    if (now_ms - lim->window_start_ms >= lim->period_ms || lim->window_start_ms == 0) {
        lim->window_start_ms = now_ms;
        lim->printed = 0;
    }
    ok = lim->printed < lim->burst;
    *held = 0;
    if (ok) {
        lim->printed++;
        *held = lim->suppressed;
        lim->suppressed = 0;
    } else {
        lim->suppressed++;
    }
    pthread_mutex_unlock(&limit_lock);
    return ok;
}

void dlog_limited(dlog_limit *lim, enum dlog_level level, const char *fmt, ...)
{
    unsigned long long held;
    va_list ap;

    if (level > dlog_get_level() || !limit_admit(lim, &held))
        return;
    if (held)
        dlog(level, "(%llu similar lines held back by the log rate limit)", held);
    va_start(ap, fmt);
    vdlog(level, fmt, ap);
    va_end(ap);
}
