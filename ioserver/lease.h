/* lease.h - the ioserver's recovery lease: a server cut off by the network
 * keeps running and still calls itself UP, while clients write around it
 * and depfs-recovery declares it down; the moment the link comes back a
 * client with an equally old picture would read its stale units. So once
 * depfs-recovery has been heard (IO_HEARTBEAT, IO_SET_STATE), a server that
 * hears nothing from it for longer than the lease (one request timeout)
 * asks the MDS itself: still UP at the cluster epoch it knows -> renewed;
 * anything else, or no answer -> it demotes itself to REBUILDING like a
 * stalled server (stall.h) and is rejoined when it is reached again
 * (recovery/README.md "Stalled and cut-off servers"). A server never
 * heard by depfs-recovery (none runs) holds no lease.
 * A server that starts with the state UP stored (a crash, then a start
 * without --rebuild: an admin's, or systemd's Restart=on-failure) may have
 * been declared down and written around while it was away, and clients
 * that never saw it fail would read its old units: it asks the MDS the
 * same question before it serves anyone (ios_lease_confirm_start). */
#ifndef DEPFS_IOS_LEASE_H
#define DEPFS_IOS_LEASE_H
#include <stdint.h>

#include "config.h"
#include "state.h"

#define IOS_LEASE_TICK_MS 100u

typedef struct ios_lease ios_lease;

int ios_lease_start(ios_state *st, uint32_t server_id, const depfs_config *cfg,
                    ios_lease **out);
/* Before the server serves: when its stored state is UP, the MDS must
 * confirm it UP at the cluster epoch it knows (asked for up to one lease,
 * while the MDS cannot be reached); else it demotes itself to REBUILDING,
 * and depfs-recovery's rejoin rebuilds what it missed. 0, or the error
 * storing the demotion. */
int ios_lease_confirm_start(ios_lease *l);
/* depfs-recovery spoke to this server (heartbeat or state push). */
void ios_lease_renew(ios_lease *l);
void ios_lease_stop(ios_lease *l);

#endif
