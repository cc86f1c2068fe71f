/* ad_depfs_node_cache.c - the node read cache: the processes of one node
 * that opened a file read-only together share the chunks any of them read,
 * in one shared-memory window (MPI_Win_allocate_shared), as the FUSE
 * mount's ranks share the kernel's page cache.
 *
 * Why: every process is a libdepfs client of its own, with its own
 * read-ahead. Small independent reads of one file from several processes
 * of a node (1000-byte pieces interleaved across ranks) made each process
 * fetch whole read-ahead windows for its own pieces only: the node fetched
 * the file once per process. With the cache a chunk comes from the servers
 * once per node, and every small read is a copy out of shared memory.
 *
 * What it may serve, by MPI's consistency rules (MPI 4.0 14.6.1): the
 * processes of this open write nothing (MPI_MODE_RDONLY is the same on
 * every process), and another open's writes need be seen only after a
 * sync of this handle, which ROMIO refuses on a read-only one
 * (MPIO_CHECK_WRITABLE): close and open again. So a chunk, once in, is
 * good for the rest of the open, as the bytes of each process's own
 * read-ahead window are; the cache goes with the close.
 * Only reads smaller than DEPFS_READ_GATHER_MIN come here: for those a
 * process's own read-ahead fetches whole windows (depfs.h), so they are
 * what the node fetched once per process; a larger read would only pay
 * one copy more. Not used in atomic mode.
 *
 * Slots are direct-mapped (chunk index modulo the slot count). A slot's
 * state word holds its status, its chunk index and a change count; a
 * reader copies out of a slot and then checks the word did not change
 * (a fill or eviction meanwhile: it tries again), so it never returns
 * bytes of two fills. A process wanting a chunk that another one is
 * filling fills one of the next few meanwhile, then waits for it
 * (bounded: then it reads for itself from then on). A chunk nobody has is
 * fetched only for a process reading along the file; its random small
 * reads take what is in and read the rest for themselves. */
#include "ad_depfs.h"
#include "adioi.h"
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#define NC_CHUNK_MIN ((uint64_t) 256 << 10)    /* at least this, whole stripes */
#define NC_CHUNK_MAX ((uint64_t) 16 << 20)     /* larger stripes: no cache */
#define NC_BYTES ((uint64_t) 32 << 20)         /* data per node per open (its
                                                * pages taken as filled) */
#define NC_READ_MAX ((uint64_t) DEPFS_READ_GATHER_MIN) /* reads it serves: below this */
#define NC_SLOTS_MIN 4u
#define NC_WAIT_S 20.0          /* for another process's fill; then read alone */
#define NC_SPINS 64u            /* sched_yield rounds before sleeping */
#define NC_NAP_NS 20000L        /* sleep between looks after them */
#define NC_COPY_TRIES 8u        /* copies spoiled by a concurrent fill */
#define NC_FILLS_MAX 2u         /* fills of one chunk for one read */
#define NC_AHEAD 4u             /* chunks a waiting process fills ahead */
#define NC_NO_READ UINT64_MAX

/* state word: bits 0-1 status, bits 2-33 chunk index, bits 34-63 changes */
enum { NC_EMPTY = 0, NC_FILLING = 1, NC_VALID = 2 };
#define NC_STATUS_MASK UINT64_C(3)
#define NC_TAG_SHIFT 2
#define NC_TAG_BITS 32
#define NC_TAG_MAX ((UINT64_C(1) << NC_TAG_BITS) - 1)
#define NC_COUNT_SHIFT (NC_TAG_SHIFT + NC_TAG_BITS)

typedef struct nc_slot {
    _Atomic uint64_t state;
    _Atomic uint64_t valid;     /* bytes of the chunk the fill got (short at EOF) */
} nc_slot;

struct ADIOI_DEPFS_Node_cache {
    MPI_Comm node;
    MPI_Win win;
    nc_slot *slot;              /* slots of them, then their chunks */
    char *data;
    uint64_t chunk;
    uint64_t slots;
    bool gave_up;               /* a fill outlasted NC_WAIT_S: read alone */
    uint64_t last_off;          /* this process's last small read (NC_NO_READ) */
};

static uint64_t st_status(uint64_t s) { return s & NC_STATUS_MASK; }
static uint64_t st_tag(uint64_t s) { return (s >> NC_TAG_SHIFT) & NC_TAG_MAX; }
static uint64_t st_next(uint64_t old, uint64_t status, uint64_t tag)
{
    uint64_t count = (old >> NC_COUNT_SHIFT) + 1;
    return (count << NC_COUNT_SHIFT) | (tag << NC_TAG_SHIFT) | status;
}

/* chunk bytes for a layout: NC_CHUNK_MIN rounded up to whole stripes, 0
 * when too large for the cache */
