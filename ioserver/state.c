/* state.c - the ioserver's durable state (see state.h) over common/kvstore.
 *
 * Keys:
 *   "S"                       -> u32 little-endian ServerState
 *   "E"                       -> u64 little-endian cluster epoch
 *   "D" + be32(server) + be64(file) -> empty, or "C" once claimed (dirty record)
 *   "L" + be64(file) + be64(client) + be64(op) -> le64 first, le64 end, u8 mode
 *                              (lock intent: that owner holds stripes of
 *                              [first, end) of the file; mode 1: to write
 *                              them, 0: only to read them; an intent of
 *                              16 bytes, from before modes, writes)
 * Big-endian ids make LevelDB's byte order the numeric order, so a listing
 * walks one server's records in file id order. Dirty adds skip a put when
 * the record exists unclaimed (a get costs no fsync); the mutex orders add
 * against claim and clear, so a clear can never swallow a record added
 * after the claim. Lock intents are written without waiting for the disk:
 * they outlive a crash of the ioserver process (SIGKILL), as strip data
 * written without a sync does; a power loss may lose the newest of both. */
#include "state.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "depfs.pb-c.h"
#include "kvstore.h"
#include "log.h"

#define STATE_KEY "S"
#define EPOCH_KEY "E"
#define EPOCH_VALUE_BYTES 8u
#define DIRTY_PREFIX 'D'
#define DIRTY_KEY_BYTES 13u /* prefix + u32 + u64 */
#define DIRTY_SERVER_PREFIX_BYTES 5u
#define STATE_VALUE_BYTES 4u
#define STATE_DIR_MODE 0700
#define STATE_DEMOTED_MARKER "DEMOTED" /* in the state dir: see mark_demoted */
#define STATE_MARKER_MODE 0600
#define DIRTY_CLAIMED "C"
#define DIRTY_CLAIMED_BYTES 1u
#define DIRTY_TALLY_INITIAL 8u
#define INTENT_PREFIX 'L'
#define INTENT_KEY_BYTES 25u /* prefix + u64 file + u64 client + u64 op */
#define INTENT_SPAN_BYTES 16u  /* le64 first + le64 end: all an older intent holds */
#define INTENT_VALUE_BYTES 17u /* the span + u8 mode */
#define INTENT_MODE_WRITES 1u

/* How many dirty records name one server (in memory, counted at open). */
typedef struct dirty_tally {
    uint32_t server;
    uint64_t records;
} dirty_tally;

struct ios_state {
    kvstore *kv;
    dirty_tally *tally;    /* servers named by records (mu); entries never removed */
    size_t n_tally, cap_tally;
    _Atomic uint64_t dirty_records; /* sum of tally[].records: 0 skips every lookup */
    char demoted_marker[PATH_MAX]; /* exists: a demotion the store could not keep */
    pthread_mutex_t mu;
    uint32_t server_state; /* cached; written through */
    uint64_t epoch;        /* cached; written through */
    bool stalled;          /* demoted itself after a stall (stall.h) */
};

