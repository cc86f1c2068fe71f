/* namespace.c - the MDS namespace over the store: open/root, counters,
 * transactions, create/lookup/attrs, unlink/rmdir/rename/link, readdir,
 * symlinks, extend, statfs, client registration. Xattrs live in ns_xattr.c;
 * the purge queue's listing and removal in ns_purge.c (a regular file's
 * last link queues it here, drop_link). */
#include "ns_internal.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "auth.h"
#include "clock.h"
#include "codec.h"
#include "label.h"
#include "layout.h"
#include "log.h"
#include "perm.h"

#define NS_FIRST_DIRENT_SEQ 3u  /* "." is cookie 1, ".." cookie 2 */
#define NS_COOKIE_DOT 1u
#define NS_COOKIE_DOTDOT 2u
#define NS_ROOT_MODE (S_IFDIR | 0755)
#define NS_MAX_DEPTH (1u << 20) /* bound on ".." walks (corruption guard) */
#define NS_PERM_MASK 07777u

static __thread uint64_t ns_thread_writes; /* mds_ns_thread_writes */

/* ------------------------------------------------------------------ basics */

int ns_fail(char *why, int err, const char *fmt, ...)
{
    if (why) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, MDS_WHY_MAX, fmt, ap);
        va_end(ap);
    }
    return -err;
}

void mds_ns_params_from_config(const depfs_config *cfg, mds_ns_params *p)
{
    memset(p, 0, sizeof(*p));
    p->n_servers = cfg->n_ioservers;
    for (unsigned i = 0; i < cfg->n_ioservers && i < CONFIG_MAX_IOSERVERS; i++)
        p->server_ids[i] = cfg->ioservers[i].id;
    p->default_n = cfg->default_n;
    p->default_k = cfg->default_k;
    p->default_su = cfg->default_su;
}

int ns_check_name(const char *name, char *why)
{
    if (!name || !name[0])
        return ns_fail(why, EINVAL, "empty name");
    if (!strcmp(name, ".") || !strcmp(name, ".."))
        return ns_fail(why, EINVAL, "name '%s' is reserved", name);
    if (strchr(name, '/'))
        return ns_fail(why, EINVAL, "name contains '/'");
    if (strlen(name) > WIRE_NAME_MAX)
        return ns_fail(why, ENAMETOOLONG, "name longer than %u bytes", WIRE_NAME_MAX);
    return 0;
}

/* ------------------------------------------------------------ transactions
 *
 * Durability and crash consistency. A mutation is decided and applied under
 * ns->lock with a LevelDB write WITHOUT sync, so every later operation sees
 * it; the lock is released, and only then is the write made durable by a
 * barrier (kv_sync: one fdatasync of LevelDB's log, shared by every writer
 * waiting at that moment - group commit). The requester is answered only
 * after the barrier (here in ns_settle, or by the daemon's syncer thread
 * after mds_ns_defer_sync), so every acknowledged mutation is durable.
 *
 * What a crash can lose: only mutations whose barrier had not completed,
 * i.e. that were never acknowledged to their requester. Between apply and
 * barrier the change is already visible to other clients (a lookup may find
 * the new name, a create may fail EEXIST because of it); if the MDS crashes
 * in that window the change disappears although someone observed it. That
 * is the same as a request the MDS never finished, and the requester sees
 * an error (connection lost) and must not assume success. Mutations are
 * ordered in the log: a later mutation that depended on an earlier,
 * not yet durable one (a create in a directory made just before) is
 * durable only together with it, since a barrier syncs the whole log up to
 * its start. A failed barrier answers EIO and poisons the store (kv_sync):
 * the MDS then refuses every mutation until restarted on a sane disk. */

static void put_counter(kv_batch *b, const char *name, uint64_t v)
{
    uint8_t key[MDS_KEY_MAX], val[8];
    size_t klen = mds_key_counter(key, name);
    mds_put_u64le(val, v);
    kv_batch_put(b, key, klen, val, sizeof(val));
}

int ns_txn_begin(mds_ns *ns, ns_txn *t)
{
    t->ns = ns;
    t->b = kv_batch_new();
    if (!t->b)
        return -ENOMEM;
    t->next_ino = ns->next_ino;
    t->next_client = ns->next_client;
    t->inodes = ns->inodes;
    t->logical_bytes = ns->logical_bytes;
    t->purge_files = ns->purge_files;
    t->purge_bytes = ns->purge_bytes;
    return 0;
}

int ns_txn_commit(ns_txn *t)
{
    mds_ns *ns = t->ns;
    if (t->next_ino != ns->next_ino)
        put_counter(t->b, MDS_COUNTER_NEXT_INO, t->next_ino);
    if (t->next_client != ns->next_client)
        put_counter(t->b, MDS_COUNTER_NEXT_CLIENT, t->next_client);
    if (t->inodes != ns->inodes)
        put_counter(t->b, MDS_COUNTER_INODES, t->inodes);
    if (t->logical_bytes != ns->logical_bytes)
        put_counter(t->b, MDS_COUNTER_LOGICAL_BYTES, t->logical_bytes);
    if (t->purge_files != ns->purge_files)
        put_counter(t->b, MDS_COUNTER_PURGE_FILES, t->purge_files);
    if (t->purge_bytes != ns->purge_bytes)
        put_counter(t->b, MDS_COUNTER_PURGE_BYTES, t->purge_bytes);
    int rc = kv_batch_commit_nosync(ns->kv, t->b);
    kv_batch_free(t->b);
    t->b = NULL;
    if (rc == 0) {
        ns_thread_writes++;
        assert(t->next_ino >= ns->next_ino && t->next_client >= ns->next_client);
        ns->next_ino = t->next_ino;
        ns->next_client = t->next_client;
        ns->inodes = t->inodes;
        ns->logical_bytes = t->logical_bytes;
        ns->purge_files = t->purge_files;
        ns->purge_bytes = t->purge_bytes;
    }
    return rc;
}

void ns_txn_abort(ns_txn *t)
{
    kv_batch_free(t->b);
    t->b = NULL;
}

int ns_settle(mds_ns *ns, int rc, char *why)
{
    if (rc < 0 || ns->defer_sync)
        return rc;
    if (kv_sync(ns->kv) < 0)
        return ns_fail(why, EIO, "store sync failed");
    return 0;
}

void mds_ns_set_holds(mds_ns *ns, mds_holds *holds)
{
    ns->holds = holds;
}

void mds_ns_defer_sync(mds_ns *ns)
{
    ns->defer_sync = true;
}

uint64_t mds_ns_thread_writes(void)
{
    return ns_thread_writes;
}

/* A running total of file sizes (statfs, the purge queue) moves by a
 * file's old and new size. It is a statistic: it saturates instead of
 * wrapping (a store whose total wrapped before it did stays usable), and a
 * total below a file's size only clamps at 0. */
uint64_t ns_account(uint64_t total, uint64_t old_size, uint64_t new_size)
{
    uint64_t v = total >= old_size ? total - old_size : 0;
    return v > UINT64_MAX - new_size ? UINT64_MAX : v + new_size;
}

/* A regular file's size changes: statfs's total, and the purge queue's
 * bytes while it is queued (nlink 0). */
static void account_size(ns_txn *t, const mds_inode *in, uint64_t old_size, uint64_t new_size)
{
    t->logical_bytes = ns_account(t->logical_bytes, old_size, new_size);
    if (in->nlink == 0)
        t->purge_bytes = ns_account(t->purge_bytes, old_size, new_size);
}

/* ------------------------------------------------------- inodes & dirents */

int ns_load_inode(mds_ns *ns, uint64_t ino, mds_inode *out, char *why)
{
    uint8_t key[MDS_KEY_MAX];
    void *val = NULL;
    size_t vlen = 0;
    size_t klen = mds_key_inode(key, ino);
    int rc = kv_get(ns->kv, key, klen, &val, &vlen);
    if (rc == -ENOENT)
        return ns_fail(why, ENOENT, "no inode %llu", (unsigned long long)ino);
    if (rc < 0)
        return ns_fail(why, EIO, "store error reading inode %llu", (unsigned long long)ino);
    rc = mds_inode_decode(ino, val, vlen, out);
    free(val);
    if (rc < 0) {
        log_err("corrupt inode record %llu (%zu bytes)", (unsigned long long)ino, vlen);
        return ns_fail(why, EIO, "corrupt inode record %llu", (unsigned long long)ino);
    }
    return 0;
}

