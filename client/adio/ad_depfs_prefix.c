/* ad_depfs_prefix.c - resiliency labels in MPI file names.
 *
 * ROMIO resolves the driver from the name's prefix (ad_fstype.c calls
 * ADIOI_DEPFS_Prefix for anything starting "depfs:", "depfs@" or "depfs+"), then
 * mpi-io/open.c strips everything up to the first ':' before the driver's
 * open. So the layout in depfs@N@K[@SU]: is recorded here as a per-process
 * pending request keyed by the path after ':', and taken by the first
 * SetInfo of the matching open. ROMIO holds its global lock across
 * MPI_File_open, so one pending slot per process is enough; a stale entry
 * (e.g. from MPI_File_delete) only ever matches the same path.
 *
 * Grammar (prefix case-insensitive): depfs:PATH | depfs@N@K:PATH |
 * depfs@N@K@SU:PATH (or '+' for every '@': IOR and mdtest split names at
 * '@'), SU in bytes with an optional k/K/m/M suffix. The
 * parsing and its limits are libdepfs's (depfs_label_parse), so a label
 * means the same here as in the CLI and the library. */
#include "ad_depfs.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
    int valid;
    char *path;
    ADIOI_DEPFS_Layout layout;
} pending;

/* a label, good or bad (a bad one is reported by ADIOI_DEPFS_Prefix) */
int ADIOI_DEPFS_Is_label(const char *name)
{
    ADIOI_DEPFS_Layout unused;
    const char *path;
    return name != NULL &&
        depfs_label_parse(name, &unused.n, &unused.k, &unused.su, &path, NULL, 0) != 0;
}

int ADIOI_DEPFS_Check_layout(const ADIOI_DEPFS_Layout *l, char *err, size_t err_len)
{
    if (l->k && l->n && l->k > l->n) {
        snprintf(err, err_len, "k (%u) > n (%u)", l->k, l->n);
        return -EINVAL;
    }
    if (l->n > DEPFS_MAX_SERVERS_PER_FILE) {
        snprintf(err, err_len, "n (%u) > %u", l->n, (unsigned) DEPFS_MAX_SERVERS_PER_FILE);
        return -EINVAL;
    }
    if (l->su && (l->su % DEPFS_STRIPE_UNIT_ALIGN || l->su > DEPFS_STRIPE_UNIT_MAX)) {
        snprintf(err, err_len, "stripe unit %u is not a multiple of %u up to %u",
                 (unsigned) l->su, DEPFS_STRIPE_UNIT_ALIGN, DEPFS_STRIPE_UNIT_MAX);
        return -EINVAL;
    }
    return 0;
}

int ADIOI_DEPFS_Parse_spec(const char *spec, ADIOI_DEPFS_Layout *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof(*out));
    return depfs_layout_spec_parse(spec, &out->n, &out->k, &out->su, err, err_len);
}

int ADIOI_DEPFS_Parse_label(const char *name, ADIOI_DEPFS_Layout *out, const char **path,
                            char *err, size_t err_len)
{
    int rc;
    memset(out, 0, sizeof(*out));
    rc = name ? depfs_label_parse(name, &out->n, &out->k, &out->su, path, err, err_len) : 0;
    if (rc == 0) {
        snprintf(err, err_len, "not a DePFS label (expected depfs:, depfs@N@K:, depfs@N@K@SU: or depfs+N+K[+SU]:)");
        return -EINVAL;
    }
    return rc < 0 ? rc : 0;
}

void ADIOI_DEPFS_Clear_pending(void)
{
    free(pending.path);
    pending.path = NULL;
    pending.valid = 0;
}

int ADIOI_DEPFS_Prefix(const char *name)
{
    static char myname[] = "ADIOI_DEPFS_PREFIX";
    char err[ADIOI_DEPFS_ERR_LEN], msg[3 * ADIOI_DEPFS_ERR_LEN];
    ADIOI_DEPFS_Layout lay;
    const char *path = NULL;

    if (ADIOI_DEPFS_Parse_label(name, &lay, &path, err, sizeof(err)) < 0) {
        snprintf(msg, sizeof(msg), "'%.*s' (bad DePFS label: %s)", ADIOI_DEPFS_ERR_LEN, name,
                 err);
        return MPIO_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, myname, __LINE__,
                                    MPI_ERR_BAD_FILE, "**filename", "**filename %s", msg);
    }
    /* ROMIO_FSTYPE_FORCE=depfs@N@K: has no path; it is read again at open */
    if (path[0] == '\0')
        return MPI_SUCCESS;
    ADIOI_DEPFS_Clear_pending();
    pending.path = strdup(path);
    if (!pending.path)
        return MPIO_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, myname, __LINE__,
                                    MPI_ERR_NO_MEM, "**nomem", 0);
    pending.layout = lay;
    pending.valid = 1;
    return MPI_SUCCESS;
}

int ADIOI_DEPFS_Forced(void)
{
    return ADIOI_DEPFS_Is_label(getenv("ROMIO_FSTYPE_FORCE"));
}

void ADIOI_DEPFS_Take_pending(const char *path, ADIOI_DEPFS_Layout *out)
{
    char err[ADIOI_DEPFS_ERR_LEN];
    const char *unused;
    memset(out, 0, sizeof(*out));
    if (pending.valid && path && strcmp(pending.path, path) == 0) {
        *out = pending.layout;
    } else if (ADIOI_DEPFS_Forced()) {
        /* validated by ADIO_ResolveFileType already; ignore errors here */
        if (ADIOI_DEPFS_Parse_label(getenv("ROMIO_FSTYPE_FORCE"), out, &unused, err,
                                    sizeof(err)) < 0)
            memset(out, 0, sizeof(*out));
    }
    ADIOI_DEPFS_Clear_pending();
}
