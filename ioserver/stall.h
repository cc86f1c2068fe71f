/* stall.h - the ioserver notices when it has not run for a while (SIGSTOP,
 * a paused VM, a machine that froze): clients may have given up on it and
 * written around it meanwhile, so its units cannot be trusted any more. A
 * stalled server that was UP demotes itself to REBUILDING before it acts on
 * any request (so it serves no client read), tells depfs-recovery so in its
 * heartbeat replies (IoReply.stalled), and is rejoined like any returning
 * server (recovery/README.md "Stalled servers").
 *
 * A ticker thread notes the monotonic time every IOS_STALL_TICK_MS; a gap
 * longer than the stall bound, seen by the ticker or by a request arriving
 * before the ticker ran again, is a stall. */
#ifndef DEPFS_IOS_STALL_H
#define DEPFS_IOS_STALL_H
#include <stdint.h>

#include "state.h"

#define IOS_STALL_TICK_MS 100u

typedef struct ios_stall ios_stall;

/* Starts the ticker; stall_ms is the gap that counts as a stall (below the
 * time a client needs to give up on a server: two request timeouts). */
int ios_stall_start(ios_state *st, uint32_t server_id, uint64_t stall_ms, ios_stall **out);
/* Called before each request is acted on. */
void ios_stall_check(ios_stall *w);
void ios_stall_stop(ios_stall *w);

#endif
