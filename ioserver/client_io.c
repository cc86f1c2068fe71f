/* client_io.c - when client I/O last began (client_io.h). */
#include "client_io.h"

#include "clock.h"

void ios_client_io_init(ios_client_io *io)
{
    atomic_init(&io->last_ms, 0);
}

void ios_client_io_note(ios_client_io *io)
{
    uint64_t now = clock_now_ms();
    /* every request stores: a relaxed store per READ/WRITE, no contention
     * beyond the cache line */
    atomic_store_explicit(&io->last_ms, now ? now : 1, memory_order_relaxed);
}

uint64_t ios_client_io_idle_ms(ios_client_io *io)
{
    uint64_t last = atomic_load_explicit(&io->last_ms, memory_order_relaxed);
    if (last == 0)
        return UINT64_MAX;
    uint64_t now = clock_now_ms();
    return now > last ? now - last : 0;
}
