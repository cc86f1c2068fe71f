/* label.h - resiliency labels and layout specs.
 *
 *   depfs:/path            default layout
 *   depfs@N@K:/path        n = N units per stripe, k = K data units
 *   depfs@N@K@SU:/path     and stripe unit SU bytes (suffix k/K or m/M allowed)
 *   depfs+N+K[+SU]:/path   the same, for tools that split names at '@'
 *                          (IOR's -o, mdtest's -d); one separator per label
 * The prefix "depfs" is case-insensitive. A bare "/path" parses as no label.
 * Errors name the bad part ("k (9) > n (8)", "junk after K: 'x'", ...). */
#ifndef DEPFS_LABEL_H
#define DEPFS_LABEL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LABEL_PREFIX "depfs"
#define LABEL_PREFIX_LEN (sizeof(LABEL_PREFIX) - 1)
#define LABEL_SEP '@'
#define LABEL_SEP_ALT '+'

typedef struct depfs_label {
    bool has_label;     /* a depfs...: prefix was present */
    unsigned n, k;      /* 0 = not given (use default/inherited) */
    uint32_t su;        /* 0 = not given */
    const char *path;   /* points into the parsed string: the part after ':' */
} depfs_label;

/* s starts with a label: "depfs:", "depfs@" or "depfs+" (any case). */
bool label_has_prefix(const char *s);
/* 0 or -EINVAL with a message in err. Checks n, k, su against themselves
 * (k >= 1, k <= n, n <= LAYOUT_MAX_N, su a multiple of 512 within limits). */
int label_parse(const char *s, depfs_label *out, char *err, size_t err_len);
/* "N@K" or "N@K@SU" (the xattr / CLI form). */
int label_parse_spec(const char *spec, unsigned *n, unsigned *k, uint32_t *su, char *err, size_t err_len);
/* n against the cluster: -EINVAL "n (8) > servers in the cluster (4)". */
int label_check_cluster(unsigned n, unsigned servers, char *err, size_t err_len);
/* "64k" -> 65536, "1m", "4096"; -EINVAL on junk or overflow. */
int parse_size(const char *s, uint64_t *out);
/* n@k@su as text, e.g. "8@6@65536". */
void label_format_spec(char *buf, size_t len, unsigned n, unsigned k, uint32_t su);

#endif
