/* transport.h - the byte-stream interface the RPC layer runs on.
 * Implementations: transport_tcp.c ("tcp", always) and transport_rdma.c
 * ("rdma", libibverbs/librdmacm; -ENODEV when no RDMA device exists).
 * Addresses are "HOST:PORT". Return convention: 0 or negative errno. */
#ifndef DEPFS_TRANSPORT_H
#define DEPFS_TRANSPORT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

typedef struct xport xport;
typedef struct xport_listener xport_listener;

struct xport_ops {
    /* Send every byte of iov[0..cnt) or fail. Safe to call from one thread
     * at a time (callers serialise). */
    int (*sendv)(xport *x, const struct iovec *iov, int cnt);
    /* Receive exactly len bytes; -ECONNRESET on orderly close. */
    int (*recv_all)(xport *x, void *buf, size_t len);
    /* Wake any thread blocked in recv_all/sendv with an error. */
    void (*shutdown)(xport *x);
    /* Optional (may be NULL = no deadlines): every later recv_all must
     * finish by deadline_ms, an instant of clock_now_ms(), or it fails
     * -ETIMEDOUT having taken part of the bytes (the stream is then of no
     * more use: close it). 0 = no deadline. Set by the one thread that
     * receives. */
    void (*set_recv_deadline)(xport *x, uint64_t deadline_ms);
    /* The same for every later sendv; set under the caller's send lock. */
    void (*set_send_deadline)(xport *x, uint64_t deadline_ms);
    /* Optional (may be NULL = none): a descriptor that polls readable
     * (POLLIN) when recv_all has bytes to return or the stream ended, for a
     * caller that waits on it together with other descriptors. */
    int (*poll_fd)(xport *x);
    /* Optional (may be NULL = never known): true once the peer has closed
     * or reset the connection, even while bytes it sent before that are
     * still unread. A server asks it before acting on a request: a client
     * closes a connection when it gives up on the server, so a request
     * still queued behind that close arrived too late to take effect. */
    bool (*peer_closed)(xport *x);
    void (*close)(xport *x); /* frees x */
};

#define XPORT_PEER_MAX 64

struct xport {
    const struct xport_ops *ops;
    char peer[XPORT_PEER_MAX]; /* "HOST:PORT" of the other side, for logs */
};

int xport_listen(const char *kind, const char *addr, xport_listener **out);
/* Blocks until a connection arrives or the listener is shut down (-ECANCELED). */
int xport_accept(xport_listener *l, xport **out);
void xport_listener_shutdown(xport_listener *l);
void xport_listener_close(xport_listener *l);
int xport_connect(const char *kind, const char *addr, int timeout_ms, xport **out);

/* true when the named transport can work on this machine (rdma: a device). */
int xport_available(const char *kind);

/* The HOST part of x->peer ("127.0.0.1", "[::1]"): which machine a
 * connection comes from, whatever its port. */
void xport_peer_host(const xport *x, char out[XPORT_PEER_MAX]);

/* Split "HOST:PORT"; -EINVAL with nothing written on junk. */
int xport_split_addr(const char *addr, char *host, size_t host_len, unsigned *port);

/* The local port a listener is bound to (useful after listening on port 0),
 * or a negative errno. */
int xport_listener_port(const xport_listener *l);

/* ------------------------------------------------ for implementations only
 * transport.c dispatches on the kind to these; callers use the functions
 * above. Every listener starts with its ops table. */
struct xport_listener_ops {
    int (*accept)(xport_listener *l, xport **out);
    void (*shutdown)(xport_listener *l);
    void (*close)(xport_listener *l); /* frees l */
    int (*port)(const xport_listener *l);
};

struct xport_listener {
    const struct xport_listener_ops *ops;
};

int xport_tcp_listen(const char *addr, xport_listener **out);
int xport_tcp_connect(const char *addr, int timeout_ms, xport **out);
int xport_rdma_available(void);
int xport_rdma_listen(const char *addr, xport_listener **out);
int xport_rdma_connect(const char *addr, int timeout_ms, xport **out);
/* Formats a socket address as "HOST:PORT" ("[v6]:PORT") into out. */
struct sockaddr;
void xport_format_sockaddr(const struct sockaddr *sa, char *out, size_t out_len);

#endif
