/* fault.c - the armed fault points of a test build (fault.h). Parsed once
 * from DEPFS_FAULTS; the counters are atomic, so any thread may hit. */
#include "fault.h"

#ifdef DEPFS_TEST_HOOKS
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define FAULT_SPEC_MAX 1024u
#define FAULT_EVERY (-1L)

static const char *const fault_names[FAULT_POINTS] = {
    [FAULT_STRIP_PWRITE_ENOSPC] = "strip_pwrite_enospc",
    [FAULT_STRIP_PWRITE_EIO] = "strip_pwrite_eio",
    [FAULT_STRIP_PREAD_EIO] = "strip_pread_eio",
    [FAULT_KV_SYNC_EIO] = "kv_sync_eio",
    [FAULT_XPORT_FLIP_BIT] = "xport_flip_bit",
    [FAULT_STRIP_NO_CHECKSUMS] = "strip_no_checksums",
    [FAULT_WRITE_MEM_FLIP] = "write_mem_flip",
    [FAULT_WRITE_UNANSWERED] = "write_unanswered",
    [FAULT_DECIDE_LAG] = "decide_lag",
};
_Static_assert(sizeof(fault_names) / sizeof(fault_names[0]) == FAULT_POINTS,
               "every fault point has a name");

static atomic_long fault_left[FAULT_POINTS]; /* 0 disarmed, FAULT_EVERY always */
static pthread_once_t fault_once = PTHREAD_ONCE_INIT;

static void fault_arm_one(const char *item)
{
    const char *eq = strchr(item, '=');
    size_t len = eq ? (size_t)(eq - item) : strlen(item);
    for (int p = 0; p < FAULT_POINTS; p++) {
        if (strlen(fault_names[p]) != len || strncmp(item, fault_names[p], len) != 0)
            continue;
        long n = eq ? strtol(eq + 1, NULL, 10) : FAULT_EVERY;
        atomic_store(&fault_left[p], n > 0 ? n : FAULT_EVERY);
        log_warn("fault point %s armed (%s): TEST ONLY", fault_names[p], eq ? eq + 1 : "always");
        return;
    }
    log_warn("DEPFS_FAULTS: unknown fault point '%.*s' ignored", (int)len, item);
}

static void fault_read_env(void)
{
    const char *spec = getenv("DEPFS_FAULTS");
    if (spec == NULL || spec[0] == '\0')
        return;
    char buf[FAULT_SPEC_MAX];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save))
        fault_arm_one(item);
}

bool fault_hit(fault_point p)
{
    pthread_once(&fault_once, fault_read_env);
    long left = atomic_load(&fault_left[p]);
    while (left != 0) {
        long next = left == FAULT_EVERY ? FAULT_EVERY : left - 1;
        if (atomic_compare_exchange_weak(&fault_left[p], &left, next)) {
            log_warn("fault point %s fires", fault_names[p]);
            return true;
        }
    }
    return false;
}
#endif
