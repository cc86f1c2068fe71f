/* depfs.h - libdepfs, the DePFS client library (public API).
 *
 * A depfs_t is one client of a cluster: it registers with the MDS (getting a
 * unique client id), keeps connections to the MDS and every I/O server, and
 * stripes file data as k-of-n Reed-Solomon stripes over the servers.
 * Every handle is thread-safe unless noted.
 *
 * Two ways in: an inode API (what FUSE needs: ino numbers are MDS inode
 * numbers, root is DEPFS_ROOT_INO) and a path API that accepts resiliency
 * labels (depfs@N@K[@SU]:/path, depfs:/path, or a plain /path).
 *
 * The operations of administrators and of depfs-recovery (server states,
 * rebuilds, orphan lock repair) are in depfs_admin.h. libdepfs.so exports
 * the functions of these two headers and nothing else (libdepfs.map).
 *
 * Return convention: 0 (or a byte count) on success, negative errno on
 * failure. Error detail for humans: depfs_last_error() (thread-local). */
#ifndef DEPFS_H
#define DEPFS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DEPFS_ROOT_INO 1u
#define DEPFS_MAX_GROUPS 64u
#define DEPFS_MAX_SERVERS_PER_FILE 32u  /* n of a layout at most */
#define DEPFS_STRIPE_UNIT_ALIGN 512u     /* stripe units are multiples of this */
#define DEPFS_STRIPE_UNIT_MAX (16u * 1024 * 1024)
#define DEPFS_LAYOUT_XATTR "user.depfs.layout"

typedef struct depfs depfs_t;
typedef struct depfs_fh depfs_fh_t;

/* Who is asking: the owner of created objects, and whose permissions the
 * MDS checks (when it trusts the client to say: the cluster key's
 * holders, or root proven by MUNGE on a node the config lists in
 * client_nodes; anyone else is checked as the uid MUNGE proved). */
typedef struct depfs_cred {
    uid_t uid;
    gid_t gid;
    unsigned ngroups;
    gid_t groups[DEPFS_MAX_GROUPS];
} depfs_cred;

typedef struct depfs_layout_info {
    unsigned n, k;
    uint32_t stripe_unit;
    unsigned version, codec_version;
    unsigned servers[DEPFS_MAX_SERVERS_PER_FILE];
} depfs_layout_info;

typedef struct depfs_options {
    const char *config_path;  /* NULL: $DEPFS_CONF or /etc/depfs/depfs.conf */
    unsigned default_n, default_k; /* 0: the cluster's default */
    uint32_t default_su;
    bool ignore_locks;        /* recovery module only (depfs_admin.h) */
    /* For a caller that holds inodes as the FUSE kernel does (depfs-fuse):
     * depfs_lookup, depfs_create, depfs_mknod, depfs_mkdir, depfs_symlink
     * and depfs_link each count one lookup of the inode they return, and
     * the inode's handle (README "Inode handles") is kept until
     * depfs_forget gives its lookups back. Such a caller uses the inode API
     * alone (the path API's own lookups would count too). */
    bool count_lookups;
    /* Statahead (0: off): a directory whose names are looked up one after
     * another is fetched a page at a time with its entries' attributes,
     * and depfs_lookup answers from a page younger than this many ms
     * (depfs_lookup_aged says how old). Only for a caller that checks
     * search permission on the directory itself before each lookup, as
     * the FUSE kernel does with default_permissions: the page is fetched
     * for whoever's lookup started it. */
    unsigned statahead_ms;
    /* With count_lookups: called (on the thread of the call whose reply
     * showed it, before that call returns) when a name of inode ino that
     * the caller was given before may have gone or moved meanwhile (the
     * inode's name generation rose), so that the caller drops the names it
     * handed on (depfs-fuse: the kernel's cached entries). Must not block. */
    void (*names_moved)(void *arg, uint64_t ino);
    void *names_moved_arg;
} depfs_options;

