/* config.c - loading the cluster config file (config.h): "key = value"
 * lines, '#' comments, one ioserver line per I/O server. Every error names
 * file:line and the offending key or value. */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "label.h"
#include "layout.h"
#include "log.h"
#include "rpc.h"

#define CONFIG_LINE_MAX 8192u
#define CONFIG_MS_MAX 86400000u          /* one day: larger is surely a typo */
#define CONFIG_BYTES_MIN 1024u
#define CONFIG_PORT_MAX 65535u
#define CONFIG_IPV4_BITS 32u
#define CONFIG_NET_SEPARATORS ", \t"
#define KIB 1024u
#define MIB (1024u * 1024u)

#define DEFAULT_N 8u
#define DEFAULT_K 6u
#define DEFAULT_REQUEST_TIMEOUT_MS 2000u
#define DEFAULT_CONNECT_TIMEOUT_MS 1000u
#define DEFAULT_HEARTBEAT_PERIOD_MS 500u
#define DEFAULT_LOCK_LEASE_MS 5000u
#define DEFAULT_SERVER_DOWN_EXPIRY_MS 5000u
#define DEFAULT_MAX_HEADER_BYTES (1u * MIB)
#define DEFAULT_MAX_BULK_BYTES (64u * MIB)
#define DEFAULT_SCRUB_RATE (16u * MIB) /* a 10 TB disk verified about once a week */
/* what a rebuild keeps while clients are busy: a 1 TB server's units in
 * about 9 hours under constant load, at full speed whenever they pause */
#define DEFAULT_REBUILD_BUSY_RATE (32u * MIB)
#define CONFIG_COUNT_MAX (1u << 20)      /* connection counts: larger is surely a typo */

enum key_type { K_ADDR, K_PATH, K_TRANSPORT, K_IOSERVER, K_LAYOUT, K_MS, K_BYTES, K_RATE, K_COUNT,
                K_SWITCH, K_ID, K_NETS };

struct key_def {
    const char *name;
    enum key_type type;
    size_t offset; /* into depfs_config */
    size_t size;   /* of the string field */
};

#define STR_KEY(name, type) { #name, type, offsetof(depfs_config, name), sizeof(((depfs_config *)0)->name) }
#define NUM_KEY(name, type) { #name, type, offsetof(depfs_config, name), 0 }

static const struct key_def keys[] = {
    STR_KEY(mds_address, K_ADDR),
    STR_KEY(mds_data_dir, K_PATH),
    STR_KEY(recovery_data_dir, K_PATH),
    STR_KEY(transport, K_TRANSPORT),
    { "ioserver", K_IOSERVER, 0, 0 },
    { "default_layout", K_LAYOUT, 0, 0 },
    NUM_KEY(request_timeout_ms, K_MS),
    NUM_KEY(connect_timeout_ms, K_MS),
    NUM_KEY(heartbeat_period_ms, K_MS),
    NUM_KEY(lock_lease_ms, K_MS),
    NUM_KEY(server_down_expiry_ms, K_MS),
    NUM_KEY(max_header_bytes, K_BYTES),
    NUM_KEY(max_bulk_bytes, K_BYTES),
    NUM_KEY(scrub_rate, K_RATE),
    NUM_KEY(rebuild_rate, K_RATE),
    NUM_KEY(rebuild_busy_rate, K_RATE),
    NUM_KEY(frame_timeout_ms, K_MS),
    NUM_KEY(idle_timeout_ms, K_MS),
    NUM_KEY(send_timeout_ms, K_MS),
    NUM_KEY(max_connections, K_COUNT),
    NUM_KEY(max_unproven_per_peer, K_COUNT),
    NUM_KEY(auth, K_SWITCH),
    STR_KEY(cluster_key, K_PATH),
    STR_KEY(munge_socket, K_PATH),
    { "client_nodes", K_NETS, 0, 0 },
    NUM_KEY(root_squash, K_SWITCH),
    NUM_KEY(squash_uid, K_ID),
    NUM_KEY(squash_gid, K_ID),
};
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

