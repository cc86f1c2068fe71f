/* holds_journal.c - the holds table kept across MDS restarts
 * (holds_journal.h): the start's decision, loading the journal, and the
 * journal callbacks that write the table's holds to the namespace store. */
#include "holds_journal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "log.h"

#define BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"
#define JOURNAL_FAIL_LOG_PERIOD_MS 60000u

void mds_boot_id(char *out)
{
    out[0] = '\0';
#ifdef DEPFS_TEST_HOOKS
    const char *test = getenv("DEPFS_TEST_BOOT_ID");
    if (test && strlen(test) <= MDS_BOOT_ID_MAX) {
        strcpy(out, test);
        log_warn("TEST ONLY: kernel boot id taken as '%s' (DEPFS_TEST_BOOT_ID)", out);
        return;
    }
#endif
    FILE *f = fopen(BOOT_ID_PATH, "r");
    if (!f) {
        log_warn("cannot read %s: after a crash unlinked files wait a capability's life", BOOT_ID_PATH);
        return;
    }
    if (!fgets(out, MDS_BOOT_ID_MAX + 1, f))
        out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

static dlog_limit fail_log = DLOG_LIMIT_INIT(1, JOURNAL_FAIL_LOG_PERIOD_MS);

static int journal_put(void *arg, uint64_t ino, uint64_t client, uint64_t until_s, bool writer)
{
    int rc = mds_ns_hold_put(arg, ino, client, until_s, writer);
    if (rc < 0)
        dlog_limited(&fail_log, DLOG_ERR, "cannot journal the hold of inode %llu by client %llu: "
                     "%s (the open is refused)", (unsigned long long)ino, (unsigned long long)client,
                     strerror(-rc));
    return rc;
}

static int journal_put_floor(void *arg, uint64_t until_s)
{
    int rc = mds_ns_hold_put_floor(arg, until_s);
    if (rc < 0)
        dlog_limited(&fail_log, DLOG_ERR, "cannot journal the holds floor: %s (the open is refused)",
                     strerror(-rc));
    return rc;
}

static void journal_drop(void *arg, uint64_t ino, uint64_t client)
{
    if (mds_ns_hold_drop(arg, ino, client) < 0)
        dlog_limited(&fail_log, DLOG_WARN, "cannot drop the journalled hold of inode %llu by client "
                     "%llu: it holds the file until it expires", (unsigned long long)ino,
                     (unsigned long long)client);
}

typedef struct loading {
    mds_holds *h;
    uint64_t now_s;
} loading;

/* A journalled hold back into the table (no journal yet: no write). */
static void load_one(void *arg, uint64_t ino, uint64_t client, uint64_t until_s, bool writer)
{
    loading *l = arg;
    if (mds_holds_note(l->h, ino, client, until_s, false, 0, l->now_s, NULL) == 0 && writer)
        mds_holds_mark_writer(l->h, ino, client, l->now_s);
}

/* The start floor (holds_journal.h). */
static uint64_t start_floor(const mds_holds_prev *prev, uint64_t now_s, const char **why)
{
    if (prev->journalled && (prev->clean || prev->same_boot)) {
        *why = prev->clean ? "stopped cleanly, every hold journalled"
                           : "its process crashed, every hold journalled";
        return prev->floor_s;
    }
    if (prev->clean) {
        *why = prev->until_s ? "stopped cleanly, before the holds journal"
                             : "a new namespace, or stopped cleanly holding nothing";
        return prev->until_s > prev->floor_s ? prev->until_s : prev->floor_s;
    }
    *why = prev->journalled ? "crashed under another kernel boot: its journal may have lost holds"
                            : "crashed before the holds journal";
    return now_s + AUTH_CAP_TTL_S;
}

int mds_holds_open(mds_ns *ns, const char *boot_id, uint64_t now_s, mds_holds **out, char *why)
{
    mds_holds_prev prev;
    mds_holds *h = NULL;
    const char *how;
    unsigned loaded, dropped;
    int rc = mds_ns_holds_begin(ns, boot_id, &prev, why);
    if (rc < 0)
        return rc;
    uint64_t floor_s = start_floor(&prev, now_s, &how);
    rc = mds_holds_new(MDS_HOLDS_MAX, AUTH_CAP_SKEW_S, floor_s, &h);
    if (rc < 0) {
        snprintf(why, MDS_WHY_MAX, "cannot allocate the holds table");
        return rc;
    }
    rc = mds_ns_holds_load(ns, now_s, AUTH_CAP_SKEW_S, load_one, &(loading){ h, now_s }, &loaded,
                           &dropped, why);
    /* more journalled holds than the table keeps raised its overflow floor
     * (holds.h): the floor record keeps that too */
    uint64_t record_s = floor_s;
    if (rc == 0 && mds_holds_count(h) >= MDS_HOLDS_MAX) {
        uint64_t until_s = mds_holds_until_max(h, now_s);
        record_s = until_s > record_s ? until_s : record_s;
    }
    if (rc == 0)
        rc = mds_ns_holds_commit_start(ns, boot_id, record_s, why);
    if (rc < 0) {
        mds_holds_free(h);
        return rc;
    }
    mds_holds_set_journal(h, &(mds_holds_journal){ .put = journal_put, .put_floor = journal_put_floor,
                                                   .drop = journal_drop, .arg = ns });
    log_info("holds of the previous run (%s): %u journalled ones kept, %u expired dropped; unlinked "
             "files are kept at least until %llu s since the epoch", how, loaded, dropped,
             (unsigned long long)floor_s);
    *out = h;
    return 0;
}
