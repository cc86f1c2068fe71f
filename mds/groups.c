/* groups.c - NSS group lists of MUNGE users, cached (groups.h). */
#include "groups.h"

#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdbool.h>
#include <string.h>
#include <sys/types.h>

#include "clock.h"
#include "log.h"

/* getpwuid_r's buffer: names, home and shell of one passwd entry. */
#define GROUPS_PW_BUF_BYTES 16384u

typedef struct groups_slot {
    bool used;
    uint32_t uid, gid;
    uint64_t fetched_ms;
    unsigned n;
    uint32_t groups[MDS_GROUPS_MAX];
} groups_slot;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static groups_slot cache[MDS_GROUPS_SLOTS];

/* Asks NSS (no lock held: it may be slow, e.g. LDAP). */
static void groups_fetch(uint32_t uid, uint32_t gid, uint32_t out[MDS_GROUPS_MAX], unsigned *n)
{
    char buf[GROUPS_PW_BUF_BYTES];
    struct passwd pw, *res = NULL;
    gid_t g[MDS_GROUPS_MAX];
    int ng = (int)MDS_GROUPS_MAX;

    out[0] = gid;
    *n = 1;
    if (getpwuid_r((uid_t)uid, &pw, buf, sizeof(buf), &res) != 0 || !res)
        return; /* unknown to NSS: the proven gid only */
    if (getgrouplist(pw.pw_name, (gid_t)gid, g, &ng) < 0) {
        log_warn("user %s (uid %u) is in more than %u groups: permission checks use the first %u",
                 pw.pw_name, uid, MDS_GROUPS_MAX, MDS_GROUPS_MAX);
        ng = (int)MDS_GROUPS_MAX;
    }
    for (int i = 0; i < ng && i < (int)MDS_GROUPS_MAX; i++)
        out[i] = (uint32_t)g[i];
    *n = ng > 0 ? (unsigned)ng : 1;
}

/* The slot of (uid, gid) if cached and fresh, else NULL. Caller holds the lock. */
static groups_slot *slot_find(uint32_t uid, uint32_t gid, uint64_t now_ms)
{
    for (unsigned i = 0; i < MDS_GROUPS_SLOTS; i++) {
        groups_slot *s = &cache[i];
        if (s->used && s->uid == uid && s->gid == gid && now_ms - s->fetched_ms < MDS_GROUPS_TTL_MS)
            return s;
    }
    return NULL;
}

/* A free, stale or else the oldest slot. Caller holds the lock. */
static groups_slot *slot_victim(uint32_t uid, uint32_t gid)
{
    groups_slot *old = &cache[0];
    for (unsigned i = 0; i < MDS_GROUPS_SLOTS; i++) {
        groups_slot *s = &cache[i];
        if (!s->used || (s->uid == uid && s->gid == gid))
            return s;
        if (s->fetched_ms < old->fetched_ms)
            old = s;
    }
    return old;
}

void mds_groups_of(uint32_t uid, uint32_t gid, uint32_t out[MDS_GROUPS_MAX], unsigned *n)
{
    uint64_t now_ms = clock_now_ms();
    pthread_mutex_lock(&cache_lock);
    groups_slot *s = slot_find(uid, gid, now_ms);
    if (s) {
        *n = s->n;
        memcpy(out, s->groups, sizeof(s->groups[0]) * s->n);
    }
    pthread_mutex_unlock(&cache_lock);
    if (s)
        return;

    groups_fetch(uid, gid, out, n);
    pthread_mutex_lock(&cache_lock);
    s = slot_victim(uid, gid);
    *s = (groups_slot){ .used = true, .uid = uid, .gid = gid, .fetched_ms = now_ms, .n = *n };
    memcpy(s->groups, out, sizeof(out[0]) * *n);
    pthread_mutex_unlock(&cache_lock);
}

void mds_groups_flush(void)
{
    pthread_mutex_lock(&cache_lock);
    memset(cache, 0, sizeof(cache));
    pthread_mutex_unlock(&cache_lock);
}
