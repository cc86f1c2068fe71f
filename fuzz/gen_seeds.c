/* gen_seeds.c - writes the seed corpus of the fuzz targets from valid
 * requests (make fuzz-seeds): fuzz/corpus/mds and fuzz/corpus/ioserver get
 * short sequences of good requests in the fuzz_input.h format (each
 * replays on an empty store: the root is inode 1, the first inode made is
 * 2), fuzz/corpus/frame gets frame headers followed by a request.
 *
 *   gen_seeds DIR      (DIR/frame, DIR/mds, DIR/ioserver must exist)
 *
 * The files are committed; regenerate them when the protocol changes.
 * Reproducers of what the fuzzers found sit beside them (crash-*). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "depfs.pb-c.h"
#include "frame.h"
#include "fuzz/fuzz_input.h"

#define SEED_BYTES_MAX 65536u
#define ROOT 1u
#define FIRST_INO 2u   /* the first inode an empty namespace makes */
#define FID 2u         /* a strip file id */
#define SU 65536u
#define BULK_BYTES 16u
#define OWNER 7u
#define SET_MODE_SIZE 9u /* DEPFS_SET_MODE | DEPFS_SET_SIZE */

/* A seed being built: records appended one after another. */
typedef struct seed {
    uint8_t buf[SEED_BYTES_MAX];
    size_t len;
} seed;

static void add(seed *s, uint16_t type, const ProtobufCMessage *m, const uint8_t *bulk,
                size_t bulk_len)
{
    size_t hl = protobuf_c_message_get_packed_size(m);
    if (s->len + FUZZ_RECORD_HEAD_BYTES + hl + bulk_len > sizeof(s->buf) || hl > UINT16_MAX) {
        fprintf(stderr, "gen_seeds: seed too large\n");
        exit(1);
    }
    fuzz_put_head(s->buf + s->len, (uint8_t)type, (uint16_t)hl, (uint16_t)bulk_len);
    s->len += FUZZ_RECORD_HEAD_BYTES;
    s->len += protobuf_c_message_pack(m, s->buf + s->len);
    if (bulk_len)
        memcpy(s->buf + s->len, bulk, bulk_len);
    s->len += bulk_len;
}

static void save(const char *dir, const char *kind, const char *name, const seed *s)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s/seed-%s", dir, kind, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(s->buf, 1, s->len, f) != s->len || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

/* ------------------------------------------------------------------ MDS */
static Depfs__MdsRequest mreq(void)
{
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    return q;
}

static void mds_named(seed *s, uint16_t op, uint64_t parent, const char *name, uint32_t mode)
{
    Depfs__MdsRequest q = mreq();
    q.has_parent = q.has_mode = 1;
    q.parent = parent;
    q.name = (char *)name;
    q.mode = mode;
    add(s, op, &q.base, NULL, 0);
}

static void mds_ino(seed *s, uint16_t op, uint64_t ino)
{
    Depfs__MdsRequest q = mreq();
    q.has_ino = 1;
    q.ino = ino;
    add(s, op, &q.base, NULL, 0);
}