/* ------------------------------------------------------------- lifecycle */
int depfs_mount(const depfs_options *opt, depfs_t **out);
/* Flushes every open file first, each acting for the opener of the handle
 * that wrote it last (as that handle's flush would), then frees fs. */
void depfs_unmount(depfs_t *fs);
uint64_t depfs_client_id(const depfs_t *fs);
const char *depfs_last_error(void);
/* From now on this thread's MDS requests act for cr (NULL: for this
 * process's own uid, gid and groups again, the default). For a client that
 * serves many users, such as depfs-fuse for each kernel request; a handle
 * keeps acting for whoever opened it (its flushes, size updates,
 * truncates, and depfs_unmount's write-back of a file left open). Calls that take a depfs_cred use that one. -EINVAL when
 * cr->ngroups > DEPFS_MAX_GROUPS. */
int depfs_act_as(const depfs_cred *cr);
/* With depfs_options.count_lookups: from now on this thread's requests
 * serve kernel caller `caller` (depfs-fuse: each request's thread id; 0,
 * the default: none said). When the MDS refuses a request through the
 * kernel's names of a directory another client moved since (-ESTALE), the
 * caller it refused goes on through those inodes afterwards (a process
 * whose working directory moved, which the kernel cannot walk to anew);
 * any other caller is refused as well, so that its kernel walks the path
 * again instead of creating in the moved directory. */
void depfs_act_caller(uint64_t caller);
/* After such a refusal, a caller that is not sent to walk the path again
 * (depfs-fuse answered its lookup ENOENT instead) does not go on through
 * ino either: its next request through the kernel's old names of ino is
 * refused too. */
void depfs_names_unpass(depfs_t *fs, uint64_t ino);

/* ------------------------------------------------------------- inode API */
/* Inode handles (README "Inode handles"): a user proved by MUNGE reaches
 * an inode by number only with the tag the MDS gave with it. The library
 * keeps the tags of the inodes its calls met (a lookup, a create, a
 * readdir of a directory the caller may search...) and sends them along:
 * the numbers to pass are those its calls returned, the root's
 * (DEPFS_ROOT_INO) always works. Tags of inodes not held (lookup counts,
 * open handles) may be dropped past a bound; a path resolution from the
 * root (depfs_resolve) learns them again. The cluster key's holders need
 * none. */
int depfs_lookup(depfs_t *fs, uint64_t parent, const char *name, struct stat *st);
/* depfs_lookup for a caller that keeps nothing of the answer: with
 * count_lookups not counted as the kernel's, nor answered from statahead's
 * pages (whether name is in parent now, at the MDS). */
int depfs_lookup_probe(depfs_t *fs, uint64_t parent, const char *name, struct stat *st);
/* depfs_lookup, and how old the answer is in ms (*age_ms; 0: from the MDS
 * now): a caller that caches it keeps it that much less long. */
int depfs_lookup_aged(depfs_t *fs, uint64_t parent, const char *name, struct stat *st,
                      unsigned *age_ms);
/* With depfs_options.count_lookups: the caller no longer holds nlookup of
 * the lookups of ino counted so far (the FUSE kernel's FORGET); once none
 * is held and no handle of ino is open here, its tag may be dropped. */
void depfs_forget(depfs_t *fs, uint64_t ino, uint64_t nlookup);
int depfs_getattr(depfs_t *fs, uint64_t ino, struct stat *st);
/* The attributes directory ino was left with by this client's own last
 * create, mknod, mkdir, symlink or unlink in it, if that was at most
 * max_age_ms ago and no other change of a directory by this client came
 * after it; each is given out once. For a caller that, like the kernel
 * through FUSE, asks for a directory's attributes right after changing
 * it. 0, -ENOENT (nothing kept: ask depfs_getattr), -EINVAL. */
int depfs_dir_attr_take(depfs_t *fs, uint64_t ino, unsigned max_age_ms, struct stat *st);
/* The attributes the MDS gave this client's last depfs_open_ino of file
 * ino (still open here), if that was at most max_age_ms ago and this client
 * has changed neither the file's size nor anything else since (writes,
 * truncates, setattrs, renames...); given out once. For a caller that,
 * like the kernel through FUSE, asks for a file's attributes right after
 * opening it. 0, -ENOENT (nothing kept: ask depfs_getattr), -EINVAL. */
