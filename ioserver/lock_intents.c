/* lock_intents.c - the lock table's journal into the state store (see
 * lock_intents.h). A failed write of an intent is logged and returned: the
 * lock is not granted, or the write under it refused (locks.h), and the
 * server demotes itself, since the writer goes on without it and its units
 * of that stripe go stale; a failed removal leaves an intent that
 * depfs-recovery releases after a restart. */
#include "lock_intents.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "log.h"

typedef struct restore_ctx {
    ios_locks *t;
    uint64_t taken_ms;
    int err;
} restore_ctx;

static void restore_one(void *arg, uint64_t file_id, uint64_t client, uint64_t op,
                        uint64_t first, uint64_t end, bool writes)
{
    restore_ctx *r = arg;
    ios_lock_owner owner = { .client = client, .op = op };
    int rc = ios_locks_restore(r->t, file_id, first, end - first, owner, writes, r->taken_ms);
    if (rc && r->err == 0)
        r->err = rc;
    log_info("lock intent of client %" PRIu64 " op %" PRIu64 " on file %016" PRIx64
             " stripes [%" PRIu64 ",%" PRIu64 ") (%s) left by a crash: held until repaired%s",
             client, op, file_id, first, end, writes ? "to write" : "to read",
             rc ? " (could not restore it!)" : "");
}

int ios_lock_intents_restore(ios_locks *t, ios_state *st, uint64_t now_ms, uint64_t lease_ms)
{
    restore_ctx r = { .t = t, .taken_ms = now_ms > lease_ms ? now_ms - lease_ms : 0 };
    int n = ios_intent_each(st, restore_one, &r);
    if (n < 0)
        return n;
    return r.err ? r.err : n;
}

static int journal(void *arg, uint64_t file_id, ios_lock_owner owner, bool held, uint64_t first,
                   uint64_t end, bool writes)
{
    ios_state *st = arg;
    int rc = ios_intent_set(st, file_id, owner.client, owner.op, held, first, end, writes);
    if (rc == 0)
        return 0;
    log_warn("cannot store the lock intent of client %" PRIu64 " op %" PRIu64
             " on file %016" PRIx64 ": %s%s", owner.client, owner.op, file_id, strerror(-rc),
             held ? " (the lock or write is refused)" : "");
    /* a writer refused here writes on degraded: this server's units of the
     * stripe go stale, so it must not serve them (a late UP would) */
    if (held && ios_state_demote_self(st) == 1)
        log_warn("lock intents cannot be stored: no reads until depfs-recovery rejoins this "
                 "server (REBUILDING)");
    return rc;
}

void ios_lock_intents_attach(ios_locks *t, ios_state *st)
{
    ios_locks_set_journal(t, journal, st);
}