void ns_put_inode(ns_txn *t, const mds_inode *in)
{
    uint8_t key[MDS_KEY_MAX], val[MDS_INODE_REC_MAX];
    size_t klen = mds_key_inode(key, in->ino);
    size_t vlen = mds_inode_encode(in, val);
    kv_batch_put(t->b, key, klen, val, vlen);
}

int ns_load_dir(mds_ns *ns, uint64_t ino, mds_inode *out, char *why)
{
    int rc = ns_load_inode(ns, ino, out, why);
    if (rc < 0)
        return rc;
    if (!S_ISDIR(out->mode))
        return ns_fail(why, ENOTDIR, "inode %llu is not a directory", (unsigned long long)ino);
    return 0;
}

/* The directory a request names by number (a parent, or the directory
 * listed). Gone is ESTALE, not ENOENT: the caller holds a stale handle (a
 * kernel still caches the entry of a directory another client removed,
 * perhaps made again under the same name), and ESTALE makes the kernel
 * look the path up again and retry, as NFS's stale file handle does;
 * ENOENT would say that the name in it does not exist. */
static int ns_load_named_dir(mds_ns *ns, uint64_t ino, mds_inode *out, char *why)
{
    int rc = ns_load_dir(ns, ino, out, why);
    if (rc == -ENOENT)
        return ns_fail(why, ESTALE, "directory %llu is gone (removed since it was looked up)",
                       (unsigned long long)ino);
    return rc;
}

int ns_find_dirent(mds_ns *ns, uint64_t parent, const char *name, uint64_t *ino,
                       uint64_t *seq, uint32_t *mode, char *why)
{
    uint8_t key[MDS_KEY_MAX];
    void *val = NULL;
    size_t vlen = 0;
    size_t klen = mds_key_dirent(key, parent, name, strlen(name));
    int rc = kv_get(ns->kv, key, klen, &val, &vlen);
    if (rc == -ENOENT)
        return ns_fail(why, ENOENT, "'%s' not found", name);
    if (rc < 0)
        return ns_fail(why, EIO, "store error reading a directory entry");
    rc = mds_dirent_val_decode(val, vlen, ino, seq, mode);
    free(val);
    if (rc < 0)
        return ns_fail(why, EIO, "corrupt directory entry '%s'", name);
    return 0;
}

void ns_put_dirent(ns_txn *t, uint64_t parent, const char *name, uint64_t ino, uint64_t seq,
                       uint32_t mode)
{
    uint8_t key[MDS_KEY_MAX], dval[MDS_DIRENT_VAL_LEN], sval[MDS_DIRSEQ_VAL_MAX];
    size_t nlen = strlen(name);
    size_t klen = mds_key_dirent(key, parent, name, nlen);
    mds_dirent_val_encode(dval, ino, seq, mode & S_IFMT);
    kv_batch_put(t->b, key, klen, dval, sizeof(dval));
    klen = mds_key_dirseq(key, parent, seq);
    size_t slen = mds_dirseq_val_encode(sval, ino, mode & S_IFMT, name, nlen);
    kv_batch_put(t->b, key, klen, sval, slen);
}

static void del_dirent(ns_txn *t, uint64_t parent, const char *name, uint64_t seq)
{
    uint8_t key[MDS_KEY_MAX];
    size_t klen = mds_key_dirent(key, parent, name, strlen(name));
    kv_batch_delete(t->b, key, klen);
    klen = mds_key_dirseq(key, parent, seq);
    kv_batch_delete(t->b, key, klen);
}

static int dir_is_empty(mds_ns *ns, uint64_t ino, bool *empty)
{
    uint8_t prefix[MDS_KEY_MAX];
    const void *k, *v;
    size_t kl, vl;
    size_t plen = mds_key_dirent_prefix(prefix, ino);
    kv_iter *it = kv_iter_new(ns->kv, prefix, plen, NULL, 0);
    if (!it)
        return -EIO;
    *empty = !kv_iter_next(it, &k, &kl, &v, &vl);
    kv_iter_free(it);
    return 0;
}

int ns_delete_prefix(ns_txn *t, const uint8_t *prefix, size_t plen)
{
    const void *k, *v;
    size_t kl, vl;
    kv_iter *it = kv_iter_new(t->ns->kv, prefix, plen, NULL, 0);
    if (!it)
        return -EIO;
    while (kv_iter_next(it, &k, &kl, &v, &vl))
        kv_batch_delete(t->b, k, kl);
    kv_iter_free(it);
    return 0;
}

int ns_destroy_inode(ns_txn *t, const mds_inode *in)
{
    uint8_t key[MDS_KEY_MAX];
    size_t klen = mds_key_inode(key, in->ino);
    kv_batch_delete(t->b, key, klen);
    klen = mds_key_xattr_prefix(key, in->ino);
    if (ns_delete_prefix(t, key, klen) < 0)
        return -EIO;
    if (S_ISLNK(in->mode)) {
        klen = mds_key_symlink(key, in->ino);
        kv_batch_delete(t->b, key, klen);
    }
    assert(t->inodes > 0);
    t->inodes--;
    if (S_ISREG(in->mode))
        account_size(t, in, in->size, 0);
    return 0;
}

/* A regular file's last link went: the inode stays, with nlink 0, for the
 * handles still open on it (getattr, setattr, extend by inode number), and
 * is queued for the removal of its strip files, in the same batch. It
 * still counts in statfs until ns_purge.c drops it. */
static void queue_orphan(ns_txn *t, const mds_inode *in, int64_t now, uint64_t min_held_until_s)
{
    uint8_t key[MDS_KEY_MAX], val[MDS_PURGE_VAL_LEN];
    uint64_t now_s = (uint64_t)now / CLOCK_NS_PER_S;
    assert(S_ISREG(in->mode) && in->nlink == 0);
    ns_put_inode(t, in);
    /* the handles that may use it now, kept across a restart (holds.h) */
    uint64_t held = t->ns->holds ? mds_holds_until(t->ns->holds, in->ino, now_s) : 0;
    mds_purge_val_encode(val, now, held > min_held_until_s ? held : min_held_until_s);
    kv_batch_put(t->b, key, mds_key_purge(key, in->ino), val, sizeof(val));
    t->purge_files++;
    t->purge_bytes = ns_account(t->purge_bytes, 0, in->size);
}

/* Drops one link of a non-directory; at zero the inode goes and rm says so. */
int ns_drop_link(ns_txn *t, mds_inode *in, int64_t now, mds_removed *rm)
{
    assert(!S_ISDIR(in->mode) && in->nlink > 0);
    in->nlink--;
    in->name_gen++; /* the name an opener looked up may be the one going */
    in->ctime_ns = now;
    if (in->nlink > 0) {
        ns_put_inode(t, in);
        return 0;
    }
    if (rm) {
        rm->ino = in->ino;
        rm->has_layout = in->has_layout;
        rm->may_have_data = in->has_layout && in->may_have_data;
        rm->lay = in->lay;
        rm->queued = S_ISREG(in->mode);
    }
    if (S_ISREG(in->mode)) {
        queue_orphan(t, in, now, 0);
        return 0;
    }
    return ns_destroy_inode(t, in);
}

/* ----------------------------------------------------------------- layouts */

int ns_build_layout(mds_ns *ns, unsigned n, unsigned k, uint32_t su, uint64_t ino,
                    uint32_t version, layout *out, char *why)
{
    char err[MDS_WHY_MAX];
    if (ns->p.n_servers == 0)
        return ns_fail(why, EINVAL, "no I/O servers configured");
    if (label_check_cluster(n, ns->p.n_servers, err, sizeof(err)) < 0)
        return ns_fail(why, EINVAL, "%s", err);
    if (n == 0 || k == 0 || k > n || n > LAYOUT_MAX_N)
        return ns_fail(why, EINVAL, "invalid layout %u@%u", n, k);
    memset(out, 0, sizeof(*out));
    out->n = n;
    out->k = k;
    out->su = su;
    out->version = version;
    out->codec_version = CODEC_VERSION_CURRENT;
    if (layout_choose_servers(out, ns->p.server_ids, ns->p.n_servers, ino) < 0)
        return ns_fail(why, EINVAL, "cannot place %u units on %u servers", n, ns->p.n_servers);
    if (layout_validate(out, err, sizeof(err)) < 0)
        return ns_fail(why, EINVAL, "invalid layout: %s", err);
    return 0;
}