struct parse_ctx {
    depfs_config *c;
    const char *path;
    unsigned line;
    unsigned key_line[N_KEYS];                   /* where each key was set */
    unsigned server_line[CONFIG_MAX_IOSERVERS];  /* where each ioserver was set */
    char *err;
    size_t err_len;
};

__attribute__((format(printf, 2, 3)))
static int fail(struct parse_ctx *x, const char *fmt, ...)
{
    va_list ap;
    if (x->err && x->err_len) {
        int w = snprintf(x->err, x->err_len, "%s:%u: ", x->path, x->line);
        if (w >= 0 && (size_t)w < x->err_len) {
            va_start(ap, fmt);
            vsnprintf(x->err + w, x->err_len - (size_t)w, fmt, ap);
            va_end(ap);
        }
    }
    return -EINVAL;
}

void config_defaults(depfs_config *c)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->transport, sizeof(c->transport), "tcp");
    c->default_n = DEFAULT_N;
    c->default_k = DEFAULT_K;
    c->default_su = LAYOUT_DEFAULT_SU;
    c->request_timeout_ms = DEFAULT_REQUEST_TIMEOUT_MS;
    c->connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
    c->heartbeat_period_ms = DEFAULT_HEARTBEAT_PERIOD_MS;
    c->lock_lease_ms = DEFAULT_LOCK_LEASE_MS;
    c->server_down_expiry_ms = DEFAULT_SERVER_DOWN_EXPIRY_MS;
    c->max_header_bytes = DEFAULT_MAX_HEADER_BYTES;
    c->max_bulk_bytes = DEFAULT_MAX_BULK_BYTES;
    c->scrub_rate = DEFAULT_SCRUB_RATE;
    c->rebuild_rate = 0;
    c->rebuild_busy_rate = DEFAULT_REBUILD_BUSY_RATE;
    c->frame_timeout_ms = RPC_DEFAULT_FRAME_TIMEOUT_MS;
    c->idle_timeout_ms = RPC_DEFAULT_IDLE_TIMEOUT_MS;
    c->send_timeout_ms = RPC_DEFAULT_SEND_TIMEOUT_MS;
    c->max_connections = RPC_DEFAULT_MAX_CONNECTIONS;
    c->max_unproven_per_peer = RPC_DEFAULT_MAX_UNPROVEN_PER_PEER;
    c->auth = true;
    snprintf(c->cluster_key, sizeof(c->cluster_key), "%s", CONFIG_DEFAULT_CLUSTER_KEY);
    c->root_squash = true;
    c->squash_uid = c->squash_gid = CONFIG_DEFAULT_SQUASH_ID;
}

const ioserver_conf *config_ioserver(const depfs_config *c, uint32_t id)
{
    for (unsigned i = 0; i < c->n_ioservers; i++)
        if (c->ioservers[i].id == id)
            return &c->ioservers[i];
    return NULL;
}

bool config_is_client_node(const depfs_config *c, uint32_t ipv4_be)
{
    uint32_t a = ntohl(ipv4_be);
    for (unsigned i = 0; i < c->n_client_nodes && i < CONFIG_MAX_CLIENT_NETS; i++)
        if ((a & c->client_nodes[i].mask) == c->client_nodes[i].addr)
            return true;
    return false;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t len = strlen(s);
    while (len > 0 && isspace((unsigned char)s[len - 1]))
        s[--len] = '\0';
    return s;
}

/* Decimal unsigned number, the whole string. */
static int parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!isdigit((unsigned char)*s))
        return -EINVAL;
    for (; isdigit((unsigned char)*s); s++) {
        uint64_t d = (uint64_t)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -EINVAL;
        v = v * 10 + d;
    }
    *out = v;
    return *s ? -EINVAL : 0;
}