static uint64_t chunk_for(const depfs_layout_info *lay)
{
    uint64_t width = (uint64_t) lay->k * lay->stripe_unit, chunk;
    if (width == 0)
        return 0;
    chunk = (NC_CHUNK_MIN + width - 1) / width * width;
    return chunk <= NC_CHUNK_MAX ? chunk : 0;
}

/* Collective over fd->comm; want is this process's wish (read-only open,
 * hint enabled, layout known). The cache comes only where every process
 * wants it and a node holds more than one of them; each process reports
 * its share in fd->info (ADIOI_DEPFS_HINT_NODE_CACHE_BYTES, 0 without). */
void ADIOI_DEPFS_Node_cache_open(ADIO_File fd, ADIOI_DEPFS_File *file, int want)
{
    ADIOI_DEPFS_Node_cache *nc = NULL;
    uint64_t chunk = want ? chunk_for(&file->layout) : 0, slots = 0;
    int all_want = 0, node_size = 0, node_rank = 0, ok, all_ok = 0, disp = 0;
    MPI_Aint size = 0, bytes = 0;
    char value[32];
    void *base = NULL;

    want = want && chunk > 0;
    MPI_Allreduce(&want, &all_want, 1, MPI_INT, MPI_LAND, fd->comm);
    if (!all_want)
        goto report;
    nc = ADIOI_Calloc(1, sizeof(*nc));
    nc->win = MPI_WIN_NULL;
    MPI_Comm_split_type(fd->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &nc->node);
    MPI_Comm_size(nc->node, &node_size);
    MPI_Comm_rank(nc->node, &node_rank);
    if (node_size < 2)
        goto drop_comm;
    slots = NC_BYTES / chunk;
    if (slots < NC_SLOTS_MIN)
        slots = NC_SLOTS_MIN;
    if (node_rank == 0)
        bytes = (MPI_Aint) (slots * (sizeof(nc_slot) + chunk));
    MPI_Comm_set_errhandler(nc->node, MPI_ERRORS_RETURN);
    ok = MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, nc->node, &base, &nc->win) ==
        MPI_SUCCESS;
    if (ok)
        ok = MPI_Win_shared_query(nc->win, 0, &size, &disp, &base) == MPI_SUCCESS &&
            size >= (MPI_Aint) (slots * (sizeof(nc_slot) + chunk));
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, nc->node);
    if (!all_ok) {
        if (nc->win != MPI_WIN_NULL)
            MPI_Win_free(&nc->win);
        goto drop_comm;
    }
    nc->slot = base;
    nc->data = (char *) (nc->slot + slots);
    nc->chunk = chunk;
    nc->slots = slots;
    nc->last_off = NC_NO_READ;
    if (node_rank == 0) {
        for (uint64_t i = 0; i < slots; i++) {
            atomic_init(&nc->slot[i].state, NC_EMPTY);
            atomic_init(&nc->slot[i].valid, 0);
        }
    }
    MPI_Barrier(nc->node);      /* the slots are empty before anyone looks */
    file->node_cache = nc;
    goto report;
  drop_comm:
    MPI_Comm_free(&nc->node);
    ADIOI_Free(nc);
    nc = NULL;
  report:
    snprintf(value, sizeof(value), "%llu",
             nc ? (unsigned long long) (nc->slots * nc->chunk) : 0ull);
    ADIOI_Info_set(fd->info, ADIOI_DEPFS_HINT_NODE_CACHE_BYTES, value);
}

void ADIOI_DEPFS_Node_cache_close(ADIOI_DEPFS_File *file)
{
    ADIOI_DEPFS_Node_cache *nc = file->node_cache;
    if (!nc)
        return;
    MPI_Win_free(&nc->win);     /* collective over the node: every process closes */
    MPI_Comm_free(&nc->node);
    ADIOI_Free(nc);
    file->node_cache = NULL;
}

/* Fills slot s (claimed: FILLING with tag, state word `claimed`) with chunk
 * `tag`; 0 or a negative errno (the slot is then empty again). */
static int fill(ADIOI_DEPFS_Node_cache *nc, depfs_fh_t *fh, nc_slot *s, uint64_t claimed,
                uint64_t tag)
{
    char *dst = nc->data + (uint64_t) (s - nc->slot) * nc->chunk;
    uint64_t got = 0;
    ssize_t n;

    atomic_thread_fence(memory_order_release);  /* FILLING before the bytes */
    while (got < nc->chunk) {
        n = depfs_read(fh, dst + got, nc->chunk - got, tag * nc->chunk + got);
        if (n < 0) {
            atomic_store(&s->state, st_next(claimed, NC_EMPTY, 0));
            return (int) n;
        }
        if (n == 0)
            break;      /* end of file as this client knows it */
        got += (uint64_t) n;
    }
    atomic_store(&s->valid, got);
    atomic_store_explicit(&s->state, st_next(claimed, NC_VALID, tag), memory_order_release);
    return 0;
}