static void mds_seeds(const char *dir)
{
    seed s = { .len = 0 };
    Depfs__MdsRequest q;
    q = mreq();
    add(&s, DEPFS__MDS_OP__MDS_REGISTER, &q.base, NULL, 0);
    add(&s, DEPFS__MDS_OP__MDS_STATFS, &q.base, NULL, 0);
    add(&s, DEPFS__MDS_OP__MDS_CLUSTER, &q.base, NULL, 0);
    save(dir, "mds", "register-statfs-cluster", &s);

    /* a file: create, getattr, setattr, extend, readdir, lookup, unlink */
    s.len = 0;
    mds_named(&s, DEPFS__MDS_OP__MDS_CREATE, ROOT, "f", 0100644);
    mds_ino(&s, DEPFS__MDS_OP__MDS_GETATTR, FIRST_INO);
    Depfs__Attr a = DEPFS__ATTR__INIT;
    a.ino = FIRST_INO;
    a.mode = 0100600;
    a.size = SU;
    q = mreq();
    q.has_ino = q.has_set_mask = 1;
    q.ino = FIRST_INO;
    q.set_mask = SET_MODE_SIZE;
    q.attr = &a;
    add(&s, DEPFS__MDS_OP__MDS_SETATTR, &q.base, NULL, 0);
    q = mreq();
    q.has_ino = q.has_size = q.has_mtime_ns = 1;
    q.ino = FIRST_INO;
    q.size = 2 * SU;
    q.mtime_ns = 1;
    add(&s, DEPFS__MDS_OP__MDS_EXTEND, &q.base, NULL, 0);
    q = mreq();
    q.has_ino = q.has_cookie = q.has_max_entries = 1;
    q.ino = ROOT;
    q.max_entries = 8;
    add(&s, DEPFS__MDS_OP__MDS_READDIR, &q.base, NULL, 0);
    q.has_with_attrs = q.with_attrs = 1; /* statahead's page */
    add(&s, DEPFS__MDS_OP__MDS_READDIR, &q.base, NULL, 0);
    mds_named(&s, DEPFS__MDS_OP__MDS_LOOKUP, ROOT, "f", 0);
    mds_named(&s, DEPFS__MDS_OP__MDS_UNLINK, ROOT, "f", 0);
    save(dir, "mds", "file", &s);

    /* a directory with a layout policy, a file in it, rename, rmdir */
    s.len = 0;
    mds_named(&s, DEPFS__MDS_OP__MDS_MKDIR, ROOT, "d", 040755);
    q = mreq();
    q.has_ino = q.has_xattr_value = 1;
    q.ino = FIRST_INO;
    q.xattr_name = "user.depfs.layout";
    q.xattr_value.data = (uint8_t *)"4@2@64k";
    q.xattr_value.len = strlen("4@2@64k");
    add(&s, DEPFS__MDS_OP__MDS_SETXATTR, &q.base, NULL, 0);
    mds_named(&s, DEPFS__MDS_OP__MDS_CREATE, FIRST_INO, "g", 0100644);
    q = mreq();
    q.has_parent = q.has_new_parent = q.has_flags = 1;
    q.parent = FIRST_INO;
    q.name = "g";
    q.new_parent = ROOT;
    q.new_name = "h";
    add(&s, DEPFS__MDS_OP__MDS_RENAME, &q.base, NULL, 0);
    mds_named(&s, DEPFS__MDS_OP__MDS_RMDIR, ROOT, "d", 0);
    save(dir, "mds", "dir-rename", &s);

    /* symlink, readlink, hard link, mknod */
    s.len = 0;
    q = mreq();
    q.has_parent = 1;
    q.parent = ROOT;
    q.name = "l";
    q.target = "f";
    add(&s, DEPFS__MDS_OP__MDS_SYMLINK, &q.base, NULL, 0);
    mds_ino(&s, DEPFS__MDS_OP__MDS_READLINK, FIRST_INO);
    q = mreq();
    q.has_ino = q.has_new_parent = 1;
    q.ino = FIRST_INO;
    q.new_parent = ROOT;
    q.new_name = "l2";
    add(&s, DEPFS__MDS_OP__MDS_LINK, &q.base, NULL, 0);
    mds_named(&s, DEPFS__MDS_OP__MDS_MKNOD, ROOT, "p", 010644);
    q = mreq();
    q.has_parent = q.has_mode = q.has_rdev = 1;
    q.parent = ROOT;
    q.name = "c";
    q.mode = 020600;
    q.rdev = 0x801;
    add(&s, DEPFS__MDS_OP__MDS_MKNOD, &q.base, NULL, 0);
    save(dir, "mds", "symlink-link-mknod", &s);

    /* xattrs on a file, a create with a layout of its own */
    s.len = 0;
    q = mreq();
    q.has_parent = q.has_mode = q.has_want_n = q.has_want_k = q.has_want_su = 1;
    q.parent = ROOT;
    q.name = "x";
    q.mode = 0100644;
    q.want_n = 4;
    q.want_k = 3;
    q.want_su = SU;
    add(&s, DEPFS__MDS_OP__MDS_CREATE, &q.base, NULL, 0);
    q = mreq();
    q.has_ino = q.has_xattr_value = 1;
    q.ino = FIRST_INO;
    q.xattr_name = "user.a";
    q.xattr_value.data = (uint8_t *)"value";
    q.xattr_value.len = 5;
    add(&s, DEPFS__MDS_OP__MDS_SETXATTR, &q.base, NULL, 0);
    q.has_xattr_value = 0;
    add(&s, DEPFS__MDS_OP__MDS_GETXATTR, &q.base, NULL, 0);
    mds_ino(&s, DEPFS__MDS_OP__MDS_LISTXATTR, FIRST_INO);
    add(&s, DEPFS__MDS_OP__MDS_REMOVEXATTR, &q.base, NULL, 0);
    save(dir, "mds", "xattrs", &s);

    /* the purge queue: a file created and unlinked, its hold given back
     * (alone, then in a batch with a generation), listed and dropped, as
     * a client and depfs-recovery do */
    s.len = 0;
    mds_named(&s, DEPFS__MDS_OP__MDS_CREATE, ROOT, "q", 0100644);
    q = mreq();
    q.has_ino = q.has_client_id = 1;
    q.ino = FIRST_INO;
    q.client_id = 1;
    add(&s, DEPFS__MDS_OP__MDS_RELEASE, &q.base, NULL, 0);
    Depfs__HoldRelease rel = DEPFS__HOLD_RELEASE__INIT, *rels[] = { &rel };
    rel.ino = FIRST_INO;
    rel.has_hold_gen = 1;
    rel.hold_gen = 1;
    q = mreq();
    q.has_client_id = 1;
    q.client_id = 1;
    q.n_releases = 1;
    q.releases = rels;
    add(&s, DEPFS__MDS_OP__MDS_RELEASE, &q.base, NULL, 0);
    mds_named(&s, DEPFS__MDS_OP__MDS_UNLINK, ROOT, "q", 0);
    mds_ino(&s, DEPFS__MDS_OP__MDS_GETATTR, FIRST_INO);
    q = mreq();
    q.has_cookie = q.has_max_entries = 1;
    q.max_entries = 16;
    add(&s, DEPFS__MDS_OP__MDS_PURGE_LIST, &q.base, NULL, 0);
    uint64_t done_ino = FIRST_INO;
    q = mreq();
    q.n_purge_inos = 1;
    q.purge_inos = &done_ino;
    add(&s, DEPFS__MDS_OP__MDS_PURGE_DONE, &q.base, NULL, 0);
    save(dir, "mds", "purge-queue", &s);

    /* depfs migrate: a copy without a name, then the swap of "m" to it */
    s.len = 0;
    mds_named(&s, DEPFS__MDS_OP__MDS_CREATE, ROOT, "m", 0100644);
    q = mreq();
    q.has_parent = q.has_mode = q.has_unlinked = q.unlinked = 1;
    q.parent = ROOT;
    q.mode = 0100600;
    add(&s, DEPFS__MDS_OP__MDS_CREATE, &q.base, NULL, 0);
    q = mreq();
    q.has_parent = q.has_ino = q.has_migrate_ino = q.has_data_version = 1;
    q.parent = ROOT;
    q.name = "m";
    q.ino = FIRST_INO;
    q.migrate_ino = FIRST_INO + 1;
    add(&s, DEPFS__MDS_OP__MDS_MIGRATE_SWAP, &q.base, NULL, 0);
    save(dir, "mds", "migrate", &s);

    /* depfs-recovery's state and progress reports */
    s.len = 0;
    q = mreq();
    q.has_server_id = q.has_server_state = 1;
    q.server_id = 0;
    q.server_state = DEPFS__SERVER_STATE__SERVER_REBUILDING;
    add(&s, DEPFS__MDS_OP__MDS_SET_SERVER_STATE, &q.base, NULL, 0);
    q.has_server_state = 0;
    q.has_rebuild_done_bytes = q.has_rebuild_total_bytes = q.has_degraded_files = 1;
    q.has_rebuild_rate_bps = 1;
    q.rebuild_done_bytes = SU;
    q.rebuild_total_bytes = 2 * SU;
    q.degraded_files = 1;
    q.rebuild_rate_bps = SU;
    add(&s, DEPFS__MDS_OP__MDS_SET_SERVER_STATE, &q.base, NULL, 0);
    q = mreq();
    add(&s, DEPFS__MDS_OP__MDS_CLUSTER, &q.base, NULL, 0);
    save(dir, "mds", "server-state", &s);

    /* a MUNGE user beside the cluster key's holder (fuzz_mds.c: a bulk's
     * first byte picks the caller, 1 the cluster key, 2 the user): the
     * user's inode numbers need their handle tags, the root's excepted */
    static const uint8_t as_cluster = 1, as_user = 2;
    s.len = 0;
    q = mreq();
    q.has_parent = q.has_mode = 1;
    q.parent = ROOT;
    q.name = (char *)"f";
    q.mode = 0100644;
    add(&s, DEPFS__MDS_OP__MDS_CREATE, &q.base, &as_cluster, 1);
    q.mode = 0;
    add(&s, DEPFS__MDS_OP__MDS_LOOKUP, &q.base, &as_user, 1);
    q = mreq();
    q.has_ino = 1;
    q.ino = FIRST_INO;
    add(&s, DEPFS__MDS_OP__MDS_GETATTR, &q.base, &as_user, 1);
    q.ino = ROOT;
    q.has_max_entries = 1;
    q.max_entries = 8;
    add(&s, DEPFS__MDS_OP__MDS_READDIR, &q.base, &as_user, 1);
    save(dir, "mds", "user-handles", &s);
}

