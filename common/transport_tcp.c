/* transport_tcp.c - owns the TCP transport: listen/accept/connect over
 * IPv4 and IPv6 sockets and the byte-stream ops of struct xport, blocking,
 * or bounded by a deadline per direction (poll before each recv/send). */
#include "transport.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fault.h"
#include "log.h"

#define TCP_SOCKBUF_BYTES (4 << 20)
#define TCP_LISTEN_BACKLOG 256
#define TCP_HOST_MAX 256
#define TCP_IOV_BATCH 64 /* iovecs handed to one sendmsg */
#define TCP_CONNECT_DEFAULT_TIMEOUT_MS 10000 /* when the caller passes <= 0 */

typedef struct tcp_xport {
    xport base;
    int fd;
    uint64_t recv_deadline_ms; /* 0: recv_all blocks as long as it takes */
    uint64_t send_deadline_ms; /* 0: sendv blocks as long as it takes */
} tcp_xport;

typedef struct tcp_listener {
    xport_listener base;
    int fd;
    int wake_pipe[2]; /* written once by shutdown to wake accept */
} tcp_listener;

/* ------------------------------------------------------------- helpers */

static void tcp_tune(int fd)
{
    int one = 1, bytes = TCP_SOCKBUF_BYTES;

    /* best effort: failures only cost performance */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

static int set_nonblock(int fd, int on)
{
    int fl = fcntl(fd, F_GETFL);

    if (fl < 0)
        return -errno;
    fl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
    return fcntl(fd, F_SETFL, fl) < 0 ? -errno : 0;
}

/* Waits until fd polls ready for events (or hung up: the next call says
 * how) or deadline_ms passes: 0, -ETIMEDOUT or -errno. */
static int wait_ready(int fd, short events, uint64_t deadline_ms)
{
    for (;;) {
        uint64_t now_ms = clock_now_ms();
        struct pollfd p = {.fd = fd, .events = events};
        uint64_t left_ms;
        int n;

        if (now_ms >= deadline_ms)
            return -ETIMEDOUT;
        left_ms = deadline_ms - now_ms;
        n = poll(&p, 1, left_ms > INT_MAX ? INT_MAX : (int)left_ms);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -errno;
    }
}

static int tcp_resolve(const char *addr, int passive, struct addrinfo **res)
{
    char host[TCP_HOST_MAX], serv[16];
    unsigned port;
    struct addrinfo hints;
    int rc;

    if (!addr || xport_split_addr(addr, host, sizeof(host), &port) < 0) {
        log_err("tcp: bad address '%s' (want HOST:PORT or [V6]:PORT)", addr ? addr : "(null)");
        return -EINVAL;
    }
    snprintf(serv, sizeof(serv), "%u", port);
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    rc = getaddrinfo(host, serv, &hints, res);
    if (rc != 0) {
        log_err("tcp: cannot resolve '%s': %s", addr, gai_strerror(rc));
        return -EHOSTUNREACH;
    }
    return 0;
}

/* ------------------------------------------------------- stream ops */

static int tcp_sendv(xport *x, const struct iovec *iov, int cnt)
{
    tcp_xport *t = (tcp_xport *)x;
    struct iovec local[TCP_IOV_BATCH];
    int done = 0; /* iov entries fully sent */
    size_t off = 0; /* bytes of iov[done] already sent */

    assert(cnt >= 0);
    while (done < cnt) {
        int n = 0;
        struct msghdr mh;
        ssize_t w;

        for (int i = done; i < cnt && n < TCP_IOV_BATCH; i++) {
            size_t skip = i == done ? off : 0;
            if (iov[i].iov_len == skip)
                continue;
            local[n].iov_base = (char *)iov[i].iov_base + skip;
            local[n].iov_len = iov[i].iov_len - skip;
            n++;
        }
        if (n == 0)
            break;
        memset(&mh, 0, sizeof(mh));
        mh.msg_iov = local;
        mh.msg_iovlen = (size_t)n;
        uint8_t *flipped = NULL;
        /* frames go as [frame header, message header, bulk...]: flip a bit
         * of the bulk, which the receiver's CRC check must catch */
        if (cnt >= 3 && FAULT_POINT(FAULT_XPORT_FLIP_BIT) && local[n - 1].iov_len > 0 &&
            (flipped = malloc(local[n - 1].iov_len)) != NULL) {
            /* a copy: the caller's bytes (file data) stay as they are */
            memcpy(flipped, local[n - 1].iov_base, local[n - 1].iov_len);
            flipped[local[n - 1].iov_len / 2] ^= 1u;
            local[n - 1].iov_base = flipped;
        }
        w = sendmsg(t->fd, &mh, MSG_NOSIGNAL | (t->send_deadline_ms ? MSG_DONTWAIT : 0));
        free(flipped);
        if (w < 0) {
            int err = errno;
            if (err == EINTR)
                continue;
            if ((err == EAGAIN || err == EWOULDBLOCK) && t->send_deadline_ms) {
                int rc = wait_ready(t->fd, POLLOUT, t->send_deadline_ms);
                if (rc < 0)
                    return rc;
                continue;
            }
            return err == EPIPE ? -ECONNRESET : -err;
        }
        /* advance (done, off) by w bytes */
        size_t left = (size_t)w;
        while (done < cnt && left >= iov[done].iov_len - off) {
            left -= iov[done].iov_len - off;
            done++;
            off = 0;
        }
        off += left;
    }
    return 0;
}

static int tcp_recv_all(xport *x, void *buf, size_t len)
{
    tcp_xport *t = (tcp_xport *)x;
    char *p = buf;

    while (len > 0) {
        /* with a deadline: take what is there, wait (bounded) only when
         * nothing is; a peer trickling bytes makes us wait, and time out */
        ssize_t r = recv(t->fd, p, len, t->recv_deadline_ms ? MSG_DONTWAIT : 0);
        if (r == 0)
            return -ECONNRESET;
        if (r < 0) {
            int err = errno;
            if (err == EINTR)
                continue;
            if ((err == EAGAIN || err == EWOULDBLOCK) && t->recv_deadline_ms) {
                int rc = wait_ready(t->fd, POLLIN, t->recv_deadline_ms);
                if (rc < 0)
                    return rc;
                continue;
            }
            return -err;
        }
        p += r;
        len -= (size_t)r;
    }
    return 0;
}

static void tcp_set_recv_deadline(xport *x, uint64_t deadline_ms)
{
    ((tcp_xport *)x)->recv_deadline_ms = deadline_ms;
}

static void tcp_set_send_deadline(xport *x, uint64_t deadline_ms)
{
    ((tcp_xport *)x)->send_deadline_ms = deadline_ms;
}

static int tcp_poll_fd(xport *x)
{
    return ((tcp_xport *)x)->fd;
}

static void tcp_shutdown(xport *x)
{
    tcp_xport *t = (tcp_xport *)x;

    (void)shutdown(t->fd, SHUT_RDWR);
}

/* POLLRDHUP: the peer's FIN has been received (queued data may remain);
 * POLLHUP/POLLERR: reset or fully closed. */
static bool tcp_peer_closed(xport *x)
{
    tcp_xport *t = (tcp_xport *)x;
    struct pollfd p = { .fd = t->fd, .events = POLLRDHUP };

    return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

static void tcp_close(xport *x)
{
    tcp_xport *t = (tcp_xport *)x;

    if (!t)
        return;
    close(t->fd);
    free(t);
}

static const struct xport_ops tcp_ops = {
    .sendv = tcp_sendv,
    .recv_all = tcp_recv_all,
    .shutdown = tcp_shutdown,
    .set_recv_deadline = tcp_set_recv_deadline,
    .set_send_deadline = tcp_set_send_deadline,
    .poll_fd = tcp_poll_fd,
    .peer_closed = tcp_peer_closed,
    .close = tcp_close,
};

static int tcp_wrap(int fd, const struct sockaddr *peer, xport **out)
{
    tcp_xport *t = calloc(1, sizeof(*t));

    if (!t)
        return -ENOMEM;
    t->base.ops = &tcp_ops;
    t->fd = fd;
    xport_format_sockaddr(peer, t->base.peer, sizeof(t->base.peer));
    *out = &t->base;
    return 0;
}

/* ------------------------------------------------------------ listener */

static int tcp_accept(xport_listener *l, xport **out)
{
    tcp_listener *tl = (tcp_listener *)l;

    for (;;) {
        struct pollfd pfd[2] = {
            {.fd = tl->fd, .events = POLLIN},
            {.fd = tl->wake_pipe[0], .events = POLLIN},
        };
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int fd, rc;

        if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (pfd[1].revents)
            return -ECANCELED;
        fd = accept4(tl->fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED)
                continue;
            return -errno;
        }
        if (set_nonblock(fd, 0) < 0) { /* listener is non-blocking */
            close(fd);
            continue;
        }
        tcp_tune(fd);
        rc = tcp_wrap(fd, (struct sockaddr *)&ss, out);
        if (rc < 0)
            close(fd);
        return rc;
    }
}

static void tcp_listener_shutdown(xport_listener *l)
{
    tcp_listener *tl = (tcp_listener *)l;
    char b = 1;

    while (write(tl->wake_pipe[1], &b, 1) < 0 && errno == EINTR)
        ;
}

static void tcp_listener_close(xport_listener *l)
{
    tcp_listener *tl = (tcp_listener *)l;

    if (!tl)
        return;
    close(tl->fd);
    close(tl->wake_pipe[0]);
    close(tl->wake_pipe[1]);
    free(tl);
}

static int tcp_listener_port(const xport_listener *l)
{
    const tcp_listener *tl = (const tcp_listener *)l;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);

    if (getsockname(tl->fd, (struct sockaddr *)&ss, &sl) < 0)
        return -errno;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static const struct xport_listener_ops tcp_listener_ops = {
    .accept = tcp_accept,
    .shutdown = tcp_listener_shutdown,
    .close = tcp_listener_close,
    .port = tcp_listener_port,
};

static int tcp_bind_one(const struct addrinfo *ai)
{
    int one = 1, bytes = TCP_SOCKBUF_BYTES;
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    ai->ai_protocol);

    if (fd < 0)
        return -errno;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    /* accepted sockets inherit the buffer sizes, set before listen */
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, TCP_LISTEN_BACKLOG) < 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    return fd;
}

