/* log.h - leveled logging to stderr for every DePFS program.
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

#define log_err(...)   dlog(DLOG_ERR, __VA_ARGS__)
#define log_warn(...)  dlog(DLOG_WARN, __VA_ARGS__)
#define log_info(...)  dlog(DLOG_INFO, __VA_ARGS__)
#define log_debug(...) dlog(DLOG_DEBUG, __VA_ARGS__)

#endif
