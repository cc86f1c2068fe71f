/* ad_depfs.h - the DePFS ROMIO (ADIO) driver: shared declarations.
 *
 * Owns the driver's per-file state (fd->fs_ptr), the layout request type and
 * every ADIOI_DEPFS_* entry point. The driver talks to DePFS through libdepfs
 * (client/lib/depfs.h) with one depfs_t per process, mounted at the first
 * open from $DEPFS_CONF and unmounted at MPI_Finalize.
 *
 * Layout precedence for a new file: label (depfs@N@K[@SU]:) > hints
 * (depfs_n, depfs_k, depfs_su) > $DEPFS_LAYOUT (N@K[@SU]) > directory or
 * cluster default. The requested values travel in fd->info until the open;
 * after it fd->info reports the layout actually used. */
#ifndef AD_DEPFS_H_INCLUDED
#define AD_DEPFS_H_INCLUDED

#include "adio.h"
#include <depfs.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ADIOI_DEPFS_ERR_LEN 256

/* info keys the driver owns (ADIOI_GEN_SetInfo drops unknown hints) */
#define ADIOI_DEPFS_HINT_N "depfs_n"
#define ADIOI_DEPFS_HINT_K "depfs_k"
#define ADIOI_DEPFS_HINT_SU "depfs_su"
#define ADIOI_DEPFS_HINT_LAYOUT "depfs_layout"   /* reported: "N@K@SU" */
/* "enable" (the default): writes may stay in the client's write-behind until
 * MPI_File_sync, close, an atomic-mode or shared-pointer lock's release, or
 * a two-phase collective write's end: MPI's consistency rules (sync-barrier-
 * sync, close-open; the close ends with a barrier after every process's
 * flush). "disable": each write call is pushed out to the servers before it
 * returns, for programs that read other processes' bytes without sync. */
#define ADIOI_DEPFS_HINT_WRITE_BEHIND "depfs_write_behind"
/* "enable" (the default): the processes of one node that open a file
 * read-only share what they read in a node read cache (ad_depfs_node_cache.c);
 * "disable": each reads for itself. Reported after the open:
 * depfs_node_cache_bytes, the cache's size (0: none). */
#define ADIOI_DEPFS_HINT_NODE_CACHE "depfs_node_cache"
#define ADIOI_DEPFS_HINT_NODE_CACHE_BYTES "depfs_node_cache_bytes"
/* "enable": at MPI_File_sync and close the pieces that the processes hold
 * in their write-behind of stripes they share go to one process per
 * stripe, which writes each stripe once (ad_depfs_stripe_gather.c);
 * "disable": each writes its own; "auto" (the default): enable unless a
 * node runs more of the job's processes than it has CPUs
 * (ADIOI_DEPFS_Gather_pays). Counts at the open, where every process
 * opened the file and wants it. */
#define ADIOI_DEPFS_HINT_STRIPE_GATHER "depfs_stripe_gather"
#define ADIOI_DEPFS_LAYOUT_ENV "DEPFS_LAYOUT"
#define ADIOI_DEPFS_LOCK_DIR_ENV "DEPFS_MPIIO_LOCK_DIR"
#define ADIOI_DEPFS_LOCK_DIR_DEFAULT "/tmp/depfs-mpiio-locks"

/* a requested layout; 0 = not given (inherit) */
typedef struct ADIOI_DEPFS_Layout {
    unsigned n, k;
    uint32_t su;
} ADIOI_DEPFS_Layout;

typedef struct ADIOI_DEPFS_Node_cache ADIOI_DEPFS_Node_cache;

/* fd->fs_ptr while the file is open */
typedef struct ADIOI_DEPFS_File {
    depfs_fh_t *fh;
    depfs_layout_info layout;   /* what the file really uses */
    int lock_fd;                /* -1 until the first byte-range lock */
    int write_behind;           /* ADIOI_DEPFS_HINT_WRITE_BEHIND enabled */
    int defer_flush;            /* >0 inside a strided call: one flush at its end */
    int coll_push;              /* >0 inside a two-phase collective write: no write-behind */
    int close_barrier;          /* every process of fd->comm opened: close is collective */
    int gather;                 /* ... and all want the stripe gather: sync and close do it */
    ADIOI_DEPFS_Node_cache *node_cache; /* read-only opens shared on a node, or NULL */
} ADIOI_DEPFS_File;

/* ---- prefix/label handling (ad_depfs_prefix.c; the grammar and its
 * checks are libdepfs's depfs_label_parse and depfs_layout_spec_parse) ---- */
int ADIOI_DEPFS_Is_label(const char *name);
int ADIOI_DEPFS_Prefix(const char *name);
int ADIOI_DEPFS_Forced(void);
int ADIOI_DEPFS_Parse_label(const char *name, ADIOI_DEPFS_Layout *out, const char **path,
                            char *err, size_t err_len);
