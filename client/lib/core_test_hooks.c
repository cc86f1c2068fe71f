/* core_test_hooks.c - TEST ONLY switches of the libdepfs data path, read once
 * per process from the environment (at the first mount/write):
 *
 *   DEPFS_TEST_NO_LOCKS=1   writes take NO stripe locks: no lock specs on
 *                           pre-reads/writes, no IO_LOCK/IO_UNLOCK. Parity
 *                           then goes wrong under concurrent partial-stripe
 *                           writers; tests/integration/test_concurrent_writers.sh
 *                           uses it to prove that the locks are what keeps
 *                           parity right. Degraded (decoding) reads take
 *                           none either, so they can mix units from before
 *                           and after a write: test_degraded_read_race.sh
 *                           proves its reader would catch that. NEVER set it
 *                           on real data.
 *   DEPFS_TEST_PAUSE=NAME   a client reaching point NAME prints
 *                           "DEPFS_TEST_PAUSE reached: NAME pid=PID" to stderr
 *                           and sleeps DC_TEST_PAUSE_S seconds (tests kill or
 *                           stop it there: a client dying mid-protocol):
 *                             after_lock      phase 1 (locks + pre-reads) done,
 *                                             no phase-2 write sent yet;
 *                             between_writes  phase-2 write to the first server
 *                                             done, the others not yet sent;
 *                             before_dirty    a phase-2 write failed on a server
 *                                             that could not store its unit; the
 *                                             others not yet told to record it
 *                                             dirty (its lock still held);
 *                             degraded_locked a decoding reader holds the stripe
 *                                             locks of its units, read, not yet
 *                                             decoded or released;
 *                             rebuild_held    a rebuild of a file holds it open
 *                                             at the MDS and knows its layout,
 *                                             no batch started yet;
 *                             orphan_write    an orphan lock's repair has read
 *                                             and recomputed a batch's units in
 *                                             doubt, their writes not yet sent;
 *                             before_release  a last close here has dropped
 *                                             the file's inode, its hold not
 *                                             yet given back (MDS_RELEASE).
 *   DEPFS_TEST_PAUSE_MS=N   the pause lasts N ms instead (then the writer
 *                           goes on: a slow writer rather than a dead one).
 * These exist only in test builds (make hooks: -DDEPFS_TEST_HOOKS, in
 * BUILD/hooks); the library users run ignores them with a warning.
 *   DEPFS_WRITE_BEHIND=0    no write-behind buffering (benchmarks' "before").
 *   DEPFS_READ_AHEAD=0      no client read-ahead (benchmarks' "before").
 *
 * Unset or any other value: normal behaviour. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core.h"
#include "log.h"

#define DC_TEST_PAUSE_S 600u

static pthread_once_t dc_hooks_once = PTHREAD_ONCE_INIT;
static dc_test_hooks dc_hooks;

static bool dc_env_is(const char *name, const char *value)
{
    const char *v = getenv(name);
    return v != NULL && strcmp(v, value) == 0;
}

static void dc_test_hooks_read(void)
{
    dc_hooks.write_behind_off = dc_env_is("DEPFS_WRITE_BEHIND", "0");
    dc_hooks.read_ahead_off = dc_env_is("DEPFS_READ_AHEAD", "0");
#ifdef DEPFS_TEST_HOOKS
    dc_hooks.no_locks = dc_env_is("DEPFS_TEST_NO_LOCKS", "1");
    if (dc_env_is("DEPFS_TEST_PAUSE", "after_lock"))
        dc_hooks.pause = DC_PAUSE_AFTER_LOCK;
    else if (dc_env_is("DEPFS_TEST_PAUSE", "between_writes"))
        dc_hooks.pause = DC_PAUSE_BETWEEN_WRITES;
    else if (dc_env_is("DEPFS_TEST_PAUSE", "before_dirty"))
        dc_hooks.pause = DC_PAUSE_BEFORE_DIRTY;
    else if (dc_env_is("DEPFS_TEST_PAUSE", "degraded_locked"))
        dc_hooks.pause = DC_PAUSE_DEGRADED_LOCKED;
    else if (dc_env_is("DEPFS_TEST_PAUSE", "rebuild_held"))
        dc_hooks.pause = DC_PAUSE_REBUILD_HELD;
    else if (dc_env_is("DEPFS_TEST_PAUSE", "orphan_write"))
        dc_hooks.pause = DC_PAUSE_ORPHAN_WRITE;
    else if (dc_env_is("DEPFS_TEST_PAUSE", "before_release"))
        dc_hooks.pause = DC_PAUSE_BEFORE_RELEASE;
    else
        dc_hooks.pause = DC_PAUSE_NONE;
    const char *ms = getenv("DEPFS_TEST_PAUSE_MS");
    dc_hooks.pause_ms = ms != NULL && *ms != '\0' ? strtoull(ms, NULL, 10)
                                                   : DC_TEST_PAUSE_S * 1000ull;
#else
    if (getenv("DEPFS_TEST_NO_LOCKS") != NULL || getenv("DEPFS_TEST_PAUSE") != NULL)
        log_warn("DEPFS_TEST_NO_LOCKS/DEPFS_TEST_PAUSE ignored: test-only switches are "
                 "compiled only into test builds (make hooks)");
#endif
    if (dc_hooks.no_locks)
        log_warn("DEPFS_TEST_NO_LOCKS=1: TEST ONLY, writes take no stripe locks; parity "
                 "will be wrong under concurrent writers");
    if (dc_hooks.pause != DC_PAUSE_NONE)
        log_warn("DEPFS_TEST_PAUSE=%s: TEST ONLY, writers stop mid-protocol",
                 getenv("DEPFS_TEST_PAUSE"));
}

const dc_test_hooks *dc_test_hooks_get(void)
{
    pthread_once(&dc_hooks_once, dc_test_hooks_read);
    return &dc_hooks;
}

static const char *dc_pause_name(dc_pause_point p)
{
    switch (p) {
    case DC_PAUSE_AFTER_LOCK: return "after_lock";
    case DC_PAUSE_BETWEEN_WRITES: return "between_writes";
    case DC_PAUSE_BEFORE_DIRTY: return "before_dirty";
    case DC_PAUSE_DEGRADED_LOCKED: return "degraded_locked";
    case DC_PAUSE_REBUILD_HELD: return "rebuild_held";
    case DC_PAUSE_ORPHAN_WRITE: return "orphan_write";
    case DC_PAUSE_BEFORE_RELEASE: return "before_release";
    default: return "none";
    }
}

void dc_test_pause(dc_pause_point p)
{
    if (p == DC_PAUSE_NONE || dc_test_hooks_get()->pause != p)
        return;
    fprintf(stderr, "DEPFS_TEST_PAUSE reached: %s pid=%ld\n", dc_pause_name(p), (long)getpid());
    fflush(stderr);
    uint64_t ms = dc_test_hooks_get()->pause_ms;
    struct timespec left = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&left, &left) != 0)
        ; /* a signal with a handler: keep sleeping the rest */
}
