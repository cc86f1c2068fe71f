/* label.c - parsing of resiliency labels ("depfs@N@K[@SU]:/path", also
 * "depfs+N+K[+SU]:/path"), layout
 * specs ("N@K[@SU]") and sizes ("64k") (label.h). Every error names the part
 * of the input that is wrong. */
#include "label.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "depfs.h" /* depfs_label_parse, depfs_layout_spec_parse: the public face */
#include "layout.h"

#define LABEL_SPEC_MAX 64u        /* longest N@K@SU accepted */
#define LABEL_NUM_MAX 1000000000u /* n, k above this are "too large" */
#define SU_ALIGN_BYTES DEPFS_STRIPE_UNIT_ALIGN
#define KIB 1024ull

__attribute__((format(printf, 3, 4)))
static int fail(char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;
    if (err && err_len) {
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

int parse_size(const char *s, uint64_t *out)
{
    uint64_t v = 0, mult = 1;
    const char *p = s;

    if (!s || !isdigit((unsigned char)*p))
        return -EINVAL;
    for (; isdigit((unsigned char)*p); p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -EINVAL;
        v = v * 10 + d;
    }
    switch (*p) {
    case '\0': break;
    case 'k': case 'K': mult = KIB; p++; break;
    case 'm': case 'M': mult = KIB * KIB; p++; break;
    case 'g': case 'G': mult = KIB * KIB * KIB; p++; break;
    default: return -EINVAL;
    }
    if (*p != '\0')
        return -EINVAL;
    if (v > UINT64_MAX / mult)
        return -EINVAL;
    *out = v * mult;
    return 0;
}

/* Decimal number at *pp, stopping at the separator sep or the end; names
 * it `what`. */
static int parse_count(const char **pp, char sep, const char *what, unsigned *out, char *err,
                       size_t err_len)
{
    const char *p = *pp;
    uint64_t v = 0;

    if (*p == '\0' || *p == sep)
        return fail(err, err_len, "missing %s (expected N%cK or N%cK%cSU)", what, sep, sep, sep);
    if (!isdigit((unsigned char)*p))
        return fail(err, err_len, "%s is not a number: '%s'", what, p);
    for (; isdigit((unsigned char)*p); p++) {
        v = v * 10 + (uint64_t)(*p - '0');
        if (v > LABEL_NUM_MAX)
            return fail(err, err_len, "%s too large: '%s'", what, *pp);
    }
    if (*p != '\0' && *p != sep)
        return fail(err, err_len, "junk after %s: '%s'", what, p);
    *out = (unsigned)v;
    *pp = p;
    return 0;
}

static int check_su(uint64_t su, const char *text, char *err, size_t err_len)
{
    if (su % SU_ALIGN_BYTES != 0)
        return fail(err, err_len, "stripe unit '%s' (%llu) is not a multiple of %u", text,
                    (unsigned long long)su, SU_ALIGN_BYTES);
    if (su < LAYOUT_MIN_SU || su > LAYOUT_MAX_SU)
        return fail(err, err_len, "stripe unit '%s' (%llu) not in %u..%u", text,
                    (unsigned long long)su, LAYOUT_MIN_SU, LAYOUT_MAX_SU);
    return 0;
}

static int check_nk(unsigned n, unsigned k, char *err, size_t err_len)
{
    if (n == 0)
        return fail(err, err_len, "n (0) must be at least 1");
    if (k == 0)
        return fail(err, err_len, "k (0) must be at least 1");
    if (n > LAYOUT_MAX_N)
        return fail(err, err_len, "n (%u) > maximum %u", n, LAYOUT_MAX_N);
    if (k > n)
        return fail(err, err_len, "k (%u) > n (%u)", k, n);
    return 0;
}

/* N<sep>K[<sep>SU]: the layout spec of a label or an xattr. */
static int parse_spec_sep(const char *spec, char sep, unsigned *n, unsigned *k, uint32_t *su,
                          char *err, size_t err_len)
{
    const char *p = spec;
    unsigned pn, pk;
    uint64_t psu = 0;
    int rc;

    if (!spec)
        return fail(err, err_len, "missing layout spec (expected N%cK or N%cK%cSU)", sep, sep, sep);
    if ((rc = parse_count(&p, sep, "n", &pn, err, err_len)) != 0)
        return rc;
    if (*p != sep)
        return fail(err, err_len, "missing k in '%s' (expected N%cK or N%cK%cSU)", spec, sep, sep,
                    sep);
    p++;
    if ((rc = parse_count(&p, sep, "k", &pk, err, err_len)) != 0)
        return rc;
    if (*p == sep) {
        p++;
        if (*p == '\0')
            return fail(err, err_len, "missing stripe unit after '%s'", spec);
        if (strchr(p, sep))
            return fail(err, err_len, "junk after stripe unit: '%s'", strchr(p, sep));
        if (parse_size(p, &psu) != 0)
            return fail(err, err_len, "bad stripe unit: '%s' (a size like 4096, 64k, 1m)", p);
        if ((rc = check_su(psu, p, err, err_len)) != 0)
            return rc;
    }
    if ((rc = check_nk(pn, pk, err, err_len)) != 0)
        return rc;
    *n = pn;
    *k = pk;
    *su = (uint32_t)psu;
    return 0;
}

int label_parse_spec(const char *spec, unsigned *n, unsigned *k, uint32_t *su, char *err,
                     size_t err_len)
{
    return parse_spec_sep(spec, LABEL_SEP, n, k, su, err, err_len);
}

/* Copies the spec between "depfs@" (or "depfs+") and ':' and parses it. */
static int parse_label_spec(const char *spec, size_t len, char sep, depfs_label *out, char *err,
                            size_t err_len)
{
    char buf[LABEL_SPEC_MAX + 1];

    if (len > LABEL_SPEC_MAX)
        return fail(err, err_len, "layout spec too long (%zu bytes, max %u)", len, LABEL_SPEC_MAX);
    memcpy(buf, spec, len);
    buf[len] = '\0';
    return parse_spec_sep(buf, sep, &out->n, &out->k, &out->su, err, err_len);
}

bool label_has_prefix(const char *s)
{
    return s && strncasecmp(s, LABEL_PREFIX, LABEL_PREFIX_LEN) == 0 &&
           (s[LABEL_PREFIX_LEN] == ':' || s[LABEL_PREFIX_LEN] == LABEL_SEP ||
            s[LABEL_PREFIX_LEN] == LABEL_SEP_ALT);
}

/* The label of s (has_label_prefix): its layout, and the path after ':'
 * (not checked). */
static int parse_label_prefix(const char *s, depfs_label *out, char *err, size_t err_len)
{
    const char *p = s + LABEL_PREFIX_LEN;
    const char *colon = strchr(p, ':');
    if (!colon)
        return fail(err, err_len, "missing ':' after the label in '%s'", s);
    if (*p != ':') { /* the separator the label starts with is its only one */
        int rc = parse_label_spec(p + 1, (size_t)(colon - p - 1), *p, out, err, err_len);
        if (rc)
            return rc;
    }
    out->has_label = true;
    out->path = colon + 1;
    return 0;
}

int label_parse(const char *s, depfs_label *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof(*out));
    if (!s || *s == '\0')
        return fail(err, err_len, "empty path");
    if (!label_has_prefix(s)) {
        if (s[0] == '/') {
            out->path = s;
            return 0;
        }
        const char *colon = strchr(s, ':');
        if (colon && strncasecmp(s, LABEL_PREFIX, LABEL_PREFIX_LEN) == 0)
            return fail(err, err_len, "unknown label prefix '%.*s' (expected depfs:, depfs@N@K:, depfs@N@K@SU: or depfs+N+K[+SU]:)",
                        (int)(colon - s), s);
        return fail(err, err_len, "path '%s' must start with '/' or a depfs label", s);
    }

    int rc = parse_label_prefix(s, out, err, err_len);
    if (rc)
        return rc;
    if (out->path[0] != '/') {
        const char *path = out->path;
        memset(out, 0, sizeof(*out));
        return fail(err, err_len, "path after ':' must start with '/': '%s'", path);
    }
    return 0;
}

int depfs_label_parse(const char *s, unsigned *n, unsigned *k, uint32_t *su, const char **path,
                      char *err, size_t err_len)
{
    depfs_label lab;
    memset(&lab, 0, sizeof(lab));
    if (!label_has_prefix(s))
        return 0;
    int rc = parse_label_prefix(s, &lab, err, err_len);
    if (rc)
        return rc;
    *n = lab.n;
    *k = lab.k;
    *su = lab.su;
    *path = lab.path;
    return 1;
}

int depfs_layout_spec_parse(const char *spec, unsigned *n, unsigned *k, uint32_t *su, char *err,
                            size_t err_len)
{
    return label_parse_spec(spec, n, k, su, err, err_len);
}

int label_check_cluster(unsigned n, unsigned servers, char *err, size_t err_len)
{
    if (n > servers)
        return fail(err, err_len, "n (%u) > servers in the cluster (%u)", n, servers);
    return 0;
}

void label_format_spec(char *buf, size_t len, unsigned n, unsigned k, uint32_t su)
{
    if (su)
        snprintf(buf, len, "%u@%u@%u", n, k, su);
    else
        snprintf(buf, len, "%u@%u", n, k);
}
