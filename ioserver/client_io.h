/* client_io.h - when this I/O server last began client I/O: a READ or
 * WRITE not marked background (IoRequest.background: recovery's rebuilds).
 * Background work yields to it: the server's own scrub waits on it
 * (scrubber.h), and recovery's background requests are told how long ago
 * it was (IoReply.client_io_idle_ms) and pace themselves by it
 * (client/lib/core_pace.h). */
#ifndef DEPFS_IOS_CLIENT_IO_H
#define DEPFS_IOS_CLIENT_IO_H
#include <stdatomic.h>
#include <stdint.h>

typedef struct ios_client_io {
    atomic_uint_fast64_t last_ms; /* clock_now_ms() of the last one; 0: none yet */
} ios_client_io;

void ios_client_io_init(ios_client_io *io);
/* A client READ or WRITE begins now. */
void ios_client_io_note(ios_client_io *io);
/* Milliseconds since the last one (UINT64_MAX: none since the start). */
uint64_t ios_client_io_idle_ms(ios_client_io *io);

#endif