/* ------------------------------------------------------------- I/O server */
typedef struct ioreq {
    Depfs__IoRequest q;
    Depfs__Extent ext;
    Depfs__Extent *extp;
    Depfs__LockSpec lock;
} ioreq;

static void io_init(ioreq *r, uint64_t file_id)
{
    depfs__io_request__init(&r->q);
    depfs__extent__init(&r->ext);
    depfs__lock_spec__init(&r->lock);
    r->q.file_id = file_id;
    r->extp = &r->ext;
}

static void io_extent(ioreq *r, uint64_t off, uint64_t len)
{
    r->ext.offset = off;
    r->ext.length = len;
    r->q.extents = &r->extp;
    r->q.n_extents = 1;
}

static void io_lock(ioreq *r, uint64_t first, uint64_t count)
{
    r->lock.first_stripe = first;
    r->lock.stripe_count = count;
    r->lock.owner_client = OWNER;
    r->lock.owner_op = 1;
    r->q.lock = &r->lock;
}

static void io_seeds(const char *dir)
{
    static const uint8_t bulk[BULK_BYTES] = "0123456789abcdef";
    seed s = { .len = 0 };
    ioreq r;

    /* write, read, stat, truncate, fsync, remove */
    io_init(&r, FID);
    io_extent(&r, 0, BULK_BYTES);
    r.q.has_stripe_unit = 1;
    r.q.stripe_unit = SU;
    add(&s, DEPFS__IO_OP__IO_WRITE, &r.q.base, bulk, BULK_BYTES);
    r.q.has_stripe_unit = 0;
    add(&s, DEPFS__IO_OP__IO_READ, &r.q.base, NULL, 0);
    Depfs__DataUnits du = DEPFS__DATA_UNITS__INIT; /* a fault-free reader's */
    du.n = 8;
    du.k = 6;
    du.position = 2;
    r.q.data_units = &du;
    r.q.has_stripe_unit = 1;
    add(&s, DEPFS__IO_OP__IO_READ, &r.q.base, NULL, 0);
    r.q.data_units = NULL;
    io_init(&r, FID);
    add(&s, DEPFS__IO_OP__IO_STAT, &r.q.base, NULL, 0);
    r.q.has_local_size = 1;
    r.q.local_size = BULK_BYTES / 2;
    add(&s, DEPFS__IO_OP__IO_TRUNCATE, &r.q.base, NULL, 0);
    io_init(&r, FID);
    add(&s, DEPFS__IO_OP__IO_FSYNC, &r.q.base, NULL, 0);
    add(&s, DEPFS__IO_OP__IO_REMOVE, &r.q.base, NULL, 0);
    save(dir, "ioserver", "write-read", &s);

    /* where a strip file holds data (IO_EXTENTS): a unit written at the
     * second stripe, its data in a range of four units, the allocation */
    s.len = 0;
    io_init(&r, FID);
    io_extent(&r, SU, BULK_BYTES);
    r.q.has_stripe_unit = 1;
    r.q.stripe_unit = SU;
    add(&s, DEPFS__IO_OP__IO_WRITE, &r.q.base, bulk, BULK_BYTES);
    io_init(&r, FID);
    io_extent(&r, 0, 4 * (uint64_t)SU);
    r.q.has_stripe_unit = 1;
    r.q.stripe_unit = SU;
    add(&s, DEPFS__IO_OP__IO_EXTENTS, &r.q.base, NULL, 0);
    io_init(&r, FID);
    add(&s, DEPFS__IO_OP__IO_EXTENTS, &r.q.base, NULL, 0);
    save(dir, "ioserver", "extents", &s);

    /* lock, read under the lock, write + unlock, a retried lock */
    s.len = 0;
    io_init(&r, FID);
    io_lock(&r, 0, 1);
    add(&s, DEPFS__IO_OP__IO_LOCK, &r.q.base, NULL, 0);
    io_extent(&r, 0, BULK_BYTES);
    add(&s, DEPFS__IO_OP__IO_READ, &r.q.base, NULL, 0);
    r.q.has_unlock = r.q.unlock = r.q.has_sync = r.q.sync = 1;
    r.q.has_stripe_unit = 1;
    r.q.stripe_unit = SU;
    add(&s, DEPFS__IO_OP__IO_WRITE, &r.q.base, bulk, BULK_BYTES);
    io_init(&r, FID);
    io_lock(&r, 0, 2);
    r.q.has_lock_attempt = 1;
    r.q.lock_attempt = 1;
    add(&s, DEPFS__IO_OP__IO_LOCK, &r.q.base, NULL, 0);
    add(&s, DEPFS__IO_OP__IO_UNLOCK, &r.q.base, NULL, 0);
    save(dir, "ioserver", "locks", &s);

    /* states and epochs: REBUILDING, a heartbeat, a read ignoring locks, UP */
    s.len = 0;
    io_init(&r, 0);
    r.q.has_server_state = r.q.has_cluster_epoch = 1;
    r.q.server_state = DEPFS__SERVER_STATE__SERVER_REBUILDING;
    r.q.cluster_epoch = 1;
    add(&s, DEPFS__IO_OP__IO_SET_STATE, &r.q.base, NULL, 0);
    io_init(&r, 0);
    add(&s, DEPFS__IO_OP__IO_HEARTBEAT, &r.q.base, NULL, 0);
    io_init(&r, FID);
    io_extent(&r, 0, BULK_BYTES);
    r.q.has_ignore_locks = r.q.ignore_locks = 1;
    add(&s, DEPFS__IO_OP__IO_READ, &r.q.base, NULL, 0);
    io_init(&r, 0);
    r.q.has_server_state = r.q.has_drain_ms = 1;
    r.q.server_state = DEPFS__SERVER_STATE__SERVER_UP;
    r.q.drain_ms = 1;
    add(&s, DEPFS__IO_OP__IO_SET_STATE, &r.q.base, NULL, 0);
    save(dir, "ioserver", "states", &s);

    /* the dirty log: a write naming server 0 down, list, probe, claim, clear */
    s.len = 0;
    uint32_t down = 0;
    io_init(&r, FID);
    io_extent(&r, 0, BULK_BYTES);
    r.q.n_down_servers = 1;
    r.q.down_servers = &down;
    add(&s, DEPFS__IO_OP__IO_WRITE, &r.q.base, bulk, BULK_BYTES);
    io_init(&r, 0);
    r.q.has_local_size = 1;
    r.q.local_size = down;
    add(&s, DEPFS__IO_OP__IO_DIRTY, &r.q.base, NULL, 0);
    io_init(&r, FID);
    r.q.has_dirty_action = 1;
    r.q.dirty_action = DEPFS__DIRTY_ACTION__DIRTY_PROBE;
    r.q.n_down_servers = 1;
    r.q.down_servers = &down;
    add(&s, DEPFS__IO_OP__IO_DIRTY, &r.q.base, NULL, 0);
    io_init(&r, FID);
    r.q.has_local_size = r.q.has_dirty_action = 1;
    r.q.local_size = down;
    r.q.dirty_action = DEPFS__DIRTY_ACTION__DIRTY_CLAIM;
    add(&s, DEPFS__IO_OP__IO_DIRTY, &r.q.base, NULL, 0);
    r.q.dirty_action = DEPFS__DIRTY_ACTION__DIRTY_CLEAR;
    add(&s, DEPFS__IO_OP__IO_DIRTY, &r.q.base, NULL, 0);
    save(dir, "ioserver", "dirty", &s);

    /* depfs-recovery's take-over of a stale lock */
    s.len = 0;
    io_init(&r, FID);
    io_lock(&r, 0, 4);
    add(&s, DEPFS__IO_OP__IO_LOCK, &r.q.base, NULL, 0);
    r.lock.owner_client = OWNER + 1;
    r.lock.stripe_count = UINT64_MAX / 4; /* every stripe from here on */
    r.q.has_take_over_stale = r.q.take_over_stale = 1;
    add(&s, DEPFS__IO_OP__IO_LOCK, &r.q.base, NULL, 0);
    io_init(&r, 0);
    add(&s, DEPFS__IO_OP__IO_HEARTBEAT, &r.q.base, NULL, 0);
    save(dir, "ioserver", "take-over", &s);
}