int depfs_open_attr_take(depfs_t *fs, uint64_t ino, unsigned max_age_ms, struct stat *st);
/* to_set: DEPFS_SET_* bits; values from `in`. Size changes truncate data.
 * DEPFS_SET_CTIME takes no value: the MDS sets ctime to its now at every
 * change (in->st_ctim is not read). */
#define DEPFS_SET_MODE 1u
#define DEPFS_SET_UID 2u
#define DEPFS_SET_GID 4u
#define DEPFS_SET_SIZE 8u
#define DEPFS_SET_ATIME 16u
#define DEPFS_SET_MTIME 32u
#define DEPFS_SET_ATIME_NOW 128u
#define DEPFS_SET_MTIME_NOW 256u
#define DEPFS_SET_CTIME 1024u
int depfs_setattr(depfs_t *fs, uint64_t ino, const struct stat *in, unsigned to_set, struct stat *out);
/* The calls below (and depfs_lookup, depfs_create, depfs_readdir and
 * depfs_readdir_plus) fail -ESTALE when the directory they name by number
 * (parent, new_parent, the one listed) is gone: removed since it was
 * looked up, perhaps made again under its name. -ENOENT is about the name
 * in it. */
int depfs_mknod(depfs_t *fs, uint64_t parent, const char *name, mode_t mode, dev_t rdev,
                const depfs_cred *cr, struct stat *st);
int depfs_mkdir(depfs_t *fs, uint64_t parent, const char *name, mode_t mode,
                const depfs_cred *cr, struct stat *st);
int depfs_symlink(depfs_t *fs, uint64_t parent, const char *name, const char *target,
                  const depfs_cred *cr, struct stat *st);
/* buf receives a NUL-terminated target; -ENAMETOOLONG if it does not fit. */
int depfs_readlink(depfs_t *fs, uint64_t ino, char *buf, size_t len);
int depfs_link(depfs_t *fs, uint64_t ino, uint64_t new_parent, const char *new_name, struct stat *st);
int depfs_unlink(depfs_t *fs, uint64_t parent, const char *name);
int depfs_rmdir(depfs_t *fs, uint64_t parent, const char *name);
/* flags: 0, RENAME_NOREPLACE or RENAME_EXCHANGE (linux/fs.h values). */
int depfs_rename(depfs_t *fs, uint64_t parent, const char *name, uint64_t new_parent,
                 const char *new_name, unsigned flags);

/* Calls fn for entries after `cookie` (0 = from the start; "." and ".."
 * included) until fn returns non-zero or the directory ends. Each entry's
 * cookie resumes after it. */
typedef int (*depfs_dirent_fn)(void *arg, const char *name, uint64_t ino, mode_t type,
                               uint64_t cookie);
int depfs_readdir(depfs_t *fs, uint64_t ino, uint64_t cookie, depfs_dirent_fn fn, void *arg);
/* One page of depfs_readdir (at most max_entries entries; 0: the most the
 * library asks at once) with each entry's attributes in *st, for a caller
 * that caches them as lookups (FUSE's READDIRPLUS). st is NULL for "."
 * and "..", and for every entry when the caller may not search the
 * directory (the MDS gives none then, as a lookup would fail). With
 * depfs_options.count_lookups, an entry with attributes that fn took
 * (returned 0) counts one lookup of its inode, as depfs_lookup does; fn
 * returns non-zero for an entry it did not take, which ends the page. The
 * page also answers statahead (depfs_options.statahead_ms) as one fetched
 * for lookups would. The directory's end: no entry after cookie. */
typedef int (*depfs_dirent_plus_fn)(void *arg, const char *name, uint64_t ino, mode_t type,
                                    uint64_t cookie, const struct stat *st);