void mds_ns_effective_policy(mds_ns *ns, const mds_inode *dir, unsigned *n, unsigned *k, uint32_t *su)
{
    *n = dir && dir->pol_n ? dir->pol_n : ns->p.default_n;
    *k = dir && dir->pol_k ? dir->pol_k : ns->p.default_k;
    *su = dir && dir->pol_su ? dir->pol_su : ns->p.default_su;
}

static int choose_layout(mds_ns *ns, const mds_new *nw, const mds_inode *parent, uint64_t ino,
                         layout *out, char *why)
{
    unsigned n, k;
    uint32_t su;
    mds_ns_effective_policy(ns, parent, &n, &k, &su);
    if (nw->want_n)
        n = nw->want_n;
    if (nw->want_k)
        k = nw->want_k;
    if (nw->want_su)
        su = nw->want_su;
    return ns_build_layout(ns, n, k, su, ino, 1, out, why);
}

/* --------------------------------------------------------------- open/close */

int ns_load_counter(mds_ns *ns, const char *name, uint64_t *v)
{
    uint8_t key[MDS_KEY_MAX];
    void *val = NULL;
    size_t vlen = 0;
    int rc = kv_get(ns->kv, key, mds_key_counter(key, name), &val, &vlen);
    if (rc < 0)
        return rc;
    if (vlen != sizeof(uint64_t)) {
        free(val);
        return -EBADMSG;
    }
    *v = mds_get_u64le(val);
    free(val);
    return 0;
}

/* A new namespace's id: random, and nonzero (0 reads as "none"). */
static uint64_t new_namespace_id(void)
{
    uint64_t id = 0;
    while (id == 0)
        auth_random(&id, sizeof(id));
    return id;
}

static int create_root(mds_ns *ns, char *why)
{
    ns_txn t;
    mds_inode root = { 0 };
    int64_t now = clock_real_ns();

    root.ino = MDS_ROOT_INO;
    root.mode = NS_ROOT_MODE;
    root.nlink = 2;
    root.atime_ns = root.mtime_ns = root.ctime_ns = now;
    root.parent = MDS_ROOT_INO;
    root.next_seq = NS_FIRST_DIRENT_SEQ;
    ns->next_ino = MDS_ROOT_INO + 1;
    ns->next_client = 1;
    ns->inodes = 1;
    ns->logical_bytes = 0;
    ns->id = new_namespace_id();
    if (ns_txn_begin(ns, &t) < 0)
        return ns_fail(why, ENOMEM, "out of memory");
    ns_put_inode(&t, &root);
    put_counter(t.b, MDS_COUNTER_NAMESPACE_ID, ns->id);
    put_counter(t.b, MDS_COUNTER_NEXT_INO, ns->next_ino);
    put_counter(t.b, MDS_COUNTER_NEXT_CLIENT, ns->next_client);
    put_counter(t.b, MDS_COUNTER_INODES, ns->inodes);
    put_counter(t.b, MDS_COUNTER_LOGICAL_BYTES, ns->logical_bytes);
    put_counter(t.b, MDS_COUNTER_PURGE_FILES, 0);
    put_counter(t.b, MDS_COUNTER_PURGE_BYTES, 0);
    put_counter(t.b, MDS_COUNTER_HOLDS_UNTIL, 0); /* no hold was given before */
    if (ns_txn_commit(&t) < 0 || kv_sync(ns->kv) < 0)
        return ns_fail(why, EIO, "cannot write the root inode");
    log_info("created a new namespace (root inode %u)", MDS_ROOT_INO);
    return 0;
}

/* The namespace's id; a store from before ids gets one now, durably
 * before any tag bound to it is given. */
static int load_namespace_id(mds_ns *ns, char *why)
{
    int rc = ns_load_counter(ns, MDS_COUNTER_NAMESPACE_ID, &ns->id);
    if (rc == 0 && ns->id != 0)
        return 0;
    if (rc != -ENOENT)
        return ns_fail(why, EIO, "store has a corrupt namespace id");
    ns_txn t;
    ns->id = new_namespace_id();
    if (ns_txn_begin(ns, &t) < 0)
        return ns_fail(why, ENOMEM, "out of memory");
    put_counter(t.b, MDS_COUNTER_NAMESPACE_ID, ns->id);
    if (ns_txn_commit(&t) < 0 || kv_sync(ns->kv) < 0)
        return ns_fail(why, EIO, "cannot store the namespace id");
    log_info("gave the namespace an id (a store from before namespace ids)");
    return 0;
}

static int load_counters(mds_ns *ns, char *why)
{
    if (ns_load_counter(ns, MDS_COUNTER_NEXT_INO, &ns->next_ino) < 0 ||
        ns_load_counter(ns, MDS_COUNTER_NEXT_CLIENT, &ns->next_client) < 0 ||
        ns_load_counter(ns, MDS_COUNTER_INODES, &ns->inodes) < 0 ||
        ns_load_counter(ns, MDS_COUNTER_LOGICAL_BYTES, &ns->logical_bytes) < 0)
        return ns_fail(why, EIO, "store has a root inode but missing or corrupt counters");
    /* stores from before the purge queue have neither (and no queue) */
    int rc = ns_load_counter(ns, MDS_COUNTER_PURGE_FILES, &ns->purge_files);
    if (rc == 0)
        rc = ns_load_counter(ns, MDS_COUNTER_PURGE_BYTES, &ns->purge_bytes);
    if (rc == -ENOENT)
        ns->purge_files = ns->purge_bytes = 0;
    else if (rc < 0)
        return ns_fail(why, EIO, "store has corrupt purge queue counters");
    if (ns->next_ino <= MDS_ROOT_INO || ns->next_client == 0)
        return ns_fail(why, EIO, "store counters out of range");
    return load_namespace_id(ns, why);
}

/* This start's names epoch: one more start counted, durably before any
 * epoch of this run is given out. */
static int start_names_epoch(mds_ns *ns, char *why)
{
    uint64_t boots = 0;
    int rc = ns_load_counter(ns, MDS_COUNTER_NAMES_BOOT, &boots);
    if (rc < 0 && rc != -ENOENT)
        return ns_fail(why, EIO, "store has a corrupt names epoch");
    if (boots + 1 >= (UINT64_C(1) << (64 - MDS_NAMES_EPOCH_BOOT_SHIFT)))
        return ns_fail(why, EOVERFLOW, "names epoch: %llu starts, no more fit",
                       (unsigned long long)boots);
    boots++;
    ns_txn t;
    if (ns_txn_begin(ns, &t) < 0)
        return ns_fail(why, ENOMEM, "out of memory");
    put_counter(t.b, MDS_COUNTER_NAMES_BOOT, boots);
    if (ns_txn_commit(&t) < 0 || kv_sync(ns->kv) < 0)
        return ns_fail(why, EIO, "cannot store the names epoch");
    atomic_store(&ns->names_epoch, boots << MDS_NAMES_EPOCH_BOOT_SHIFT);
    return 0;
}

uint64_t mds_ns_names_epoch(mds_ns *ns)
{
    return atomic_load(&ns->names_epoch);
}

int mds_ns_names_current(mds_ns *ns, uint64_t dir, uint64_t epoch, uint64_t client, char *why)
{
    int rc = 0;
    pthread_rwlock_rdlock(&ns->lock);
    for (unsigned depth = 0;; depth++) {
        mds_inode in;
        if (depth == MDS_NAMES_WALK_MAX) {
            log_warn("directory %llu: more than %u levels up to the root, not checked",
                     (unsigned long long)dir, MDS_NAMES_WALK_MAX);
            break;
        }
        if (ns_load_inode(ns, dir, &in, NULL) < 0 || !S_ISDIR(in.mode))
            break;
        if (in.moved_epoch > epoch && in.moved_by != client) {
            rc = ns_fail(why, ESTALE, "directory %llu was moved since the path was looked up: "
                         "look it up again", (unsigned long long)in.ino);
            break;
        }
        if (in.ino == MDS_ROOT_INO)
            break;
        dir = in.parent;
    }
    pthread_rwlock_unlock(&ns->lock);
    return rc;
}