/* ----------------------------------------------------------------- frames */
static void frame_seed(const char *dir, const char *name, uint16_t type, uint32_t flags,
                       const ProtobufCMessage *m, uint32_t bulk_len)
{
    seed s = { .len = 0 };
    size_t hl = m ? protobuf_c_message_get_packed_size(m) : 0;
    frame_header h = { .magic = FRAME_MAGIC, .version = FRAME_VERSION, .type = type,
                       .flags = flags, .hdr_len = (uint32_t)hl, .bulk_len = bulk_len,
                       .req_id = 1 };
    frame_encode(&h, s.buf);
    s.len = FRAME_HEADER_BYTES;
    if (m)
        s.len += protobuf_c_message_pack(m, s.buf + s.len);
    save(dir, "frame", name, &s);
}

static void frame_seeds(const char *dir)
{
    Depfs__MdsRequest q = mreq();
    q.has_parent = q.has_mode = 1;
    q.parent = ROOT;
    q.name = "f";
    q.mode = 0100644;
    frame_seed(dir, "mds-create", DEPFS__MDS_OP__MDS_CREATE, 0, &q.base, 0);
    ioreq r;
    io_init(&r, FID);
    io_extent(&r, 0, BULK_BYTES);
    frame_seed(dir, "io-write", DEPFS__IO_OP__IO_WRITE, 0, &r.q.base, BULK_BYTES);
    Depfs__IoReply rep = DEPFS__IO_REPLY__INIT;
    frame_seed(dir, "io-reply", DEPFS__IO_OP__IO_READ, FRAME_FLAG_REPLY, &rep.base, BULK_BYTES);
    frame_seed(dir, "empty", DEPFS__MDS_OP__MDS_STATFS, 0, NULL, 0);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_seeds DIR\n");
        return 2;
    }
    mds_seeds(argv[1]);
    io_seeds(argv[1]);
    frame_seeds(argv[1]);
    return 0;
}