int depfs_readdir_plus(depfs_t *fs, uint64_t ino, uint64_t cookie, uint32_t max_entries,
                       depfs_dirent_plus_fn fn, void *arg);

int depfs_statfs(depfs_t *fs, struct statvfs *st);

/* xattrs. get/list: with size 0 return the needed size; -ERANGE if too small.
 * DEPFS_LAYOUT_XATTR on a directory (inherited by new children) or an empty
 * file sets/gets the layout as "N@K[@SU]". */
int depfs_setxattr(depfs_t *fs, uint64_t ino, const char *name, const void *value, size_t size,
                   int flags);
ssize_t depfs_getxattr(depfs_t *fs, uint64_t ino, const char *name, void *value, size_t size);
ssize_t depfs_listxattr(depfs_t *fs, uint64_t ino, char *list, size_t size);
int depfs_removexattr(depfs_t *fs, uint64_t ino, const char *name);

/* Layout of a file (or a directory's inherited layout). */
int depfs_get_layout(depfs_t *fs, uint64_t ino, depfs_layout_info *out);
/* want: NULL or a requested layout (n/k/su 0 = inherit). flags with
 * O_TMPFILE (name NULL): a new file without a name in parent, as Linux's
 * O_TMPFILE; its strip files go after its last close (purge queue). */
int depfs_create(depfs_t *fs, uint64_t parent, const char *name, mode_t mode, int flags,
                 const depfs_cred *cr, const depfs_layout_info *want, struct stat *st,
                 depfs_fh_t **fh);
/* flags: O_RDONLY/O_WRONLY/O_RDWR, O_TRUNC, O_APPEND, O_DIRECT, O_SYNC.
 * Unless a handle of ino is open in this client, ino is taken to have come
 * from a name: a file that has lost all its names since is -ESTALE (look
 * the name up again). */
int depfs_open_ino(depfs_t *fs, uint64_t ino, int flags, depfs_fh_t **fh);

/* ------------------------------------------------------- file data (fh) */
/* Reads past end of file return fewer bytes (0 at EOF); holes read zeros. */
ssize_t depfs_read(depfs_fh_t *fh, void *buf, size_t len, uint64_t off);
/* A handle reading at a stride gets read-ahead of only its own pieces when
 * they are at least this long; shorter ones fetch whole windows (a server
 * reads whole 4 KiB checksum blocks for each anyway), which processes
 * reading a file's pieces between them each fetch in full. */
#define DEPFS_READ_GATHER_MIN (16u << 10)
/* Returns len or a negative errno; never a short write. Data and parity are
 * committed together (write-behind may hold sequential data in the client
 * until a full stripe, flush, fsync or close). */
ssize_t depfs_write(depfs_fh_t *fh, const void *buf, size_t len, uint64_t off);
int depfs_flush(depfs_fh_t *fh);   /* write-behind to servers, size to the MDS */
int depfs_fsync(depfs_fh_t *fh);   /* flush + durable on every server */
/* Bytes of a file held in memory: data[0] is file byte off. */
typedef struct depfs_piece {
    uint64_t off, len;
    uint8_t *data;
} depfs_piece;
/* Write-behind handed over rather than written, for a caller that gathers
 * the pieces several clients hold of the same stripes so that one client
 * writes each such stripe whole (the ROMIO driver at MPI_File_sync and
 * close): every stripe this client holds whole for write-behind is written
 * out, and the bytes it holds of other stripes go to *pieces instead
 * (*n of them, ascending, disjoint, none across a stripe boundary; malloc'd,
 * depfs_pieces_free). This client no longer holds them: the caller gets
 * them written (depfs_write_pieces, through any client of the file) or
 * reports their loss. Nothing is committed at the MDS: the next flush or
 * fsync commits the size, once the pieces landed. 0, or the write-out's
 * error as a flush reports it (the pieces are handed over even then). */