int mds_ns_open(kvstore *kv, const mds_ns_params *p, mds_ns **out, char *why)
{
    mds_inode root;
    pthread_rwlockattr_t attr;
    mds_ns *ns = calloc(1, sizeof(*ns));
    if (!ns)
        return ns_fail(why, ENOMEM, "out of memory");
    ns->kv = kv;
    ns->p = *p;
    assert(ns->p.n_servers <= CONFIG_MAX_IOSERVERS);
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&ns->lock, &attr);
    pthread_rwlockattr_destroy(&attr);

    int rc = ns_load_inode(ns, MDS_ROOT_INO, &root, why);
    if (rc == -ENOENT)
        rc = create_root(ns, why);
    else if (rc == 0)
        rc = load_counters(ns, why);
    if (rc == 0)
        rc = start_names_epoch(ns, why);
    if (rc < 0) {
        mds_ns_close(ns);
        return rc;
    }
    log_info("namespace: %llu inodes, %llu logical bytes, next inode %llu; purge queue: %llu "
             "files, %llu bytes", (unsigned long long)ns->inodes,
             (unsigned long long)ns->logical_bytes, (unsigned long long)ns->next_ino,
             (unsigned long long)ns->purge_files, (unsigned long long)ns->purge_bytes);
    *out = ns;
    return 0;
}

uint64_t mds_ns_id(const mds_ns *ns)
{
    return ns->id;
}

void mds_ns_close(mds_ns *ns)
{
    if (!ns)
        return;
    pthread_rwlock_destroy(&ns->lock);
    free(ns);
}

/* ------------------------------------------------------------- lookups */

int mds_ns_lookup(mds_ns *ns, const mds_caller *who, uint64_t parent, const char *name, mds_inode *out, char *why)
{
    mds_inode dir;
    uint64_t ino, seq;
    uint32_t mode;
    int rc;

    pthread_rwlock_rdlock(&ns->lock);
    rc = ns_load_named_dir(ns, parent, &dir, why);
    if (rc == 0 && who)
        rc = perm_lookup(who, &dir, why);
    if (rc < 0)
        goto out;
    if (name && !strcmp(name, ".")) {
        *out = dir;
        goto out;
    }
    if (name && !strcmp(name, "..")) {
        rc = ns_load_inode(ns, dir.parent, out, why);
        goto out;
    }
    rc = ns_check_name(name, why);
    if (rc < 0)
        goto out;
    rc = ns_find_dirent(ns, parent, name, &ino, &seq, &mode, why);
    if (rc < 0)
        goto out;
    rc = ns_load_inode(ns, ino, out, why);
out:
    pthread_rwlock_unlock(&ns->lock);
    return rc;
}

int mds_ns_getattr(mds_ns *ns, uint64_t ino, mds_inode *out, char *why)
{
    pthread_rwlock_rdlock(&ns->lock);
    int rc = ns_load_inode(ns, ino, out, why);
    pthread_rwlock_unlock(&ns->lock);
    return rc;
}

/* A new open of regular file in, once permitted: a file a migrate
 * replaced is ESTALE (the opener looked its name up before the swap: it
 * must look it up again and open the copy). An open for writing changes
 * nothing here: a writer is known to MDS_MIGRATE_SWAP by its hold
 * (mds/holds.h, marked by the handler) while its handle is open, and by
 * the data version its size commits (MDS_EXTEND, every flush after
 * writes) and size changes bump once it wrote. */
static int grant_open(const mds_inode *in, const mds_open_name *on, char *why)
{
    if (S_ISREG(in->mode) && in->migrated_away)
        return ns_fail(why, ESTALE, "inode %llu was replaced by its migrated copy: look the name "
                       "up again", (unsigned long long)in->ino);
    if (!S_ISREG(in->mode) || !on->linked)
        return 0;
    if (in->nlink == 0)
        return ns_fail(why, ESTALE, "inode %llu has no name any more: look the name up again",
                       (unsigned long long)in->ino);
    if (on->has_name_gen && on->name_gen != in->name_gen)
        return ns_fail(why, ESTALE, "a name of inode %llu went or moved since it was looked up: "
                       "look the name up again", (unsigned long long)in->ino);
    return 0;
}

int mds_ns_open_file(mds_ns *ns, const mds_caller *who, uint64_t ino, uint32_t flags,
                     const mds_open_name *on, mds_inode *out, char *why)
{
    pthread_rwlock_rdlock(&ns->lock);
    int rc = ns_load_inode(ns, ino, out, why);
    if (rc == 0 && who && S_ISREG(out->mode))
        rc = perm_open(who, out, flags, why);
    if (rc == 0)
        rc = grant_open(out, on, why);
    pthread_rwlock_unlock(&ns->lock);
    return rc;
}

/* -------------------------------------------------------------- creation */

static void init_child(mds_ns *ns, const mds_inode *parent, const mds_new *nw, uint32_t mode,
                       int64_t now, mds_inode *c)
{
    memset(c, 0, sizeof(*c));
    c->ino = ns->next_ino;
    c->mode = mode;
    c->uid = nw->uid;
    c->gid = nw->gid;
    c->nlink = S_ISDIR(mode) ? 2 : 1;
    c->atime_ns = c->mtime_ns = c->ctime_ns = now;
    if (S_ISCHR(mode) || S_ISBLK(mode))
        c->rdev = nw->rdev;
    if (parent->mode & S_ISGID) {
        c->gid = parent->gid;
        if (S_ISDIR(mode))
            c->mode |= S_ISGID;
    }
    if (S_ISDIR(mode)) {
        c->parent = parent->ino;
        c->next_seq = NS_FIRST_DIRENT_SEQ;
        c->pol_n = parent->pol_n;
        c->pol_k = parent->pol_k;
        c->pol_su = parent->pol_su;
    }
    if (S_ISLNK(mode))
        c->size = strlen(nw->target);
}

/* The existing entry for a non-exclusive create, once who may open it
 * for open_flags. */
static int create_existing(mds_ns *ns, const mds_caller *who, uint64_t ino, uint32_t open_flags,
                           mds_inode *out, char *why)
{
    int rc = ns_load_inode(ns, ino, out, why);
    if (rc == 0 && S_ISDIR(out->mode))
        rc = ns_fail(why, EISDIR, "'%llu' is a directory", (unsigned long long)ino);
    if (rc == 0 && who && S_ISREG(out->mode))
        rc = perm_open(who, out, open_flags, why);
    if (rc == 0)
        rc = grant_open(out, &(mds_open_name){ .linked = true }, why); /* found by its name */
    return rc;
}

/* return_existing: a non-exclusive create, opening for open_flags. */
static int make_node(mds_ns *ns, const mds_new *nw_in, uint32_t mode, bool return_existing,
                     uint32_t open_flags, mds_inode *out, char *why)
{
    mds_inode parent, child;
    mds_new nw_buf = *nw_in, *nw = &nw_buf;
    uint64_t ino, seq;
    uint32_t emode;
    ns_txn t;
    int rc = nw->unlinked ? 0 : ns_check_name(nw->name, why);
    if (rc < 0)
        return rc;

    pthread_rwlock_wrlock(&ns->lock);
    rc = ns_load_named_dir(ns, nw->parent, &parent, why);
    if (rc == 0 && nw->who)
        rc = perm_lookup(nw->who, &parent, why);
    if (rc < 0)
        goto out;
    rc = nw->unlinked ? -ENOENT : ns_find_dirent(ns, nw->parent, nw->name, &ino, &seq, &emode, NULL);
    if (rc == 0) {
        rc = return_existing ? create_existing(ns, nw->who, ino, open_flags, out, why)
                             : ns_fail(why, EEXIST, "'%s' exists", nw->name);
        goto done; /* the parent is as it was: still its current attributes */
    }
    if (rc != -ENOENT)
        goto out;
    if (nw->who) {
        rc = perm_create(nw->who, &parent, nw, &mode, why);
        if (rc < 0)
            goto out;
    }
    if (S_ISDIR(mode) && parent.nlink >= MDS_LINK_MAX) {
        rc = ns_fail(why, EMLINK, "too many subdirectories");
        goto out;
    }
    int64_t now = clock_real_ns();
    init_child(ns, &parent, nw, mode, now, &child);
    if (S_ISREG(mode)) {
        rc = choose_layout(ns, nw, &parent, child.ino, &child.lay, why);
        if (rc < 0)
            goto out;
        child.has_layout = true;
        child.alloc_known = true; /* a new file occupies nothing yet */
        child.alloc_bytes = 0;
    }
    rc = ns_txn_begin(ns, &t);
    if (rc < 0)
        goto out;
    t.next_ino++;
    t.inodes++;
    if (nw->unlinked) { /* no name: held by its creator only, purged after */
        assert(S_ISREG(mode));
        child.nlink = 0;
        queue_orphan(&t, &child, now, nw->held_until_s);
        goto commit;
    }
    ns_put_inode(&t, &child);
    if (S_ISLNK(mode)) {
        uint8_t key[MDS_KEY_MAX];
        kv_batch_put(t.b, key, mds_key_symlink(key, child.ino), nw->target, strlen(nw->target));
    }
    ns_put_dirent(&t, parent.ino, nw->name, child.ino, parent.next_seq++, mode);
    parent.mtime_ns = parent.ctime_ns = now;
    if (S_ISDIR(mode))
        parent.nlink++;
    ns_put_inode(&t, &parent);
commit:
    rc = ns_txn_commit(&t);
    if (rc < 0) {
        rc = ns_fail(why, EIO, "store write failed");
        goto out;
    }
    *out = child;
done:
    if (rc == 0 && nw->dir_out)
        *nw->dir_out = parent;
out:
    pthread_rwlock_unlock(&ns->lock);
    return ns_settle(ns, rc, why);
}