/* HOST:PORT (HOST may be a bracketed IPv6 address). */
static int check_address(struct parse_ctx *x, const char *key, const char *v)
{
    const char *colon = strrchr(v, ':');
    uint64_t port;

    if (strlen(v) >= CONFIG_ADDR_MAX)
        return fail(x, "%s: address too long (max %u bytes)", key, CONFIG_ADDR_MAX - 1);
    if (!colon || colon == v)
        return fail(x, "%s: bad address '%s' (expected HOST:PORT)", key, v);
    if (parse_u64(colon + 1, &port) != 0 || port == 0 || port > CONFIG_PORT_MAX)
        return fail(x, "%s: bad port in '%s' (expected 1..%u)", key, v, CONFIG_PORT_MAX);
    for (const char *p = v; *p; p++)
        if (isspace((unsigned char)*p))
            return fail(x, "%s: bad address '%s' (contains whitespace)", key, v);
    return 0;
}

static int set_string(struct parse_ctx *x, const struct key_def *k, const char *v)
{
    char *dst = (char *)x->c + k->offset;
    if (strlen(v) >= k->size)
        return fail(x, "%s: value too long (max %zu bytes)", k->name, k->size - 1);
    snprintf(dst, k->size, "%s", v);
    return 0;
}

/* ioserver = ID HOST:PORT DATADIR */
static int parse_ioserver(struct parse_ctx *x, char *v)
{
    depfs_config *c = x->c;
    char *id_s = v, *addr, *dir;
    uint64_t id;

    addr = id_s + strcspn(id_s, " \t");
    if (*addr)
        *addr++ = '\0';
    addr = trim(addr);
    dir = addr + strcspn(addr, " \t");
    if (*dir)
        *dir++ = '\0';
    dir = trim(dir);
    if (!*addr || !*dir)
        return fail(x, "ioserver: expected 'ID HOST:PORT DATADIR'");
    if (parse_u64(id_s, &id) != 0 || id > UINT32_MAX)
        return fail(x, "ioserver: bad id '%s' (expected 0..%u)", id_s, UINT32_MAX);
    int rc = check_address(x, "ioserver", addr);
    if (rc)
        return rc;
    if (strlen(dir) >= PATH_MAX)
        return fail(x, "ioserver: data directory too long (max %d bytes)", PATH_MAX - 1);
    for (unsigned i = 0; i < c->n_ioservers; i++) {
        if (c->ioservers[i].id == id)
            return fail(x, "ioserver: duplicate id %llu (first on line %u)",
                        (unsigned long long)id, x->server_line[i]);
        if (strcmp(c->ioservers[i].address, addr) == 0)
            return fail(x, "ioserver: duplicate address %s (first on line %u)", addr,
                        x->server_line[i]);
    }
    if (c->n_ioservers >= CONFIG_MAX_IOSERVERS)
        return fail(x, "ioserver: more than %u servers", CONFIG_MAX_IOSERVERS);

    ioserver_conf *s = &c->ioservers[c->n_ioservers];
    s->id = (uint32_t)id;
    snprintf(s->address, sizeof(s->address), "%s", addr);
    snprintf(s->data_dir, sizeof(s->data_dir), "%s", dir);
    x->server_line[c->n_ioservers++] = x->line;
    return 0;
}

/* One client_nodes entry: ADDR or ADDR/BITS (IPv4). */
static int parse_net(struct parse_ctx *x, char *tok, config_net *out)
{
    struct in_addr ia;
    uint64_t bits = CONFIG_IPV4_BITS;
    char *slash = strchr(tok, '/');
    if (slash) {
        *slash = '\0';
        if (parse_u64(slash + 1, &bits) != 0 || bits > CONFIG_IPV4_BITS)
            return fail(x, "client_nodes: bad prefix length in '%s/%s' (expected 0..%u)", tok,
                        slash + 1, CONFIG_IPV4_BITS);
    }
    if (inet_pton(AF_INET, tok, &ia) != 1)
        return fail(x, "client_nodes: bad address '%s' (expected an IPv4 ADDR or ADDR/BITS)",
                    tok);
    out->mask = bits ? UINT32_MAX << (CONFIG_IPV4_BITS - bits) : 0;
    out->addr = ntohl(ia.s_addr) & out->mask;
    return 0;
}