int depfs_flush_hand_partial(depfs_fh_t *fh, depfs_piece **pieces, size_t *n);
/* Writes n pieces (ascending, disjoint) through, in as few lock rounds as
 * the servers' request limits allow: landed when it returns, the size grown
 * as depfs_write grows it (committed by the next flush or fsync). A stripe
 * one piece covers whole is written without reading it first. 0 or -errno
 * (-EINVAL: not ascending and disjoint). */
int depfs_write_pieces(depfs_fh_t *fh, const depfs_piece *pieces, size_t n);
void depfs_pieces_free(depfs_piece *pieces, size_t n);
int depfs_ftruncate(depfs_fh_t *fh, uint64_t size);
/* lseek(2)'s SEEK_DATA / SEEK_HOLE (whence, the values of <unistd.h>
 * under _GNU_SOURCE): the first offset >= off that holds data, or starts a
 * hole (the file's end counts as one), in *out. Holes are whole stripe
 * units no server holds data in, never a range bytes were written to
 * (a server that is down or missed writes counts as data). Buffered
 * writes of this handle's file are flushed first. -ENXIO when off >= size
 * or (SEEK_DATA) no data follows; -EINVAL for another whence. */
int depfs_lseek(depfs_fh_t *fh, uint64_t off, int whence, uint64_t *out);
/* Fresh attributes from the MDS; also merges a size another client has
 * published since this handle opened, so later reads reach it. */
int depfs_fstat(depfs_fh_t *fh, struct stat *st);
uint64_t depfs_fh_ino(const depfs_fh_t *fh);
int depfs_fh_layout(const depfs_fh_t *fh, depfs_layout_info *out);
/* Connects to the servers of fh's file this client has no connection to
 * yet, all at once, so that its first read or write does not wait for
 * the handshakes: for a caller whose open is the time to pay for them
 * (the ROMIO driver's MPI_File_open: each rank is a new client). A server
 * that is down or cannot be reached is marked as a request would mark it,
 * and left to the requests. Always 0. */
int depfs_fh_connect(depfs_fh_t *fh);
int depfs_close(depfs_fh_t *fh);   /* flush, then free; fh is gone even on error */

/* -------------------------------------------------------------- path API */
/* path: a label or a plain absolute path. O_CREAT uses the label's layout. */
int depfs_open(depfs_t *fs, const char *path, int flags, mode_t mode, depfs_fh_t **fh);
int depfs_resolve(depfs_t *fs, const char *path, uint64_t *ino, struct stat *st);
int depfs_mkdir_path(depfs_t *fs, const char *path, mode_t mode);
int depfs_unlink_path(depfs_t *fs, const char *path);

/* Resiliency labels without a mount (the MPI-IO driver's file names):
 * "depfs:PATH", "depfs@N@K:PATH", "depfs@N@K@SU:PATH" (or with '+' for '@'
 * throughout: "depfs+N+K:PATH", for tools that split names at '@'), prefix in any case,
 * SU a size such as 65536, 64k or 1m. Returns 1 with the layout in *n, *k,
 * *su (0 = not given) and *path pointing after the ':' (not checked) when
 * s starts with a label; 0 when it does not; -EINVAL with the bad part named
 * in err ("k (9) > n (8)") for a bad label. */
int depfs_label_parse(const char *s, unsigned *n, unsigned *k, uint32_t *su, const char **path,
                      char *err, size_t err_len);
/* "N@K" or "N@K@SU" (hints, $DEPFS_LAYOUT, xattrs): 0 or -EINVAL with err. */
int depfs_layout_spec_parse(const char *spec, unsigned *n, unsigned *k, uint32_t *su, char *err,
                            size_t err_len);

/* --------------------------------------------------------------- migrate */
/* `depfs migrate` (README "Migrating a file to another layout"): copy a
 * file into a new file of another layout, unlinked at once and kept open
 * (a crash leaves nothing but a purge queue entry), fsync the copy, then
 * swap. The data version of regular file ino (*out) changes at every open
 * for writing, size change and writer's size commit: take it before the
 * copy reads anything. */