static void put_be32(uint8_t *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static uint64_t get_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

static void dirty_key(uint8_t key[DIRTY_KEY_BYTES], uint32_t server, uint64_t file_id)
{
    key[0] = DIRTY_PREFIX;
    put_be32(key + 1, server);
    put_be64(key + DIRTY_SERVER_PREFIX_BYTES, file_id);
}

static int load_epoch(ios_state *st)
{
    void *val = NULL;
    size_t vlen = 0;
    int rc = kv_get(st->kv, EPOCH_KEY, strlen(EPOCH_KEY), &val, &vlen);
    st->epoch = 0;
    if (rc == -ENOENT)
        return 0;
    if (rc)
        return rc;
    if (vlen != EPOCH_VALUE_BYTES) {
        free(val);
        return -EIO;
    }
    const uint8_t *p = val;
    for (int i = EPOCH_VALUE_BYTES - 1; i >= 0; i--)
        st->epoch = (st->epoch << 8) | p[i];
    free(val);
    return 0;
}

static int load_state(ios_state *st)
{
    int erc = load_epoch(st);
    if (erc)
        return erc;

    void *val = NULL;
    size_t vlen = 0;
    int rc = kv_get(st->kv, STATE_KEY, strlen(STATE_KEY), &val, &vlen);
    if (rc == -ENOENT) {
        st->server_state = DEPFS__SERVER_STATE__SERVER_UP;
        return 0;
    }
    if (rc)
        return rc;
    if (vlen != STATE_VALUE_BYTES) {
        free(val);
        return -EIO;
    }
    const uint8_t *p = val;
    st->server_state = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                       (uint32_t)p[3] << 24;
    free(val);
    if (st->server_state == DEPFS__SERVER_STATE__SERVER_DOWN ||
        st->server_state > DEPFS__SERVER_STATE__SERVER_RECONSTRUCTING)
        return -EIO; /* never stored by this module */
    return 0;
}

/* Caller holds mu (or owns st): the tally of server, created at 0. */
static dirty_tally *tally_of(ios_state *st, uint32_t server)
{
    for (size_t i = 0; i < st->n_tally; i++)
        if (st->tally[i].server == server)
            return &st->tally[i];
    if (st->n_tally == st->cap_tally) {
        size_t cap = st->cap_tally ? 2 * st->cap_tally : DIRTY_TALLY_INITIAL;
        dirty_tally *t = realloc(st->tally, cap * sizeof(*t));
        if (!t)
            return NULL;
        st->tally = t;
        st->cap_tally = cap;
    }
    st->tally[st->n_tally] = (dirty_tally){.server = server, .records = 0};
    return &st->tally[st->n_tally++];
}

/* At open: count the dirty records of every server. */
static int count_dirty(ios_state *st)
{
    uint8_t prefix[1] = {DIRTY_PREFIX};
    kv_iter *it = kv_iter_new(st->kv, prefix, sizeof(prefix), prefix, sizeof(prefix));
    if (!it)
        return -EIO;
    const void *key, *val;
    size_t klen, vlen;
    int rc = 0;
    while (rc == 0 && kv_iter_next(it, &key, &klen, &val, &vlen)) {
        if (klen != DIRTY_KEY_BYTES)
            continue; /* not ours; never written by this module */
        dirty_tally *t = tally_of(st, get_be32((const uint8_t *)key + 1));
        if (!t) {
            rc = -ENOMEM;
            break;
        }
        t->records++;
        st->dirty_records++;
    }
    kv_iter_free(it);
    return rc;
}

int ios_state_open(const char *data_dir, ios_state **out, char *err, size_t err_len)
{
    char path[PATH_MAX];
    int rc;
    if (snprintf(path, sizeof(path), "%s/%s", data_dir, IOS_STATE_SUBDIR) >= (int)sizeof(path)) {
        snprintf(err, err_len, "state path too long under %s", data_dir);
        return -ENAMETOOLONG;
    }
    if (mkdir(path, STATE_DIR_MODE) != 0 && errno != EEXIST) {
        rc = -errno;
        snprintf(err, err_len, "cannot create %s: %s", path, strerror(errno));
        return rc;
    }
    ios_state *st = calloc(1, sizeof(*st));
    if (!st) {
        snprintf(err, err_len, "out of memory");
        return -ENOMEM;
    }
    rc = kv_open(path, true, &st->kv, err, err_len);
    if (rc)
        goto fail;
    rc = load_state(st);
    if (rc) {
        snprintf(err, err_len, "%s: unreadable server state record", path);
        kv_close(st->kv);
        goto fail;
    }
    rc = count_dirty(st);
    if (rc) {
        snprintf(err, err_len, "%s: cannot count the dirty records: %s", path, strerror(-rc));
        kv_close(st->kv);
        goto fail;
    }
    if (snprintf(st->demoted_marker, sizeof(st->demoted_marker), "%s/%s", path,
                 STATE_DEMOTED_MARKER) >= (int)sizeof(st->demoted_marker)) {
        snprintf(err, err_len, "state path too long under %s", data_dir);
        kv_close(st->kv);
        rc = -ENAMETOOLONG;
        goto fail;
    }
    if (access(st->demoted_marker, F_OK) == 0 &&
        st->server_state == DEPFS__SERVER_STATE__SERVER_UP) {
        log_warn("%s: a demotion its store could not keep: REBUILDING", st->demoted_marker);
        st->server_state = DEPFS__SERVER_STATE__SERVER_REBUILDING;
    }
    pthread_mutex_init(&st->mu, NULL);
    *out = st;
    return 0;
fail:
    free(st->tally);
    free(st);
    return rc;
}

void ios_state_close(ios_state *st)
{
    if (!st)
        return;
    kv_close(st->kv);
    pthread_mutex_destroy(&st->mu);
    free(st->tally);
    free(st);
}

uint32_t ios_state_get(ios_state *st)
{
    pthread_mutex_lock(&st->mu);
    uint32_t v = st->server_state;
    pthread_mutex_unlock(&st->mu);
    return v;
}

bool ios_state_refuses_reads(uint32_t server_state)
{
    return server_state == DEPFS__SERVER_STATE__SERVER_REBUILDING ||
           server_state == DEPFS__SERVER_STATE__SERVER_RECONSTRUCTING;
}

uint64_t ios_state_epoch(ios_state *st)
{
    pthread_mutex_lock(&st->mu);
    uint64_t v = st->epoch;
    pthread_mutex_unlock(&st->mu);
    return v;
}

int ios_state_raise_epoch(ios_state *st, uint64_t e, uint64_t *now)
{
    uint8_t val[EPOCH_VALUE_BYTES];
    int rc = 0;
    pthread_mutex_lock(&st->mu);
    if (e > st->epoch) {
        for (unsigned i = 0; i < EPOCH_VALUE_BYTES; i++)
            val[i] = (uint8_t)(e >> (8 * i));
        rc = kv_put(st->kv, EPOCH_KEY, strlen(EPOCH_KEY), val, sizeof(val));
        if (rc == 0)
            st->epoch = e;
    }
    if (now)
        *now = st->epoch;
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* Caller holds mu: the store could not keep a demotion (a full disk, say),
 * so an empty file beside it does (a name, no data block), which the next
 * start reads as REBUILDING. */
static void mark_demoted(ios_state *st, int store_rc)
{
    int fd = open(st->demoted_marker, O_WRONLY | O_CREAT | O_CLOEXEC, STATE_MARKER_MODE);
    if (fd >= 0 && fsync(fd) == 0) {
        close(fd);
        log_err("cannot store REBUILDING (%s): demoted in memory, and %s makes a restart come "
                "back REBUILDING", strerror(-store_rc), st->demoted_marker);
        return;
    }
    int e = errno;
    if (fd >= 0)
        close(fd);
    log_err("cannot store REBUILDING (%s) nor make %s (%s): demoted in memory only; restart "
            "this server with --rebuild", strerror(-store_rc), st->demoted_marker, strerror(e));
}

int ios_state_demote_self(ios_state *st)
{
    static const uint8_t val[STATE_VALUE_BYTES] = { DEPFS__SERVER_STATE__SERVER_REBUILDING };
    int rc = 0;
    pthread_mutex_lock(&st->mu);
    if (st->server_state == DEPFS__SERVER_STATE__SERVER_UP) {
        /* in memory whatever the store says: a server that cannot vouch
         * for its units must stop serving them now */
        st->server_state = DEPFS__SERVER_STATE__SERVER_REBUILDING;
        st->stalled = true;
        rc = kv_put(st->kv, STATE_KEY, strlen(STATE_KEY), val, sizeof(val));
        if (rc < 0)
            mark_demoted(st, rc);
        rc = 1;
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
}

bool ios_state_stalled(ios_state *st)
{
    pthread_mutex_lock(&st->mu);
    bool v = st->stalled;
    pthread_mutex_unlock(&st->mu);
    return v;
}

int ios_state_set(ios_state *st, uint32_t server_state)
{
    assert(server_state != DEPFS__SERVER_STATE__SERVER_DOWN);
    uint8_t val[STATE_VALUE_BYTES] = { (uint8_t)server_state, (uint8_t)(server_state >> 8),
                                       (uint8_t)(server_state >> 16),
                                       (uint8_t)(server_state >> 24) };
    pthread_mutex_lock(&st->mu);
    int rc = kv_put(st->kv, STATE_KEY, strlen(STATE_KEY), val, sizeof(val));
    if (rc == 0) {
        st->server_state = server_state;
        st->stalled = false; /* recovery has taken it in hand */
        if (unlink(st->demoted_marker) != 0 && errno != ENOENT)
            log_warn("cannot remove %s: %s", st->demoted_marker, strerror(errno));
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int ios_dirty_add(ios_state *st, const uint32_t *servers, size_t n_servers, uint64_t file_id)
{
    int rc = 0;
    size_t missing = 0, n_fresh = 0;
    uint32_t fresh[CONFIG_MAX_IOSERVERS]; /* absent before: counted once committed */
    assert(n_servers <= CONFIG_MAX_IOSERVERS);
    kv_batch *b = kv_batch_new();
    if (!b)
        return -ENOMEM;
    pthread_mutex_lock(&st->mu);
    for (size_t i = 0; i < n_servers; i++) {
        uint8_t key[DIRTY_KEY_BYTES];
        void *val = NULL;
        size_t vlen;
        dirty_key(key, servers[i], file_id);
        rc = kv_get(st->kv, key, sizeof(key), &val, &vlen);
        free(val);
        if (rc == 0 && vlen == 0)
            continue; /* already recorded, unclaimed, and durable */
        if (rc != 0 && rc != -ENOENT)
            goto out;
        bool twice = false; /* named twice in one request */
        for (size_t j = 0; j < n_fresh && !twice; j++)
            twice = fresh[j] == servers[i];
        if (twice)
            continue;
        if (rc == -ENOENT)
            fresh[n_fresh++] = servers[i];
        /* absent, or claimed by a rejoin: (re)record it unclaimed */
        rc = 0;
        kv_batch_put(b, key, sizeof(key), "", 0);
        missing++;
    }
    for (size_t j = 0; j < n_fresh; j++)
        if (!tally_of(st, fresh[j])) { /* room first: a committed record is always counted */
            rc = -ENOMEM;
            goto out;
        }
    if (missing)
        rc = kv_batch_commit(st->kv, b);
    for (size_t j = 0; rc == 0 && j < n_fresh; j++) {
        tally_of(st, fresh[j])->records++;
        st->dirty_records++;
    }
out:
    pthread_mutex_unlock(&st->mu);
    kv_batch_free(b);
    return rc;
}

int ios_dirty_list(ios_state *st, uint32_t server, uint64_t from, uint64_t *out, size_t max,
                   size_t *n_out, bool *more)
{
    uint8_t prefix[DIRTY_SERVER_PREFIX_BYTES], start[DIRTY_KEY_BYTES];
    dirty_key(start, server, from);
    memcpy(prefix, start, sizeof(prefix));
    *n_out = 0;
    *more = false;
    kv_iter *it = kv_iter_new(st->kv, prefix, sizeof(prefix), start, sizeof(start));
    if (!it)
        return -EIO;
    const void *key, *val;
    size_t klen, vlen;
    while (kv_iter_next(it, &key, &klen, &val, &vlen)) {
        if (klen != DIRTY_KEY_BYTES)
            continue; /* not ours; never written by this module */
        if (*n_out == max) {
            *more = true;
            break;
        }
        out[(*n_out)++] = get_be64((const uint8_t *)key + DIRTY_SERVER_PREFIX_BYTES);
    }
    kv_iter_free(it);
    return 0;
}

int ios_dirty_claim(ios_state *st, uint32_t server, uint64_t file_id)
{
    uint8_t key[DIRTY_KEY_BYTES];
    void *val = NULL;
    size_t vlen = 0;
    dirty_key(key, server, file_id);
    pthread_mutex_lock(&st->mu);
    int rc = kv_get(st->kv, key, sizeof(key), &val, &vlen);
    free(val);
    if (rc == 0)
        rc = kv_put(st->kv, key, sizeof(key), DIRTY_CLAIMED, DIRTY_CLAIMED_BYTES);
    pthread_mutex_unlock(&st->mu);
    return rc == -ENOENT ? 0 : rc;
}

int ios_dirty_clear(ios_state *st, uint32_t server, uint64_t file_id, bool *kept)
{
    uint8_t key[DIRTY_KEY_BYTES];
    void *val = NULL;
    size_t vlen = 0;
    dirty_key(key, server, file_id);
    *kept = false;
    pthread_mutex_lock(&st->mu);
    int rc = kv_get(st->kv, key, sizeof(key), &val, &vlen);
    bool claimed = rc == 0 && vlen == DIRTY_CLAIMED_BYTES &&
                   memcmp(val, DIRTY_CLAIMED, DIRTY_CLAIMED_BYTES) == 0;
    free(val);
    if (rc == 0 && claimed) {
        rc = kv_delete(st->kv, key, sizeof(key));
        dirty_tally *t = rc == 0 ? tally_of(st, server) : NULL;
        if (t && t->records > 0) { /* counted at open or when added */
            t->records--;
            st->dirty_records--;
        }
    } else if (rc == 0)
        *kept = true; /* recorded again since the claim: the next pass rebuilds */
    pthread_mutex_unlock(&st->mu);
    return rc == -ENOENT ? 0 : rc;
}

int ios_dirty_probe(ios_state *st, uint64_t file_id, const uint32_t *servers, size_t n,
                    uint32_t *out, size_t *n_out)
{
    *n_out = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t key[DIRTY_KEY_BYTES];
        void *val = NULL;
        size_t vlen = 0;
        dirty_key(key, servers[i], file_id);
        int rc = kv_get(st->kv, key, sizeof(key), &val, &vlen);
        free(val);
        if (rc == 0)
            out[(*n_out)++] = servers[i];
        else if (rc != -ENOENT)
            return rc;
    }
    return 0;
}

int ios_dirty_servers_of(ios_state *st, uint64_t file_id, uint32_t *out, size_t max,
                         size_t *n_out)
{
    *n_out = 0;
    if (st->dirty_records == 0)
        return 0; /* the common case: nothing recorded at all */
    int rc = 0;
    pthread_mutex_lock(&st->mu);
    for (size_t i = 0; rc == 0 && i < st->n_tally; i++) {
        if (st->tally[i].records == 0)
            continue;
        uint8_t key[DIRTY_KEY_BYTES];
        void *val = NULL;
        size_t vlen = 0;
        dirty_key(key, st->tally[i].server, file_id);
        rc = kv_get(st->kv, key, sizeof(key), &val, &vlen);
        free(val);
        if (rc == -ENOENT) {
            rc = 0;
        } else if (rc == 0 && *n_out == max) {
            rc = -EOVERFLOW;
        } else if (rc == 0) {
            out[(*n_out)++] = st->tally[i].server;
        }
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* ------------------------------------------------------------ lock intents */
static void intent_key(uint8_t key[INTENT_KEY_BYTES], uint64_t file_id, uint64_t client,
                       uint64_t op)
{
    key[0] = INTENT_PREFIX;
    put_be64(key + 1, file_id);
    put_be64(key + 9, client);
    put_be64(key + 17, op);
}

int ios_intent_set(ios_state *st, uint64_t file_id, uint64_t client, uint64_t op, bool held,
                   uint64_t first, uint64_t end, bool writes)
{
    uint8_t key[INTENT_KEY_BYTES], val[INTENT_VALUE_BYTES];
    intent_key(key, file_id, client, op);
    kv_batch *b = kv_batch_new();
    if (!b)
        return -ENOMEM;
    if (held) {
        assert(first < end);
        for (unsigned i = 0; i < 8; i++) {
            val[i] = (uint8_t)(first >> (8 * i));
            val[8 + i] = (uint8_t)(end >> (8 * i));
        }
        val[INTENT_SPAN_BYTES] = writes ? INTENT_MODE_WRITES : 0;
        kv_batch_put(b, key, sizeof(key), val, sizeof(val));
    } else {
        kv_batch_delete(b, key, sizeof(key));
    }
    int rc = kv_batch_commit_nosync(st->kv, b);
    kv_batch_free(b);
    return rc;
}

int ios_intent_each(ios_state *st, ios_intent_fn fn, void *arg)
{
    uint8_t prefix[1] = { INTENT_PREFIX };
    kv_iter *it = kv_iter_new(st->kv, prefix, sizeof(prefix), NULL, 0);
    if (!it)
        return -EIO;
    const void *key, *val;
    size_t klen, vlen, n = 0;
    while (kv_iter_next(it, &key, &klen, &val, &vlen)) {
        if (klen != INTENT_KEY_BYTES || (vlen != INTENT_VALUE_BYTES && vlen != INTENT_SPAN_BYTES))
            continue; /* never written by this module */
        const uint8_t *k = key, *v = val;
        bool writes = vlen == INTENT_SPAN_BYTES || (v[INTENT_SPAN_BYTES] & INTENT_MODE_WRITES);
        uint64_t first = 0, end = 0;
        for (int i = 7; i >= 0; i--) {
            first = (first << 8) | v[i];
            end = (end << 8) | v[8 + i];
        }
        if (first >= end)
            continue;
        fn(arg, get_be64(k + 1), get_be64(k + 9), get_be64(k + 17), first, end, writes);
        n++;
    }
    kv_iter_free(it);
    return (int)(n > INT_MAX ? INT_MAX : n);
}