int ADIOI_DEPFS_Parse_spec(const char *spec, ADIOI_DEPFS_Layout *out, char *err, size_t err_len);
int ADIOI_DEPFS_Check_layout(const ADIOI_DEPFS_Layout *l, char *err, size_t err_len);
void ADIOI_DEPFS_Take_pending(const char *path, ADIOI_DEPFS_Layout *out);
void ADIOI_DEPFS_Clear_pending(void);

/* hints the user set explicitly at open; the driver leaves them alone */
typedef struct ADIOI_DEPFS_User_hints {
    ADIO_File fd;               /* the open they belong to */
    int cb_buffer_size;         /* user gave cb_buffer_size */
    int striping_unit;          /* user gave striping_unit (alignment) */
} ADIOI_DEPFS_User_hints;
extern ADIOI_DEPFS_User_hints ADIOI_DEPFS_user_hints;

/* ---- process-wide client and helpers (ad_depfs_fs.c) ---- */
int ADIOI_DEPFS_Get_fs(depfs_t **fs);   /* negative errno on failure */
/* "/x" from "x", "depfs@8@6:/x" or "/x"; malloc'd, NULL on ENOMEM */
char *ADIOI_DEPFS_Abs_path(const char *filename);
int ADIOI_DEPFS_Err(const char *myname, const char *filename, int neg_errno);
void ADIOI_DEPFS_Fill_cred(depfs_cred *cr);
void ADIOI_DEPFS_Align_hints(ADIO_File fd, const depfs_layout_info *lay);

/* ---- the node read cache (ad_depfs_node_cache.c) ---- */
/* collective over fd->comm (file NULL and want 0 where the open failed) */
void ADIOI_DEPFS_Node_cache_open(ADIO_File fd, ADIOI_DEPFS_File *file, int want);
/* collective over the node; nothing without a cache */
void ADIOI_DEPFS_Node_cache_close(ADIOI_DEPFS_File *file);
/* bytes of [offset, offset + len) served from the front (0: none, the
 * caller reads them), or a negative errno */
ssize_t ADIOI_DEPFS_Node_cache_read(ADIOI_DEPFS_File *file, void *buf, uint64_t len,
                                    uint64_t offset);

/* ---- the stripe gather (ad_depfs_stripe_gather.c) ---- */
/* collective over fd->comm, where file->gather: every process's held
 * pieces of shared stripes written, each stripe by one process (the
 * caller's flush or fsync then commits the size); 0 or a negative errno
 * (the lowest of any process when pieces moved) */
int ADIOI_DEPFS_Stripe_gather(ADIO_File fd, ADIOI_DEPFS_File *file);
/* the hint's "auto": whether this node has a CPU for each of the job's
 * processes on it (unknown: yes) */
int ADIOI_DEPFS_Gather_pays(void);
/* ---- operations ---- */
void ADIOI_DEPFS_Open(ADIO_File fd, int *error_code);
void ADIOI_DEPFS_OpenColl(ADIO_File fd, int rank, int access_mode, int *error_code);
void ADIOI_DEPFS_Close(ADIO_File fd, int *error_code);
void ADIOI_DEPFS_ReadContig(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
                            int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
                            int *error_code);
void ADIOI_DEPFS_ReadStridedColl(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
                                 int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
                                 int *error_code);
void ADIOI_DEPFS_WriteStridedColl(ADIO_File fd, const void *buf, int count,
                                  MPI_Datatype datatype, int file_ptr_type, ADIO_Offset offset,
                                  ADIO_Status *status, int *error_code);
void ADIOI_DEPFS_WriteStrided(ADIO_File fd, const void *buf, int count, MPI_Datatype datatype,
                              int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
                              int *error_code);
/* an on/off hint of ours (write-behind, node cache, stripe gather) as
 * fd->info holds it; Switch_on: ADIOI_DEPFS_ON */
enum { ADIOI_DEPFS_OFF, ADIOI_DEPFS_ON, ADIOI_DEPFS_AUTO };
int ADIOI_DEPFS_Switch(ADIO_File fd, const char *key);
int ADIOI_DEPFS_Switch_on(ADIO_File fd, const char *key);
void ADIOI_DEPFS_WriteContig(ADIO_File fd, const void *buf, int count, MPI_Datatype datatype,
                             int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
                             int *error_code);
void ADIOI_DEPFS_Fcntl(ADIO_File fd, int flag, ADIO_Fcntl_t *fcntl_struct, int *error_code);
void ADIOI_DEPFS_SetInfo(ADIO_File fd, MPI_Info users_info, int *error_code);
void ADIOI_DEPFS_Flush(ADIO_File fd, int *error_code);
void ADIOI_DEPFS_Resize(ADIO_File fd, ADIO_Offset size, int *error_code);
void ADIOI_DEPFS_Delete(const char *filename, int *error_code);
int ADIOI_DEPFS_Feature(ADIO_File fd, int flag);
int ADIOI_DEPFS_SetLock(ADIO_File fd, int cmd, int type, ADIO_Offset offset, int whence,
                        ADIO_Offset len);

#endif /* AD_DEPFS_H_INCLUDED */