int depfs_data_version(depfs_t *fs, uint64_t ino, uint64_t *out);
/* Entry name of parent, regular file ino (one link), gets the copy
 * copy_ino (unlinked, open here, its size the file's) in its place, with
 * the file's mode, owner, times and xattrs, in one MDS commit; handles open
 * on ino keep it until their last close, then its strip files go (purge
 * queue). -ESTALE: the file changed since data_version, or the name links
 * another inode now; -EBUSY: another client has the file open for
 * writing; -EMLINK: the file has hard links. st: the file as it is now. */
int depfs_migrate_swap(depfs_t *fs, uint64_t parent, const char *name, uint64_t ino,
                       uint64_t copy_ino, uint64_t data_version, struct stat *st);
/* ---------------------------------------------------------------- checks */
/* Scrub: read every stripe of a file (under its stripe locks), check each
 * unit and the parity against the data, and say which unit is bad and why.
 * Causes of a bad unit (depfs_scrub_finding.cause): */
#define DEPFS_SCRUB_CHECKSUM 1    /* its bytes fail their stored checksum (EBADMSG) */
#define DEPFS_SCRUB_IO_ERROR 2    /* its server could not read it (EIO or another error) */
#define DEPFS_SCRUB_MISSING 3     /* its server does not have it (ENODATA) */
#define DEPFS_SCRUB_UNREACHABLE 4 /* its server is down, does not answer, or is named
                                   * in dirty records (a write went around it): not
                                   * checked, never repaired by scrub (recovery
                                   * rebuilds it) */
#define DEPFS_SCRUB_MISMATCH 5    /* read fine, but the stripe's units disagree and this
                                   * one explains it (located from the others: needs
                                   * n-k >= 2 read units beyond k) - a bug somewhere */
#define DEPFS_SCRUB_MISMATCH_UNLOCATED 6 /* the units disagree and no single one can be
                                   * named (n-k == 1, or several wrong): unit is
                                   * DEPFS_SCRUB_UNIT_NONE */
#define DEPFS_SCRUB_UNIT_NONE UINT32_MAX

typedef struct depfs_scrub_report {
    uint64_t stripes_checked;
    uint64_t stripes_bad;       /* the units read disagree (parity vs data) */
    uint64_t stripes_unreadable;/* fewer than n units could be read */
    uint64_t first_bad_stripe;  /* valid when stripes_bad > 0 */
    /* Appended in 0.2; the fields above keep their meaning. Bad units by
     * cause, each one also a finding: */
    uint64_t units_checksum;
    uint64_t units_io_error;
    uint64_t units_missing;
    uint64_t units_unreachable;
    uint64_t units_mismatch;            /* located wrong units */
    uint64_t stripes_unlocated;         /* DEPFS_SCRUB_MISMATCH_UNLOCATED findings */
    uint64_t units_repaired;            /* rebuilt from good units and written back */
    uint64_t stripes_parity_rewritten;  /* unlocated mismatches whose parity was
                                         * rewritten from the data (logged) */
    uint64_t stripes_unrepairable;      /* more than n-k units bad, or an unlocated
                                         * mismatch with a unit unread: left alone */
    uint64_t findings_unrepaired;       /* findings left as they were found: no
                                         * repair asked, unreachable, unrepairable,
                                         * or the rewrite failed */
} depfs_scrub_report;

/* One bad unit of one stripe (or an unlocated mismatch of a stripe). */
typedef struct depfs_scrub_finding {
    uint64_t ino;
    uint64_t stripe;
    uint32_t unit;        /* 0..k-1 data, k..n-1 parity; DEPFS_SCRUB_UNIT_NONE */
    bool parity;          /* unit >= k */
    uint32_t server_id;   /* the server that holds the unit (0 with UNIT_NONE) */
    int cause;            /* DEPFS_SCRUB_* */
    int error;            /* the read's errno (EBADMSG, EIO, ...); 0 for mismatches */
    bool repaired;        /* rebuilt and written back (unlocated: parity rewritten) */
    bool unrepairable;    /* left alone: too many bad units in the stripe */
} depfs_scrub_finding;
/* Called for every finding, from the scrubbing thread, after the repair of
 * its stripe was tried. */