int mds_ns_create(mds_ns *ns, const mds_new *nw, uint32_t flags, mds_inode *out, char *why)
{
    uint32_t type = nw->mode & S_IFMT;
    if (type != 0 && type != S_IFREG)
        return ns_fail(why, EINVAL, "create makes regular files only (mode %o)", nw->mode);
    if (nw->unlinked && (flags & O_EXCL))
        flags &= ~(uint32_t)O_EXCL; /* a file without a name is always new */
    return make_node(ns, nw, S_IFREG | (nw->mode & NS_PERM_MASK), !(flags & O_EXCL),
                     flags & (O_ACCMODE | O_TRUNC), out, why);
}

int mds_ns_mknod(mds_ns *ns, const mds_new *nw, mds_inode *out, char *why)
{
    uint32_t type = nw->mode & S_IFMT;
    switch (type) {
    case 0:
    case S_IFREG:
        type = S_IFREG;
        break;
    case S_IFIFO:
    case S_IFSOCK:
    case S_IFCHR:
    case S_IFBLK:
        break;
    case S_IFDIR:
        return ns_fail(why, EPERM, "mknod cannot make directories");
    default:
        return ns_fail(why, EINVAL, "mknod: bad file type in mode %o", nw->mode);
    }
    return make_node(ns, nw, type | (nw->mode & NS_PERM_MASK), false, 0, out, why);
}

int mds_ns_mkdir(mds_ns *ns, const mds_new *nw, mds_inode *out, char *why)
{
    uint32_t type = nw->mode & S_IFMT;
    if (type != 0 && type != S_IFDIR)
        return ns_fail(why, EINVAL, "mkdir makes directories only (mode %o)", nw->mode);
    return make_node(ns, nw, S_IFDIR | (nw->mode & (S_IRWXU | S_IRWXG | S_IRWXO | S_ISVTX)), false,
                     0, out, why);
}

int mds_ns_symlink(mds_ns *ns, const mds_new *nw, mds_inode *out, char *why)
{
    uint32_t type = nw->mode & S_IFMT;
    if (type != 0 && type != S_IFLNK)
        return ns_fail(why, EINVAL, "symlink makes symlinks only (mode %o)", nw->mode);
    if (!nw->target || !nw->target[0])
        return ns_fail(why, ENOENT, "empty symlink target");
    if (strlen(nw->target) > WIRE_SYMLINK_MAX)
        return ns_fail(why, ENAMETOOLONG, "symlink target longer than %u bytes", WIRE_SYMLINK_MAX);
    return make_node(ns, nw, S_IFLNK | 0777, false, 0, out, why);
}

/* ------------------------------------------------------------------ removal */

int mds_ns_unlink(mds_ns *ns, const mds_caller *who, uint64_t parent, const char *name, mds_removed *rm, char *why)
{
    mds_inode dir, victim;
    uint64_t ino, seq;
    uint32_t mode;
    ns_txn t;
    int rc = ns_check_name(name, why);
    if (rc < 0)
        return rc;
    memset(rm, 0, sizeof(*rm));

    pthread_rwlock_wrlock(&ns->lock);
    rc = ns_load_named_dir(ns, parent, &dir, why);
    if (rc == 0)
        rc = ns_find_dirent(ns, parent, name, &ino, &seq, &mode, why);
    if (rc == 0)
        rc = ns_load_inode(ns, ino, &victim, why);
    if (rc == 0 && who)
        rc = perm_remove(who, &dir, &victim, why);
    if (rc < 0)
        goto out;
    if (S_ISDIR(victim.mode)) {
        rc = ns_fail(why, EISDIR, "'%s' is a directory", name);
        goto out;
    }
    rc = ns_txn_begin(ns, &t);
    if (rc < 0)
        goto out;
    int64_t now = clock_real_ns();
    del_dirent(&t, parent, name, seq);
    dir.mtime_ns = dir.ctime_ns = now;
    ns_put_inode(&t, &dir);
    rc = ns_drop_link(&t, &victim, now, rm);
    if (rc < 0) {
        ns_txn_abort(&t);
        goto out;
    }
    rc = ns_txn_commit(&t);
    if (rc < 0) {
        memset(rm, 0, sizeof(*rm));
        rc = ns_fail(why, EIO, "store write failed");
    } else {
        rm->has_dir = true;
        rm->dir = dir;
    }
out:
    pthread_rwlock_unlock(&ns->lock);
    return ns_settle(ns, rc, why);
}

int mds_ns_rmdir(mds_ns *ns, const mds_caller *who, uint64_t parent, const char *name, char *why)
{
    mds_inode dir, victim;
    uint64_t ino, seq;
    uint32_t mode;
    bool empty = false;
    ns_txn t;
    int rc = ns_check_name(name, why);
    if (rc < 0)
        return rc;

    pthread_rwlock_wrlock(&ns->lock);
    rc = ns_load_named_dir(ns, parent, &dir, why);
    if (rc == 0)
        rc = ns_find_dirent(ns, parent, name, &ino, &seq, &mode, why);
    if (rc == 0)
        rc = ns_load_inode(ns, ino, &victim, why);
    if (rc == 0 && who)
        rc = perm_remove(who, &dir, &victim, why);
    if (rc < 0)
        goto out;
    if (!S_ISDIR(victim.mode)) {
        rc = ns_fail(why, ENOTDIR, "'%s' is not a directory", name);
        goto out;
    }
    if (dir_is_empty(ns, ino, &empty) < 0) {
        rc = ns_fail(why, EIO, "store error");
        goto out;
    }
    if (!empty) {
        rc = ns_fail(why, ENOTEMPTY, "'%s' is not empty", name);
        goto out;
    }
    rc = ns_txn_begin(ns, &t);
    if (rc < 0)
        goto out;
    int64_t now = clock_real_ns();
    del_dirent(&t, parent, name, seq);
    assert(dir.nlink > 2);
    dir.nlink--;
    dir.mtime_ns = dir.ctime_ns = now;
    ns_put_inode(&t, &dir);
    rc = ns_destroy_inode(&t, &victim);
    rc = rc < 0 ? (ns_txn_abort(&t), rc) : ns_txn_commit(&t);
    if (rc < 0)
        rc = ns_fail(why, EIO, "store write failed");
out:
    pthread_rwlock_unlock(&ns->lock);
    return ns_settle(ns, rc, why);
}

/* ------------------------------------------------------------------- rename */

/* -EINVAL when dir `ino` is `ancestor` or lies below it. */
static int check_not_below(mds_ns *ns, uint64_t ino, uint64_t ancestor, char *why)
{
    mds_inode cur;
    for (unsigned depth = 0; depth < NS_MAX_DEPTH; depth++) {
        if (ino == ancestor)
            return ns_fail(why, EINVAL, "cannot move a directory into its own subtree");
        if (ino == MDS_ROOT_INO)
            return 0;
        int rc = ns_load_inode(ns, ino, &cur, why);
        if (rc < 0)
            return rc == -ENOENT ? ns_fail(why, EIO, "broken '..' chain") : rc;
        ino = cur.parent;
    }
    return ns_fail(why, EIO, "directory chain too deep");
}

/* Everything rename needs, loaded once. dpar aliases spar when the parents
 * are the same directory. */
typedef struct rn_ctx {
    mds_inode spar_buf, dpar_buf, src, dst;
    mds_inode *spar, *dpar;
    uint64_t sseq, dseq;
    bool dst_exists;
} rn_ctx;

