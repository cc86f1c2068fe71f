/* log.h - leveled logging to stderr for every DePFS program, with rate
 * limits for lines a peer can trigger.
 * One line per message: "<time> <prog>[pid] <LEVEL> message". Thread-safe. */
#ifndef DEPFS_LOG_H
#define DEPFS_LOG_H

enum dlog_level { DLOG_ERR = 0, DLOG_WARN = 1, DLOG_INFO = 2, DLOG_DEBUG = 3 };

/* Sets the program name and the most verbose level printed. The env var
 * DEPFS_LOG_LEVEL (err|warn|info|debug) overrides `level` when set. */
void dlog_init(const char *progname, enum dlog_level level);
void dlog(enum dlog_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
enum dlog_level dlog_get_level(void);
/* The one log-level parser (command lines, DEPFS_LOG_LEVEL): err|warn|info|
 * debug in any case, also error|warning and 0..3. 0 or -EINVAL. */
int dlog_level_parse(const char *s, enum dlog_level *out);

/* A rate limit for lines that a peer can make us print (one per bad
 * connection, say): at most `burst` lines per `period_ms`; the first line
 * printed after lines were held back says how many. One per call site or
 * per kind of event, initialised with DLOG_LIMIT_INIT. */
typedef struct dlog_limit {
    unsigned burst;
    unsigned period_ms;
    unsigned long long window_start_ms; /* under the limiter's lock (log.c) */
    unsigned printed;
    unsigned long long suppressed;
} dlog_limit;
#define DLOG_LIMIT_INIT(burst_, period_ms_) \
    { .burst = (burst_), .period_ms = (period_ms_) }

void dlog_limited(dlog_limit *lim, enum dlog_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_err(...)   dlog(DLOG_ERR, __VA_ARGS__)
#define log_warn(...)  dlog(DLOG_WARN, __VA_ARGS__)
#define log_info(...)  dlog(DLOG_INFO, __VA_ARGS__)
#define log_debug(...) dlog(DLOG_DEBUG, __VA_ARGS__)

#endif