/* client_nodes = NET[,NET...] */
static int parse_nets(struct parse_ctx *x, char *v)
{
    depfs_config *c = x->c;
    char *save = NULL;
    c->n_client_nodes = 0;
    for (char *tok = strtok_r(v, CONFIG_NET_SEPARATORS, &save); tok;
         tok = strtok_r(NULL, CONFIG_NET_SEPARATORS, &save)) {
        if (c->n_client_nodes >= CONFIG_MAX_CLIENT_NETS)
            return fail(x, "client_nodes: more than %u entries", CONFIG_MAX_CLIENT_NETS);
        int rc = parse_net(x, tok, &c->client_nodes[c->n_client_nodes]);
        if (rc)
            return rc;
        c->n_client_nodes++;
    }
    return 0;
}

static int parse_layout(struct parse_ctx *x, const char *v)
{
    char why[160];
    unsigned n, k;
    uint32_t su;

    if (label_parse_spec(v, &n, &k, &su, why, sizeof(why)) != 0)
        return fail(x, "default_layout: %s", why);
    x->c->default_n = n;
    x->c->default_k = k;
    x->c->default_su = su ? su : LAYOUT_DEFAULT_SU;
    return 0;
}

static int parse_number(struct parse_ctx *x, const struct key_def *k, const char *v)
{
    uint64_t num;
    if (k->type == K_MS) {
        if (parse_u64(v, &num) != 0 || num == 0 || num > CONFIG_MS_MAX)
            return fail(x, "%s: bad value '%s' (expected milliseconds, 1..%u)", k->name, v,
                        CONFIG_MS_MAX);
        *(unsigned *)((char *)x->c + k->offset) = (unsigned)num;
        return 0;
    }
    if (k->type == K_COUNT) {
        if (parse_u64(v, &num) != 0 || num == 0 || num > CONFIG_COUNT_MAX)
            return fail(x, "%s: bad value '%s' (expected a count, 1..%u)", k->name, v,
                        CONFIG_COUNT_MAX);
        *(unsigned *)((char *)x->c + k->offset) = (unsigned)num;
        return 0;
    }
    if (k->type == K_ID) {
        if (parse_u64(v, &num) != 0 || num >= UINT32_MAX)
            return fail(x, "%s: bad value '%s' (expected a uid or gid, 0..%u)", k->name, v,
                        UINT32_MAX - 1);
        *(uint32_t *)((char *)x->c + k->offset) = (uint32_t)num;
        return 0;
    }
    if (k->type == K_RATE) {
        if (parse_size(v, &num) != 0 || num > UINT32_MAX)
            return fail(x, "%s: bad value '%s' (expected bytes per second like 16m, or 0, "
                        "at most %u)", k->name, v, UINT32_MAX);
        *(uint32_t *)((char *)x->c + k->offset) = (uint32_t)num;
        return 0;
    }
    if (parse_size(v, &num) != 0 || num < CONFIG_BYTES_MIN || num > UINT32_MAX)
        return fail(x, "%s: bad value '%s' (expected a size like 1m, %u..%u bytes)", k->name, v,
                    CONFIG_BYTES_MIN, UINT32_MAX);
    *(uint32_t *)((char *)x->c + k->offset) = (uint32_t)num;
    return 0;
}

static int parse_value(struct parse_ctx *x, const struct key_def *k, char *v)
{
    int rc;
    switch (k->type) {
    case K_ADDR:
        if ((rc = check_address(x, k->name, v)) != 0)
            return rc;
        return set_string(x, k, v);
    case K_PATH:
        return set_string(x, k, v);
    case K_TRANSPORT:
        if (strcmp(v, "tcp") != 0 && strcmp(v, "rdma") != 0)
            return fail(x, "transport: bad value '%s' (expected tcp or rdma)", v);
        return set_string(x, k, v);
    case K_SWITCH:
        if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
            return fail(x, "%s: bad value '%s' (expected on or off)", k->name, v);
        *(bool *)((char *)x->c + k->offset) = strcmp(v, "on") == 0;
        return 0;
    case K_IOSERVER:
        return parse_ioserver(x, v);
    case K_LAYOUT:
        return parse_layout(x, v);
    case K_NETS:
        return parse_nets(x, v);
    case K_ID:
    case K_MS:
    case K_BYTES:
    case K_RATE:
    case K_COUNT:
        return parse_number(x, k, v);
    }
    return fail(x, "internal: unhandled key type");
}

