/* lock_intents.h - the stripe-lock table's durable shadow. Every change of
 * what an owner holds is written to the state store as a lock intent
 * (state.h); at startup the intents left by a crash are loaded back as
 * locks already past their lease, so the heartbeat reports them at once
 * and depfs-recovery repairs the stripes an interrupted write left in doubt
 * (recovery/README.md "Interrupted writes"). */
#ifndef DEPFS_IOS_LOCK_INTENTS_H
#define DEPFS_IOS_LOCK_INTENTS_H
#include <stdint.h>

#include "locks.h"
#include "state.h"

/* Loads the stored intents into the (empty) table as locks taken at
 * now_ms - lease_ms; returns how many, or a negative errno. */
int ios_lock_intents_restore(ios_locks *t, ios_state *st, uint64_t now_ms, uint64_t lease_ms);
/* From now on every change of the table is written to st. */
void ios_lock_intents_attach(ios_locks *t, ios_state *st);

#endif