/* While another process fills chunk `tag`: fills the first of the next
 * NC_AHEAD chunks nobody has or is filling, as the processes of a node
 * reading along a file in step all wait for one chunk at a time otherwise.
 * true when it filled one (or tried: a failed fill leaves the slot empty
 * for whoever needs it to meet the error). */
static bool fill_ahead(ADIOI_DEPFS_Node_cache *nc, depfs_fh_t *fh, uint64_t tag)
{
    for (uint64_t t = tag + 1; t <= tag + NC_AHEAD && t <= NC_TAG_MAX; t++) {
        nc_slot *s = &nc->slot[t % nc->slots];
        uint64_t st = atomic_load_explicit(&s->state, memory_order_acquire), claimed;
        if (st_status(st) == NC_FILLING || (st_status(st) == NC_VALID && st_tag(st) == t))
            continue;
        claimed = st_next(st, NC_FILLING, t);
        if (!atomic_compare_exchange_strong(&s->state, &st, claimed))
            continue;
        (void) fill(nc, fh, s, claimed, t);
        return true;
    }
    return false;
}

/* Copies [at, at + len) of chunk `tag` out of its slot: 1 done, 0 not
 * served here (the caller reads for itself), or a negative errno. Without
 * may_fill only a chunk in or on its way is served. */
static int chunk_read(ADIOI_DEPFS_Node_cache *nc, depfs_fh_t *fh, uint64_t tag, uint64_t at,
                      uint64_t len, char *buf, bool may_fill)
{
    nc_slot *s = &nc->slot[tag % nc->slots];
    const char *src = nc->data + (tag % nc->slots) * nc->chunk;
    uint64_t st, claimed;
    double deadline = 0;
    unsigned looks = 0, copies = 0, fills = 0, helped = 0;
    int rc;

    for (;;) {
        st = atomic_load_explicit(&s->state, memory_order_acquire);
        if (st_status(st) == NC_VALID && st_tag(st) == tag) {
            if (at + len > atomic_load(&s->valid))
                return 0;       /* past the end it saw: the caller asks again */
            memcpy(buf, src + at, len);
            atomic_thread_fence(memory_order_acquire);
            if (atomic_load_explicit(&s->state, memory_order_relaxed) == st)
                return 1;
            if (++copies >= NC_COPY_TRIES)
                return 0;
            continue;
        }
        if (st_status(st) == NC_FILLING) {
            if (st_tag(st) != tag)
                return 0;       /* someone else's chunk on its way in */
            if (deadline == 0) {
                deadline = MPI_Wtime() + NC_WAIT_S;
            } else if (MPI_Wtime() > deadline) {
                nc->gave_up = true;     /* its filler is stuck: not again */
                return 0;
            }
            if (may_fill && helped < NC_AHEAD && fill_ahead(nc, fh, tag)) {
                helped++;
                continue;
            }
            if (++looks < NC_SPINS) {
                sched_yield();
            } else {
                struct timespec nap = { 0, NC_NAP_NS };
                nanosleep(&nap, NULL);
            }
            continue;
        }
        /* empty or another chunk: ours (twice at most: evicted again at
         * once, read alone) */
        if (!may_fill || fills++ >= NC_FILLS_MAX)
            return 0;
        claimed = st_next(st, NC_FILLING, tag);
        if (!atomic_compare_exchange_strong(&s->state, &st, claimed))
            continue;
        rc = fill(nc, fh, s, claimed, tag);
        if (rc < 0)
            return rc;
    }
}

ssize_t ADIOI_DEPFS_Node_cache_read(ADIOI_DEPFS_File *file, void *buf, uint64_t len,
                                    uint64_t offset)
{
    ADIOI_DEPFS_Node_cache *nc = file->node_cache;
    uint64_t done = 0, tag, at, piece;
    bool along;
    int rc;

    if (!nc || nc->gave_up || len == 0 || len >= NC_READ_MAX)
        return 0;
    /* a missing chunk is fetched for reads that go along the file (the
     * first, or one at most a chunk past this process's last): a random
     * small read would bring a whole chunk for its few bytes, where
     * libdepfs reads only its blocks */
    along = nc->last_off == NC_NO_READ ||
        (offset >= nc->last_off && offset - nc->last_off <= nc->chunk);
    nc->last_off = offset;
    while (done < len) {
        tag = (offset + done) / nc->chunk;
        at = (offset + done) % nc->chunk;
        if (tag > NC_TAG_MAX)
            break;
        piece = nc->chunk - at < len - done ? nc->chunk - at : len - done;
        rc = chunk_read(nc, file->fh, tag, at, piece, (char *) buf + done, along);
        if (rc < 0)
            return rc;
        if (rc == 0)
            break;
        done += piece;
    }
    return (ssize_t) done;
}
