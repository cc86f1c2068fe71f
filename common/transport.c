/* transport.c - owns the transport-independent part of transport.h:
 * dispatch on the kind ("tcp" / "rdma"), address parsing and formatting. */
#include "transport.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"

#define XPORT_PORT_MAX 65535u
#define XPORT_PORT_DIGITS_MAX 5

enum xport_kind { XPORT_TCP, XPORT_RDMA, XPORT_UNKNOWN };

static enum xport_kind kind_of(const char *kind)
{
    if (!kind || strcmp(kind, "tcp") == 0)
        return XPORT_TCP;
    if (strcmp(kind, "rdma") == 0)
        return XPORT_RDMA;
    return XPORT_UNKNOWN;
}

int xport_listen(const char *kind, const char *addr, xport_listener **out)
{
    assert(out);
    switch (kind_of(kind)) {
    case XPORT_TCP:
        return xport_tcp_listen(addr, out);
    case XPORT_RDMA:
        return xport_rdma_listen(addr, out);
    default:
        log_err("unknown transport '%s'", kind);
        return -EINVAL;
    }
}

int xport_connect(const char *kind, const char *addr, int timeout_ms, xport **out)
{
    assert(out);
    switch (kind_of(kind)) {
    case XPORT_TCP:
        return xport_tcp_connect(addr, timeout_ms, out);
    case XPORT_RDMA:
        return xport_rdma_connect(addr, timeout_ms, out);
    default:
        log_err("unknown transport '%s'", kind);
        return -EINVAL;
    }
}

int xport_accept(xport_listener *l, xport **out)
{
    assert(l && l->ops && out);
    return l->ops->accept(l, out);
}

void xport_listener_shutdown(xport_listener *l)
{
    if (l)
        l->ops->shutdown(l);
}

void xport_listener_close(xport_listener *l)
{
    if (l)
        l->ops->close(l);
}

int xport_listener_port(const xport_listener *l)
{
    assert(l && l->ops);
    return l->ops->port(l);
}

int xport_available(const char *kind)
{
    switch (kind_of(kind)) {
    case XPORT_TCP:
        return 1;
    case XPORT_RDMA:
        return xport_rdma_available();
    default:
        return 0;
    }
}

/* Parses a decimal port of 1..5 digits; -EINVAL otherwise. */
static int parse_port(const char *s, unsigned *port)
{
    size_t n = strlen(s);
    unsigned v = 0;

    if (n == 0 || n > XPORT_PORT_DIGITS_MAX)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -EINVAL;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v > XPORT_PORT_MAX)
        return -EINVAL;
    *port = v;
    return 0;
}

int xport_split_addr(const char *addr, char *host, size_t host_len, unsigned *port)
{
    const char *hstart, *hend, *pstart;
    unsigned p;

    if (!addr || !host || host_len == 0 || !port)
        return -EINVAL;
    if (addr[0] == '[') { /* "[v6]:PORT" */
        hstart = addr + 1;
        hend = strchr(hstart, ']');
        if (!hend || hend[1] != ':')
            return -EINVAL;
        pstart = hend + 2;
    } else {
        hstart = addr;
        hend = strrchr(addr, ':');
        if (!hend || memchr(hstart, ':', (size_t)(hend - hstart)))
            return -EINVAL; /* bare IPv6 needs brackets */
        pstart = hend + 1;
    }
    if (hend == hstart || (size_t)(hend - hstart) >= host_len)
        return -EINVAL;
    for (const char *c = hstart; c < hend; c++)
        if (isspace((unsigned char)*c) || *c == '[' || *c == ']')
            return -EINVAL;
    if (parse_port(pstart, &p) < 0)
        return -EINVAL;
    memcpy(host, hstart, (size_t)(hend - hstart));
    host[hend - hstart] = '\0';
    *port = p;
    return 0;
}

void xport_format_sockaddr(const struct sockaddr *sa, char *out, size_t out_len)
{
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    socklen_t len = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                              : sizeof(struct sockaddr_in);

    assert(out && out_len > 0);
    if (getnameinfo(sa, len, host, sizeof(host), serv, sizeof(serv),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        snprintf(out, out_len, "?:?");
        return;
    }
    if (sa->sa_family == AF_INET6)
        snprintf(out, out_len, "[%s]:%s", host, serv);
    else
        snprintf(out, out_len, "%s:%s", host, serv);
}

void xport_peer_host(const xport *x, char out[XPORT_PEER_MAX])
{
    const char *colon;
    size_t n;

    assert(x && out);
    colon = strrchr(x->peer, ':'); /* "[v6]:PORT" keeps its brackets */
    n = colon ? (size_t)(colon - x->peer) : strlen(x->peer);
    if (n >= XPORT_PEER_MAX)
        n = XPORT_PEER_MAX - 1;
    memcpy(out, x->peer, n);
    out[n] = '\0';
}