/* '#' starts a comment at the line start or after whitespace, so values
 * such as paths may still contain '#'. */
static void strip_comment(char *line)
{
    for (char *p = line; *p; p++) {
        if (*p == '#' && (p == line || isspace((unsigned char)p[-1]))) {
            *p = '\0';
            return;
        }
    }
}

static int parse_line(struct parse_ctx *x, char *line)
{
    strip_comment(line);
    char *s = trim(line);
    if (*s == '\0')
        return 0;
    char *eq = strchr(s, '=');
    if (!eq)
        return fail(x, "expected 'key = value', got '%s'", s);
    *eq = '\0';
    char *key = trim(s), *val = trim(eq + 1);
    if (*key == '\0')
        return fail(x, "missing key before '='");

    for (unsigned i = 0; i < N_KEYS; i++) {
        if (strcmp(key, keys[i].name) != 0)
            continue;
        if (*val == '\0')
            return fail(x, "%s: missing value", key);
        if (keys[i].type != K_IOSERVER && x->key_line[i])
            return fail(x, "%s set twice (first on line %u)", key, x->key_line[i]);
        x->key_line[i] = x->line;
        return parse_value(x, &keys[i], val);
    }
    return fail(x, "unknown key '%s'", key);
}

/* After parsing: required keys, and the default layout fitted to the cluster. */
static int finish(struct parse_ctx *x)
{
    depfs_config *c = x->c;
    if (c->mds_address[0] == '\0') {
        snprintf(x->err, x->err_len, "%s: mds_address is required", x->path);
        return -EINVAL;
    }
    if (c->n_ioservers > 0 && c->default_n > c->n_ioservers) {
        unsigned n = c->n_ioservers;
        unsigned k_max = n > 1 ? n - 1 : n;
        unsigned k = c->default_k < k_max ? c->default_k : k_max;
        log_warn("%s: default_layout %u@%u needs more servers than the %u configured; using %u@%u",
                 x->path, c->default_n, c->default_k, n, n, k);
        c->default_n = n;
        c->default_k = k;
    }
    return 0;
}

int config_load(const char *path, depfs_config *c, char *err, size_t err_len)
{
    static char no_err[1];
    struct parse_ctx *x = NULL;
    char *line = NULL;
    size_t cap = 0;
    FILE *f = NULL;
    int rc = 0;

    if (!err || !err_len) {
        err = no_err;
        err_len = sizeof(no_err);
    }
    err[0] = '\0';
    if (!path)
        path = getenv(CONFIG_ENV);
    if (!path || !*path)
        path = CONFIG_DEFAULT_PATH;
    config_defaults(c);
    if (strlen(path) >= sizeof(c->path)) {
        snprintf(err, err_len, "config path too long");
        return -ENAMETOOLONG;
    }
    snprintf(c->path, sizeof(c->path), "%s", path);

    x = calloc(1, sizeof(*x));
    if (!x) {
        snprintf(err, err_len, "%s: out of memory", path);
        return -ENOMEM;
    }
    x->c = c;
    x->path = c->path;
    x->err = err;
    x->err_len = err_len;

    f = fopen(path, "r");
    if (!f) {
        rc = -errno;
        snprintf(err, err_len, "%s: cannot open: %s", path, strerror(errno));
        goto out;
    }
    for (;;) {
        errno = 0;
        ssize_t got = getline(&line, &cap, f);
        if (got < 0) {
            if (ferror(f)) {
                rc = errno ? -errno : -EIO;
                snprintf(err, err_len, "%s: read error: %s", path, strerror(-rc));
                goto out;
            }
            break;
        }
        x->line++;
        if ((size_t)got > CONFIG_LINE_MAX) {
            rc = fail(x, "line longer than %u bytes", CONFIG_LINE_MAX);
            goto out;
        }
        if (memchr(line, '\0', (size_t)got)) {
            rc = fail(x, "NUL byte in line");
            goto out;
        }
        if ((rc = parse_line(x, line)) != 0)
            goto out;
    }
    rc = finish(x);
out:
    if (f)
        fclose(f);
    free(line);
    free(x);
    return rc;
}