typedef void (*depfs_scrub_fn)(void *arg, const depfs_scrub_finding *f);

typedef struct depfs_scrub_options {
    bool repair;              /* rebuild exactly the bad units from good ones */
    depfs_scrub_fn on_finding;/* NULL: counters only */
    void *arg;
} depfs_scrub_options;

/* Scrub one regular file. A unit that fails to read is re-read alone, so
 * only the bad units are named. With repair: each bad unit is decoded from
 * k good ones and rewritten (WRITE under the stripe lock, synced); nothing
 * is ever computed from a unit that was bad or could not be read; a stripe
 * with more than n-k bad units is left alone. A mismatch no unit explains,
 * with every unit read, gets its parity rewritten from the data (logged as
 * a suspected bug). Returns 0 when the file was
 * scrubbed (findings or not), negative errno when it could not be (or a
 * repair write failed). */
int depfs_scrub_file(depfs_t *fs, uint64_t ino, const depfs_scrub_options *opt,
                     depfs_scrub_report *rep);
/* depfs_scrub_file without a callback. */
int depfs_scrub_ino(depfs_t *fs, uint64_t ino, bool repair, depfs_scrub_report *rep);

/* Server states (depfs_server_status, depfs_set_server_state). */
#define DEPFS_SERVER_UP 0
#define DEPFS_SERVER_DOWN 1
#define DEPFS_SERVER_REBUILDING 2
#define DEPFS_SERVER_RECONSTRUCTING 3

typedef struct depfs_server_status {
    uint32_t id;
    char address[128];
    int state;                  /* DEPFS_SERVER_*: the server's own word when
                                 * reachable, else the MDS's */
    bool reachable;
    uint64_t bytes_used, bytes_free;
    uint64_t locks_granted, locks_nacked, locks_held, lock_hold_ms_total;
    uint64_t locks_retried;     /* lock requests that were retries after a NACK */
    int mds_state;              /* the state the MDS holds for it (DEPFS_SERVER_*) */
    uint64_t degraded_files;    /* files with units missing there (from the MDS) */
    uint64_t rebuild_done_bytes, rebuild_total_bytes; /* rebuild progress (MDS) */
    uint64_t rebuild_rate_bps;  /* rebuild bytes/s as last reported (0 = unknown) */
    uint64_t damaged_blocks;    /* blocks its reads found damaged (checksum
                                 * mismatch) since it started */
    /* its background scrub, since it started */
    uint32_t scrub_rate;              /* bytes/s configured (0: off) */
    uint64_t scrub_bytes_verified;
    uint64_t scrub_blocks_damaged;    /* damaged ranges (4 KiB) and lost strip files found */
    uint64_t scrub_blocks_repaired;   /* of those, rewritten since */
    uint64_t scrub_passes;            /* full passes finished */
    uint64_t scrub_last_pass_end_s;   /* wall clock of the last one (0: none yet) */
    uint64_t scrub_last_pass_bytes, scrub_last_pass_ms; /* what it verified, in how long */
    uint64_t locks_waiting;     /* lock requests waiting there for their stripes now */
} depfs_server_status;
/* Fills up to max entries; returns the number of servers. */
int depfs_cluster_status(depfs_t *fs, depfs_server_status *out, unsigned max);

/* The MDS's purge queue: files unlinked whose strip files are not removed
 * yet (still open somewhere, or waiting for depfs-recovery), and their
 * bytes (file sizes); floor_s: no file unlinked now is purged before it
 * (seconds since the epoch: handles the MDS cannot name, from before its
 * restart or past a full holds table, may still use them), 0 when there
 * is none. 0 or -errno. */
typedef struct depfs_purge_status {
    uint64_t files, bytes;
    uint64_t floor_s;
} depfs_purge_status;
int depfs_purge_queue(depfs_t *fs, depfs_purge_status *out);

#ifdef __cplusplus
}
#endif
#endif