static int rename_load(mds_ns *ns, rn_ctx *c, uint64_t sp, const char *sname, uint64_t dp,
                       const char *dname, char *why)
{
    uint64_t ino;
    uint32_t mode;
    c->spar = &c->spar_buf;
    c->dpar = sp == dp ? &c->spar_buf : &c->dpar_buf;
    int rc = ns_load_named_dir(ns, sp, c->spar, why);
    if (rc == 0 && sp != dp)
        rc = ns_load_named_dir(ns, dp, c->dpar, why);
    if (rc == 0)
        rc = ns_find_dirent(ns, sp, sname, &ino, &c->sseq, &mode, why);
    if (rc == 0)
        rc = ns_load_inode(ns, ino, &c->src, why);
    if (rc < 0)
        return rc;
    rc = ns_find_dirent(ns, dp, dname, &ino, &c->dseq, &mode, NULL);
    if (rc == -ENOENT)
        return 0;
    if (rc < 0)
        return ns_fail(why, EIO, "store error");
    c->dst_exists = true;
    return ns_load_inode(ns, ino, &c->dst, why);
}

static int rename_check(mds_ns *ns, rn_ctx *c, unsigned flags, char *why)
{
    bool sdir = S_ISDIR(c->src.mode), ddir = c->dst_exists && S_ISDIR(c->dst.mode);
    bool empty = false;
    int rc;

    if ((flags & MDS_RENAME_EXCHANGE) && !c->dst_exists)
        return ns_fail(why, ENOENT, "rename exchange: target does not exist");
    if ((flags & MDS_RENAME_NOREPLACE) && c->dst_exists)
        return ns_fail(why, EEXIST, "rename: target exists");
    if (sdir && c->spar != c->dpar) {
        rc = check_not_below(ns, c->dpar->ino, c->src.ino, why);
        if (rc < 0)
            return rc;
    }
    if ((flags & MDS_RENAME_EXCHANGE) && ddir && c->spar != c->dpar) {
        rc = check_not_below(ns, c->spar->ino, c->dst.ino, why);
        if (rc < 0)
            return rc;
    }
    if ((flags & MDS_RENAME_EXCHANGE) || !c->dst_exists) {
        if (sdir && c->spar != c->dpar && !ddir && c->dpar->nlink >= MDS_LINK_MAX)
            return ns_fail(why, EMLINK, "too many subdirectories");
        return 0;
    }
    if (sdir && !ddir)
        return ns_fail(why, ENOTDIR, "rename: directory over a non-directory");
    if (!sdir && ddir)
        return ns_fail(why, EISDIR, "rename: non-directory over a directory");
    if (ddir) {
        if (dir_is_empty(ns, c->dst.ino, &empty) < 0)
            return ns_fail(why, EIO, "store error");
        if (!empty)
            return ns_fail(why, ENOTEMPTY, "rename: target directory not empty");
    }
    return 0;
}

/* A directory `d` moves from parent `from` to parent `to`. */
static void move_dir_links(mds_inode *d, mds_inode *from, mds_inode *to)
{
    if (from == to)
        return;
    d->parent = to->ino;
    assert(from->nlink > 2);
    from->nlink--;
    to->nlink++;
}

static int rename_apply(ns_txn *t, rn_ctx *c, const char *sname, const char *dname, unsigned flags,
                        mds_removed *rm)
{
    int64_t now = clock_real_ns();
    int rc = 0;

    if (flags & MDS_RENAME_EXCHANGE) {
        ns_put_dirent(t, c->spar->ino, sname, c->dst.ino, c->sseq, c->dst.mode);
        ns_put_dirent(t, c->dpar->ino, dname, c->src.ino, c->dseq, c->src.mode);
        if (S_ISDIR(c->src.mode))
            move_dir_links(&c->src, c->spar, c->dpar);
        if (S_ISDIR(c->dst.mode))
            move_dir_links(&c->dst, c->dpar, c->spar);
        c->dst.ctime_ns = now;
        c->dst.name_gen++;
        ns_put_inode(t, &c->dst);
    } else {
        del_dirent(t, c->spar->ino, sname, c->sseq);
        if (c->dst_exists) {
            del_dirent(t, c->dpar->ino, dname, c->dseq);
            if (S_ISDIR(c->dst.mode)) {
                c->dpar->nlink--;
                rc = ns_destroy_inode(t, &c->dst);
            } else {
                rc = ns_drop_link(t, &c->dst, now, rm);
            }
        }
        ns_put_dirent(t, c->dpar->ino, dname, c->src.ino, c->dpar->next_seq++, c->src.mode);
        if (S_ISDIR(c->src.mode))
            move_dir_links(&c->src, c->spar, c->dpar);
    }
    c->src.ctime_ns = now;
    c->src.name_gen++; /* its old name is gone */
    ns_put_inode(t, &c->src);
    c->spar->mtime_ns = c->spar->ctime_ns = now;
    c->dpar->mtime_ns = c->dpar->ctime_ns = now;
    ns_put_inode(t, c->spar);
    if (c->dpar != c->spar)
        ns_put_inode(t, c->dpar);
    return rc;
}

int mds_ns_rename(mds_ns *ns, const mds_caller *who, uint64_t parent, const char *name, uint64_t new_parent,
                  const char *new_name, unsigned flags, mds_removed *rm, mds_inode *moved, char *why)
{
    rn_ctx c;
    ns_txn t;
    int rc;

    memset(rm, 0, sizeof(*rm));
    if (moved)
        memset(moved, 0, sizeof(*moved));
    memset(&c, 0, sizeof(c));
    if ((flags & ~(MDS_RENAME_NOREPLACE | MDS_RENAME_EXCHANGE)) ||
        flags == (MDS_RENAME_NOREPLACE | MDS_RENAME_EXCHANGE))
        return ns_fail(why, EINVAL, "rename: unsupported flags 0x%x", flags);
    rc = ns_check_name(name, why);
    if (rc == 0)
        rc = ns_check_name(new_name, why);
    if (rc < 0)
        return rc;

    pthread_rwlock_wrlock(&ns->lock);
    rc = rename_load(ns, &c, parent, name, new_parent, new_name, why);
    if (rc == 0 && who)
        rc = perm_rename(who, c.spar, &c.src, c.dpar, c.dst_exists ? &c.dst : NULL,
                         (flags & MDS_RENAME_EXCHANGE) != 0, why);
    if (rc < 0)
        goto out;
    if (c.dst_exists && c.dst.ino == c.src.ino) {
        rc = (flags & MDS_RENAME_NOREPLACE) ? ns_fail(why, EEXIST, "rename: target exists") : 0;
        goto out; /* POSIX: both names link the same inode: nothing to do */
    }
    rc = rename_check(ns, &c, flags, why);
    if (rc < 0)
        goto out;
    rc = ns_txn_begin(ns, &t);
    if (rc < 0)
        goto out;
    /* a directory that moves records it (mds_ns_names_current) */
    uint64_t epoch = atomic_load(&ns->names_epoch) + 1;
    mds_inode *moves[2] = { S_ISDIR(c.src.mode) ? &c.src : NULL,
                            (flags & MDS_RENAME_EXCHANGE) && c.dst_exists && S_ISDIR(c.dst.mode)
                                ? &c.dst : NULL };
    for (unsigned i = 0; i < 2; i++)
        if (moves[i]) {
            moves[i]->moved_epoch = epoch;
            moves[i]->moved_by = who ? who->client_id : 0;
        }
    rc = rename_apply(&t, &c, name, new_name, flags, rm);
    rc = rc < 0 ? (ns_txn_abort(&t), rc) : ns_txn_commit(&t);
    if (rc < 0) {
        memset(rm, 0, sizeof(*rm));
        rc = ns_fail(why, EIO, "store write failed");
    } else {
        if (moved)
            *moved = c.src;
        /* a directory moved: names below it given before lead elsewhere
         * now (after the commit: see mds_ns_names_epoch; renames are
         * serialized by the namespace lock) */
        if (moves[0] || moves[1])
            atomic_store(&ns->names_epoch, epoch);
    }
out:
    pthread_rwlock_unlock(&ns->lock);
    return ns_settle(ns, rc, why);
}

/* --------------------------------------------------------------------- link */

