/* ad_depfs_fs.c - the process-wide DePFS client and small shared helpers.
 *
 * One depfs_t per process: mounted lazily at the first open (config from
 * $DEPFS_CONF, else /etc/depfs/depfs.conf, via depfs_mount with a NULL
 * config_path) and unmounted at MPI_Finalize through a delete callback on an
 * MPI_COMM_SELF attribute. ROMIO serialises its entry points with a global
 * lock, so the lazy mount needs no lock of its own. */
#include "ad_depfs.h"
#include "adioi.h"
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static depfs_t *depfs_client;
static int depfs_finalize_keyval = MPI_KEYVAL_INVALID;

static int unmount_at_finalize(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void) comm;
    (void) attr;
    (void) extra;
    if (depfs_client) {
        depfs_unmount(depfs_client);
        depfs_client = NULL;
    }
    MPI_Comm_free_keyval(&keyval);
    depfs_finalize_keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

int ADIOI_DEPFS_Get_fs(depfs_t **fs)
{
    depfs_options opt;
    int rc;
    if (depfs_client) {
        *fs = depfs_client;
        return 0;
    }
    memset(&opt, 0, sizeof(opt));
    opt.config_path = NULL;     /* $DEPFS_CONF or /etc/depfs/depfs.conf */
    rc = depfs_mount(&opt, &depfs_client);
    if (rc < 0) {
        depfs_client = NULL;
        return rc;
    }
    if (depfs_finalize_keyval == MPI_KEYVAL_INVALID) {
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, unmount_at_finalize,
                               &depfs_finalize_keyval, NULL);
        MPI_Comm_set_attr(MPI_COMM_SELF, depfs_finalize_keyval, NULL);
    }
    *fs = depfs_client;
    return 0;
}

char *ADIOI_DEPFS_Abs_path(const char *filename)
{
    const char *colon;
    char *out;
    size_t len;
    if (ADIOI_DEPFS_Is_label(filename) && (colon = strchr(filename, ':')) != NULL)
        filename = colon + 1;
    len = strlen(filename);
    out = malloc(len + 2);
    if (!out)
        return NULL;
    if (filename[0] == '/')
        memcpy(out, filename, len + 1);
    else {
        /* DePFS names are absolute in the cluster namespace */
        out[0] = '/';
        memcpy(out + 1, filename, len + 1);
    }
    return out;
}

static int errno_to_class(int e)
{
    switch (e) {
        case ENOENT:
        case ENOTDIR:
            return MPI_ERR_NO_SUCH_FILE;
        case EEXIST:
            return MPI_ERR_FILE_EXISTS;
        case EACCES:
        case EPERM:
            return MPI_ERR_ACCESS;
        case ENOSPC:
        case EDQUOT:
            return MPI_ERR_NO_SPACE;
        case EROFS:
            return MPI_ERR_READ_ONLY;
        case ENAMETOOLONG:
        case EISDIR:
            return MPI_ERR_BAD_FILE;
        case EINVAL:
            return MPI_ERR_ARG;
        case ENOMEM:
            return MPI_ERR_NO_MEM;
        default:
            return MPI_ERR_IO;
    }
}

int ADIOI_DEPFS_Err(const char *myname, const char *filename, int neg_errno)
{
    char msg[3 * ADIOI_DEPFS_ERR_LEN];
    const char *detail = depfs_last_error();
    int e = -neg_errno;
    assert(neg_errno < 0);
    snprintf(msg, sizeof(msg), "DePFS %s: %s%s%s%s", filename ? filename : "", strerror(e),
             detail && *detail ? " (" : "", detail ? detail : "", detail && *detail ? ")" : "");
    return MPIO_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, myname, __LINE__,
                                errno_to_class(e), "**io", "**io %s", msg);
}

void ADIOI_DEPFS_Fill_cred(depfs_cred *cr)
{
    int n;
    memset(cr, 0, sizeof(*cr));
    cr->uid = geteuid();
    cr->gid = getegid();
    n = getgroups(DEPFS_MAX_GROUPS, cr->groups);
    cr->ngroups = n > 0 ? (unsigned) n : 0;
}

static void info_set_uint(MPI_Info info, const char *key, unsigned long long v)
{
    char value[32];
    snprintf(value, sizeof(value), "%llu", v);
    ADIOI_Info_set(info, key, value);
}

/* Collective buffering: file domains on full-stripe (k x su) boundaries and a
 * buffer of whole stripes, so two-phase writes never read-modify-write a
 * stripe another aggregator also touches. Also reports the real layout. */
ADIOI_DEPFS_User_hints ADIOI_DEPFS_user_hints;

void ADIOI_DEPFS_Align_hints(ADIO_File fd, const depfs_layout_info *lay)
{
    char value[64];
    uint64_t width = (uint64_t) lay->k * lay->stripe_unit;
    const ADIOI_DEPFS_User_hints *user = &ADIOI_DEPFS_user_hints;
    int user_cb = user->fd == fd && user->cb_buffer_size;
    int user_su = user->fd == fd && user->striping_unit;

    if (width > 0 && width <= INT32_MAX) {
        fd->blksize = (long) width;
        if (!user_su) {
            fd->hints->striping_unit = (int) width;
            info_set_uint(fd->info, "striping_unit", width);
        }
        if (!user_cb && (uint64_t) fd->hints->cb_buffer_size >= width) {
            fd->hints->cb_buffer_size -= (int) ((uint64_t) fd->hints->cb_buffer_size % width);
            info_set_uint(fd->info, "cb_buffer_size",
                          (unsigned long long) fd->hints->cb_buffer_size);
        }
    }
    info_set_uint(fd->info, ADIOI_DEPFS_HINT_N, lay->n);
    info_set_uint(fd->info, ADIOI_DEPFS_HINT_K, lay->k);
    info_set_uint(fd->info, ADIOI_DEPFS_HINT_SU, lay->stripe_unit);
    snprintf(value, sizeof(value), "%u@%u@%u", lay->n, lay->k, (unsigned) lay->stripe_unit);
    ADIOI_Info_set(fd->info, ADIOI_DEPFS_HINT_LAYOUT, value);
}
