/* unstored.h - the units this server failed to store while their writer
 * held the stripes (recovery/README.md "Interrupted writes").
 *
 * A server that fails to store a unit demotes itself to REBUILDING, and the
 * writer records it dirty for the file on the other servers before it
 * releases its lock here. A rejoin that ran in between saw no record and
 * would set the server UP with the unit stale; the writer's late record is
 * then refused for its stale plan, and the writer keeps its lock here
 * until the orphan repair: meanwhile readers would take the stale unit. So
 * every failed store under a lock is noted with that lock's owner and
 * range, and the server refuses to be set UP while any such owner still
 * holds a stripe of its range: once the lock is gone the record exists,
 * or the orphan repair that took the lock over has rewritten the unit or
 * recorded it dirty, and the next rejoin rebuilds what it must. */
#ifndef DEPFS_IOS_UNSTORED_H
#define DEPFS_IOS_UNSTORED_H
#include <stddef.h>
#include <stdint.h>

#include "locks.h"

#define IOS_UNSTORED_MAX 1024u /* notes kept; beyond: see ios_unstored_pending */

typedef struct ios_unstored ios_unstored;

int ios_unstored_create(ios_unstored **out);
void ios_unstored_free(ios_unstored *u);
/* A store of file_id failed under owner's lock on [first, first+count). */
void ios_unstored_note(ios_unstored *u, uint64_t file_id, uint64_t first, uint64_t count,
                       ios_lock_owner owner);
/* How many notes are still pending (their owner holds a stripe of their
 * range in `locks`); the others are dropped. After more than
 * IOS_UNSTORED_MAX notes at once, at least 1 until the lock table is empty. */
size_t ios_unstored_pending(ios_unstored *u, ios_locks *locks);

#endif