int mds_ns_link(mds_ns *ns, const mds_caller *who, uint64_t ino, uint64_t new_parent, const char *new_name,
                mds_inode *out, char *why)
{
    mds_inode dir, in;
    uint64_t eino, seq;
    uint32_t mode;
    ns_txn t;
    int rc = ns_check_name(new_name, why);
    if (rc < 0)
        return rc;

    pthread_rwlock_wrlock(&ns->lock);
    rc = ns_load_inode(ns, ino, &in, why);
    if (rc == 0)
        rc = ns_load_named_dir(ns, new_parent, &dir, why);
    if (rc == 0 && who)
        rc = perm_link(who, &dir, &in, why);
    if (rc < 0)
        goto out;
    if (S_ISDIR(in.mode)) {
        rc = ns_fail(why, EPERM, "hard links to directories are not allowed");
        goto out;
    }
    if (in.nlink == 0) { /* as Linux's linkat of an unlinked file */
        rc = ns_fail(why, ENOENT, "inode %llu was unlinked", (unsigned long long)ino);
        goto out;
    }
    if (in.nlink >= MDS_LINK_MAX) {
        rc = ns_fail(why, EMLINK, "too many links");
        goto out;
    }
    rc = ns_find_dirent(ns, new_parent, new_name, &eino, &seq, &mode, NULL);
    if (rc == 0 || rc != -ENOENT) {
        rc = rc == 0 ? ns_fail(why, EEXIST, "'%s' exists", new_name) : ns_fail(why, EIO, "store error");
        goto out;
    }
    rc = ns_txn_begin(ns, &t);
    if (rc < 0)
        goto out;
    int64_t now = clock_real_ns();
    in.nlink++;
    in.ctime_ns = now;
    ns_put_inode(&t, &in);
    ns_put_dirent(&t, dir.ino, new_name, in.ino, dir.next_seq++, in.mode);
    dir.mtime_ns = dir.ctime_ns = now;
    ns_put_inode(&t, &dir);
    rc = ns_txn_commit(&t);
    if (rc < 0)
        rc = ns_fail(why, EIO, "store write failed");
    else
        *out = in;
out:
    pthread_rwlock_unlock(&ns->lock);
    return ns_settle(ns, rc, why);
}

/* ------------------------------------------------------------------ readdir */

/* Where a listing's entries go: fn, or afn with each entry's inode (NULL
 * when the caller may not search the directory). */
typedef struct readdir_sink {
    mds_dirent_fn fn;
    mds_dirent_attr_fn afn;
    bool load;  /* afn: the caller may search the directory: load inodes */
    void *arg;
} readdir_sink;

static int sink_emit(mds_ns *ns, const readdir_sink *s, const char *name, size_t nlen, uint64_t ino,
                     uint32_t mode, uint64_t cookie, int *stop, char *why)
{
    if (!s->afn) {
        *stop = s->fn(s->arg, name, nlen, ino, mode, cookie);
        return 0;
    }
    mds_inode in;
    const mds_inode *inp = NULL;
    bool xattrs = false;
    if (s->load) {
        int rc = ns_load_inode(ns, ino, &in, why);
        if (rc < 0)
            return rc;
        inp = &in;
        xattrs = ns_has_xattrs(ns, ino);
    }
    *stop = s->afn(s->arg, name, nlen, ino, mode, cookie, inp, xattrs);
    return 0;
}

static int readdir_store(mds_ns *ns, uint64_t dir, uint64_t start_seq, unsigned max, unsigned *count,
                         const readdir_sink *sink, bool *eof, char *why)
{
    uint8_t prefix[MDS_KEY_MAX], start[MDS_KEY_MAX];
    const void *k, *v;
    size_t kl, vl;
    size_t plen = mds_key_dirseq_prefix(prefix, dir);
    size_t slen = mds_key_dirseq(start, dir, start_seq);
    kv_iter *it = kv_iter_new(ns->kv, prefix, plen, start, slen);
    int rc = 0;

    if (!it)
        return ns_fail(why, EIO, "store error");
    *eof = true;
    while (kv_iter_next(it, &k, &kl, &v, &vl)) {
        uint64_t ino, seq;
        uint32_t mode;
        const char *name;
        size_t nlen;
        int stop = 0;
        if (*count >= max) {
            *eof = false;
            break;
        }
        if (kl != plen + 8 || mds_dirseq_val_decode(v, vl, &ino, &mode, &name, &nlen) < 0) {
            rc = ns_fail(why, EIO, "corrupt directory entry in %llu", (unsigned long long)dir);
            break;
        }
        seq = mds_key_dirseq_seq(k);
        (*count)++;
        rc = sink_emit(ns, sink, name, nlen, ino, mode, seq, &stop, why);
        if (rc < 0)
            break;
        if (stop != 0) {
            *eof = false;
            break;
        }
    }
    kv_iter_free(it);
    return rc;
}

static int readdir_sinked(mds_ns *ns, const mds_caller *who, uint64_t ino, uint64_t cookie,
                          unsigned max_entries, readdir_sink *sink, bool *eof, mds_inode *dir_out,
                          char *why)
{
    mds_inode dir;
    unsigned count = 0;
    unsigned max = max_entries == 0 || max_entries > MDS_READDIR_MAX ? MDS_READDIR_MAX : max_entries;
    int stop = 0;
    int rc;

    *eof = false;
    pthread_rwlock_rdlock(&ns->lock);
    rc = ns_load_named_dir(ns, ino, &dir, why);
    if (rc == 0 && who)
        rc = perm_readdir(who, &dir, why);
    if (rc < 0)
        goto out;
    if (dir_out)
        *dir_out = dir;
    /* POSIX: read lists the names; only search reaches the entries */
    sink->load = sink->afn && (!who || perm_access(who, &dir, PERM_EXEC, NULL) == 0);
    if (cookie < NS_COOKIE_DOT) {
        count++;
        rc = sink_emit(ns, sink, ".", 1, dir.ino, S_IFDIR, NS_COOKIE_DOT, &stop, why);
        if (rc < 0 || stop != 0)
            goto out;
    }
    if (cookie < NS_COOKIE_DOTDOT) {
        count++;
        rc = sink_emit(ns, sink, "..", 2, dir.parent, S_IFDIR, NS_COOKIE_DOTDOT, &stop, why);
        if (rc < 0 || stop != 0)
            goto out;
    }
    if (cookie >= UINT64_MAX - 1) {
        *eof = true;
        goto out;
    }
    uint64_t start = cookie + 1 < NS_FIRST_DIRENT_SEQ ? NS_FIRST_DIRENT_SEQ : cookie + 1;
    rc = readdir_store(ns, ino, start, max, &count, sink, eof, why);
out:
    pthread_rwlock_unlock(&ns->lock);
    return rc;
}

int mds_ns_readdir(mds_ns *ns, const mds_caller *who, uint64_t ino, uint64_t cookie, unsigned max_entries,
                   mds_dirent_fn fn, void *arg, bool *eof, mds_inode *dir_out, char *why)
{
    readdir_sink sink = { .fn = fn, .arg = arg };
    return readdir_sinked(ns, who, ino, cookie, max_entries, &sink, eof, dir_out, why);
}

int mds_ns_readdir_attrs(mds_ns *ns, const mds_caller *who, uint64_t ino, uint64_t cookie,
                         unsigned max_entries, mds_dirent_attr_fn fn, void *arg, bool *eof,
                         mds_inode *dir_out, char *why)
{
    readdir_sink sink = { .afn = fn, .arg = arg };
    return readdir_sinked(ns, who, ino, cookie, max_entries, &sink, eof, dir_out, why);
}

/* ------------------------------------------------------- symlinks, sizes */

int mds_ns_readlink(mds_ns *ns, uint64_t ino, char **target, char *why)
{
    mds_inode in;
    uint8_t key[MDS_KEY_MAX];
    void *val = NULL;
    size_t vlen = 0;
    int rc;

    pthread_rwlock_rdlock(&ns->lock);
    rc = ns_load_inode(ns, ino, &in, why);
    if (rc < 0)
        goto out;
    if (!S_ISLNK(in.mode)) {
        rc = ns_fail(why, EINVAL, "inode %llu is not a symlink", (unsigned long long)ino);
        goto out;
    }
    rc = kv_get(ns->kv, key, mds_key_symlink(key, ino), &val, &vlen);
    if (rc < 0 || vlen > WIRE_SYMLINK_MAX) {
        free(val);
        rc = ns_fail(why, EIO, "symlink target of %llu missing", (unsigned long long)ino);
        goto out;
    }
    *target = malloc(vlen + 1);
    if (!*target) {
        free(val);
        rc = ns_fail(why, ENOMEM, "out of memory");
        goto out;
    }
    memcpy(*target, val, vlen);
    (*target)[vlen] = '\0';
    free(val);
out:
    pthread_rwlock_unlock(&ns->lock);
    return rc;
}