int xport_tcp_listen(const char *addr, xport_listener **out)
{
    struct addrinfo *res = NULL;
    tcp_listener *tl = NULL;
    int rc, fd = -EADDRNOTAVAIL;

    rc = tcp_resolve(addr, 1, &res);
    if (rc < 0)
        return rc;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = tcp_bind_one(ai);
        if (fd >= 0)
            break;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        log_err("tcp: cannot listen on %s: %s", addr, strerror(-fd));
        return fd;
    }
    tl = calloc(1, sizeof(*tl));
    if (!tl) {
        rc = -ENOMEM;
        goto out_fd;
    }
    if (pipe2(tl->wake_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        rc = -errno;
        goto out_free;
    }
    tl->base.ops = &tcp_listener_ops;
    tl->fd = fd;
    *out = &tl->base;
    return 0;
out_free:
    free(tl);
out_fd:
    close(fd);
    return rc;
}

/* ------------------------------------------------------------- connect */

/* Non-blocking connect bounded by deadline_ms (monotonic); fd or -errno. */
static int tcp_connect_one(const struct addrinfo *ai, long long deadline_ms)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    ai->ai_protocol);
    int rc = 0;

    if (fd < 0)
        return -errno;
    tcp_tune(fd);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        if (errno != EINPROGRESS) {
            rc = -errno;
            goto fail;
        }
        for (;;) {
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            long long left_ms = deadline_ms - (long long)clock_now_ms();
            int err = 0;
            socklen_t el = sizeof(err);
            int n;

            if (left_ms <= 0) {
                rc = -ETIMEDOUT;
                goto fail;
            }
            n = poll(&pfd, 1, left_ms > INT_MAX ? INT_MAX : (int)left_ms);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                rc = -errno;
                goto fail;
            }
            if (n == 0)
                continue;
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
                err = errno;
            if (err) {
                rc = -err;
                goto fail;
            }
            break;
        }
    }
    rc = set_nonblock(fd, 0);
    if (rc < 0)
        goto fail;
    return fd;
fail:
    close(fd);
    return rc;
}

int xport_tcp_connect(const char *addr, int timeout_ms, xport **out)
{
    struct addrinfo *res = NULL;
    long long deadline_ms;
    int rc, fd = -EHOSTUNREACH;

    rc = tcp_resolve(addr, 0, &res);
    if (rc < 0)
        return rc;
    deadline_ms = (long long)clock_now_ms() + (timeout_ms > 0 ? timeout_ms : TCP_CONNECT_DEFAULT_TIMEOUT_MS);
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = tcp_connect_one(ai, deadline_ms);
        if (fd >= 0) {
            rc = tcp_wrap(fd, ai->ai_addr, out);
            if (rc < 0)
                close(fd);
            break;
        }
        if (fd == -ETIMEDOUT)
            break;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        log_debug("tcp: connect to %s failed: %s", addr, strerror(-fd));
        return fd;
    }
    return rc;
}
