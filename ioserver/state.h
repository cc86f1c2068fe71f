/* state.h - the ioserver's own durable state in LevelDB (DATADIR/state):
 * its ServerState (UP / REBUILDING / RECONSTRUCTING), the newest cluster
 * epoch pushed to it (recovery/README.md "epochs"), and the dirty log, "file F changed while
 * server S was down" records, one key per (S, F), and the lock intents of
 * the stripe-lock table. Every mutation but the lock intents is synced
 * before it returns. Thread-safe. Return convention: 0 or negative errno. */
#ifndef DEPFS_IOS_STATE_H
#define DEPFS_IOS_STATE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IOS_STATE_SUBDIR "state"

typedef struct ios_state ios_state;

/* Opens (creating) DATADIR/state. A fresh store starts as SERVER_UP. */
int ios_state_open(const char *data_dir, ios_state **out, char *err, size_t err_len);
void ios_state_close(ios_state *st);

/* depfs ServerState value (DEPFS__SERVER_STATE__*). */
uint32_t ios_state_get(ios_state *st);
int ios_state_set(ios_state *st, uint32_t server_state);
/* The server can no longer vouch for its units (a stall, stall.h; a lost
 * lease, lease.h; a unit it failed to store): UP becomes REBUILDING at
 * once in memory, and durably (the store, or when the store fails, as on a
 * full disk, a marker file its next start reads), and the server counts as
 * demoted by itself (IoReply.stalled) until a state is set again. 1 when it
 * was demoted, 0 when it was not UP. */
int ios_state_demote_self(ios_state *st);
bool ios_state_stalled(ios_state *st);
/* true for the states in which client reads are refused. */
bool ios_state_refuses_reads(uint32_t server_state);

/* The newest cluster epoch this server knows (0 on a fresh store). */
uint64_t ios_state_epoch(ios_state *st);
/* epoch = max(epoch, e), durably; *now (if non-NULL) gets the result. */
int ios_state_raise_epoch(ios_state *st, uint64_t e, uint64_t *now);

/* Records (servers[i], file_id) for every i, durably, in one batch. */
int ios_dirty_add(ios_state *st, const uint32_t *servers, size_t n_servers, uint64_t file_id);
/* Lists file ids recorded for server, ascending, starting at file id
 * `from`; at most max into out. *more is true when ids remain after the
 * last one returned. */
int ios_dirty_list(ios_state *st, uint32_t server, uint64_t from, uint64_t *out, size_t max,
                   size_t *n_out, bool *more);
/* Claims the (server, file_id) record for a rebuild of the file on server
 * (absent is fine: nothing to claim). A later ios_dirty_add unclaims it. */
int ios_dirty_claim(ios_state *st, uint32_t server, uint64_t file_id);
/* Deletes the (server, file_id) record if it is still claimed; *kept is
 * true when it was recorded again since the claim (it stays). Absent is
 * fine. */
int ios_dirty_clear(ios_state *st, uint32_t server, uint64_t file_id, bool *kept);
/* Which of servers[0..n) have a record for file_id (claimed or not): their
 * ids into out[] (room for n), the count in *n_out. */
int ios_dirty_probe(ios_state *st, uint64_t file_id, const uint32_t *servers, size_t n,
                    uint32_t *out, size_t *n_out);
/* Which servers have a record for file_id (claimed or not): their ids
 * into out[] (room for max; -EOVERFLOW when more are), the count in
 * *n_out. Costs nothing while no record exists. */
int ios_dirty_servers_of(ios_state *st, uint64_t file_id, uint32_t *out, size_t max,
                         size_t *n_out);

/* Lock intents (the lock journal of locks.h): owner (client, op) holds
 * stripes within [first, end) of file_id (held), to write them or only to
 * read them (writes), or nothing (!held). Written without a sync (they
 * outlive the process, like unsynced data). */
int ios_intent_set(ios_state *st, uint64_t file_id, uint64_t client, uint64_t op, bool held,
                   uint64_t first, uint64_t end, bool writes);
typedef void (*ios_intent_fn)(void *arg, uint64_t file_id, uint64_t client, uint64_t op,
                              uint64_t first, uint64_t end, bool writes);
/* Calls fn for every intent stored (at startup); returns how many, or <0. */
int ios_intent_each(ios_state *st, ios_intent_fn fn, void *arg);

#endif