static int check_regular(const mds_inode *in, char *why)
{
    if (S_ISDIR(in->mode))
        return ns_fail(why, EISDIR, "inode %llu is a directory", (unsigned long long)in->ino);
    if (!S_ISREG(in->mode))
        return ns_fail(why, EINVAL, "inode %llu is not a regular file", (unsigned long long)in->ino);
    return 0;
}

/* A size a regular file can take: at most what its layout can store (the
 * I/O servers refuse strip offsets past LAYOUT_MAX_STRIP_BYTES). */
static int check_size(const mds_inode *in, uint64_t size, char *why)
{
    uint64_t max = in->has_layout ? layout_max_file_bytes(&in->lay) : LAYOUT_MAX_STRIP_BYTES;
    if (size > max)
        return ns_fail(why, EFBIG, "size %llu of inode %llu > %llu, the most its layout stores",
                       (unsigned long long)size, (unsigned long long)in->ino,
                       (unsigned long long)max);
    return 0;
}

/* A size > 0 means a client may have written strip files (clients publish
 * the size after writing; data inside a size that was set by truncate also
 * needs size > 0 first). may_have_data stays set for good. The caller
 * checked the size (check_size). */
/* A file cut to size keeps at most every unit of the stripes left (the
 * client shortens the strip files before it tells the MDS): its measured
 * allocation can only have shrunk to that (issue 14). */
static void clamp_alloc(mds_inode *in, uint64_t size)
{
    if (!in->alloc_known || !in->has_layout)
        return;
    uint64_t stripe_bytes = layout_stripe_bytes(&in->lay);
    assert(stripe_bytes > 0);
    uint64_t stripes = size / stripe_bytes + (size % stripe_bytes != 0);
    uint64_t max = stripes * in->lay.n * in->lay.su; /* <= n x 2^50 + n x su */
    if (in->alloc_bytes > max)
        in->alloc_bytes = max;
}

/* A writer's measurement of the strip files' allocation replaces the last
 * one, bounded as a cut bounds it: at most every unit of the stripes the
 * file's size covers, whatever was reported. */
static void set_alloc(mds_inode *in, uint64_t alloc_bytes)
{
    in->alloc_known = true;
    in->alloc_bytes = alloc_bytes;
    clamp_alloc(in, in->size);
}

static void set_size(ns_txn *t, mds_inode *in, uint64_t size)
{
    if (size < in->size)
        clamp_alloc(in, size);
    account_size(t, in, in->size, size);
    in->size = size;
    in->data_version++;
    if (size > 0)
        in->may_have_data = true;
}

/* A setattr mode keeps the file's type: it may name it or leave it out. */
static int check_mode_type(const mds_inode *in, uint32_t mode, char *why)
{
    uint32_t type = mode & S_IFMT;
    if (type != 0 && type != (in->mode & S_IFMT))
        return ns_fail(why, EINVAL, "mode 0%o would change the type of inode %llu (0%o)", mode,
                       (unsigned long long)in->ino, in->mode & S_IFMT);
    return 0;
}

static int apply_setattr(ns_txn *t, mds_inode *in, uint32_t mask, const mds_setattr_in *a, char *why)
{
    int64_t now = clock_real_ns();
    if (mask & DEPFS_SET_MODE) {
        int rc = check_mode_type(in, a->mode, why);
        if (rc < 0)
            return rc;
    }
    if (mask & DEPFS_SET_SIZE) {
        int rc = check_regular(in, why);
        if (rc == 0)
            rc = check_size(in, a->size, why);
        if (rc < 0)
            return rc;
        set_size(t, in, a->size);
        if (a->alloc_bytes && in->has_layout) /* measured after the strips were cut */
            set_alloc(in, *a->alloc_bytes);
        in->mtime_ns = now;
    }
    if (mask & DEPFS_SET_MODE)
        in->mode = (in->mode & S_IFMT) | (a->mode & NS_PERM_MASK);
    if (mask & DEPFS_SET_UID)
        in->uid = a->uid;
    if (mask & DEPFS_SET_GID)
        in->gid = a->gid;
    if (mask & DEPFS_SET_ATIME_NOW)
        in->atime_ns = now;
    else if (mask & DEPFS_SET_ATIME)
        in->atime_ns = a->atime_ns;
    if (mask & DEPFS_SET_MTIME_NOW)
        in->mtime_ns = now;
    else if (mask & DEPFS_SET_MTIME)
        in->mtime_ns = a->mtime_ns;
    in->ctime_ns = now; /* the MDS's own: DEPFS_SET_CTIME asks no more (namespace.h) */
    return 0;
}

int mds_ns_setattr(mds_ns *ns, const mds_caller *who, uint64_t ino, uint32_t mask, const mds_setattr_in *a,
                   mds_inode *out, char *why)
{
    mds_inode in;
    mds_setattr_in checked = *a; /* perm_setattr may add the set-id bits to drop */
    ns_txn t;
    int rc;

    pthread_rwlock_wrlock(&ns->lock);
    rc = ns_load_inode(ns, ino, &in, why);
    if (rc == 0 && who)
        rc = perm_setattr(who, &in, &mask, &checked, why);
    if (rc < 0)
        goto out;
    rc = ns_txn_begin(ns, &t);
    if (rc < 0)
        goto out;
    rc = apply_setattr(&t, &in, mask, &checked, why);
    if (rc < 0) {
        ns_txn_abort(&t);
        goto out;
    }
    ns_put_inode(&t, &in);
    rc = ns_txn_commit(&t);
    if (rc < 0)
        rc = ns_fail(why, EIO, "store write failed");
    else
        *out = in;
out:
    pthread_rwlock_unlock(&ns->lock);
    return ns_settle(ns, rc, why);
}

int mds_ns_extend(mds_ns *ns, const mds_caller *who, uint64_t ino, uint64_t size, bool has_mtime, int64_t mtime_ns,
                  const uint64_t *alloc_bytes, mds_inode *out, char *why)
{
    mds_inode in;
    ns_txn t;
    int rc;

    pthread_rwlock_wrlock(&ns->lock);
    int64_t now = clock_real_ns();
    rc = ns_load_inode(ns, ino, &in, why);
    if (rc == 0)
        rc = check_regular(&in, why);
    if (rc == 0 && who) /* may bound a writer's mtime */
        rc = perm_extend(who, &in, now, has_mtime ? &mtime_ns : NULL, why);
    if (rc == 0)
        rc = check_size(&in, size, why);
    if (rc < 0)
        goto out;
    rc = ns_txn_begin(ns, &t);
    if (rc < 0)
        goto out;
    if (size > in.size)
        set_size(&t, &in, size);
    in.may_have_data = true; /* an extend reports written data, whatever the size */
    in.data_version++;       /* and the bytes may differ from any copy made before */
    if (alloc_bytes)
        set_alloc(&in, *alloc_bytes);
    if (has_mtime) { /* none: a time set explicitly since the writes stands */
        in.mtime_ns = mtime_ns;
        in.ctime_ns = now; /* the MDS's own, never the writer's */
    }
    ns_put_inode(&t, &in);
    rc = ns_txn_commit(&t);
    if (rc < 0)
        rc = ns_fail(why, EIO, "store write failed");
    else
        *out = in;
out:
    pthread_rwlock_unlock(&ns->lock);
    return ns_settle(ns, rc, why);
}

/* ----------------------------------------------------------- counters */

void mds_ns_statfs(mds_ns *ns, uint64_t *files, uint64_t *logical_bytes)
{
    pthread_rwlock_rdlock(&ns->lock);
    *files = ns->inodes;
    *logical_bytes = ns->logical_bytes;
    pthread_rwlock_unlock(&ns->lock);
}

int mds_ns_register(mds_ns *ns, uint64_t *client_id, char *why)
{
    ns_txn t;
    int rc;

    pthread_rwlock_wrlock(&ns->lock);
    rc = ns_txn_begin(ns, &t);
    if (rc < 0)
        goto out;
    uint64_t id = t.next_client++;
    rc = ns_txn_commit(&t);
    if (rc < 0)
        rc = ns_fail(why, EIO, "store write failed");
    else
        *client_id = id;
out:
    pthread_rwlock_unlock(&ns->lock);
    return ns_settle(ns, rc, why);
}
