/* ad_depfs_prefix.c - resiliency labels in MPI file names.
 *
 * ROMIO resolves the driver from the name's prefix (ad_fstype.c calls
 * ADIOI_DEPFS_Prefix for anything starting "depfs:" or "depfs@"), then
 * mpi-io/open.c strips everything up to the first ':' before the driver's
 * open. So the layout in depfs@N@K[@SU]: is recorded here as a per-process
 * pending request keyed by the path after ':', and taken by the first
 * SetInfo of the matching open. ROMIO holds its global lock across
 * MPI_File_open, so one pending slot per process is enough; a stale entry
 * (e.g. from MPI_File_delete) only ever matches the same path.
 *
 * Grammar (prefix case-insensitive): depfs:PATH | depfs@N@K:PATH |
 * depfs@N@K@SU:PATH, SU in bytes with an optional k/K/m/M suffix. */
#include "ad_depfs.h"
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ADIOI_DEPFS_MAX_LABEL_FIELD 32

static struct {
    int valid;
    char *path;
    ADIOI_DEPFS_Layout layout;
} pending;

int ADIOI_DEPFS_Is_label(const char *name)
{
    if (name == NULL || strncasecmp(name, ADIOI_DEPFS_LABEL_WORD, ADIOI_DEPFS_LABEL_WORD_LEN))
        return 0;
    return name[ADIOI_DEPFS_LABEL_WORD_LEN] == ':' || name[ADIOI_DEPFS_LABEL_WORD_LEN] == '@';
}

/* "123" -> 123 (with k/m suffix when allow_suffix); -1 on junk or overflow */
static long long parse_number(const char *s, size_t len, int allow_suffix)
{
    unsigned long long v = 0, mult = 1;
    size_t i;
    if (len == 0)
        return -1;
    if (allow_suffix && len > 1) {
        char c = (char) tolower((unsigned char) s[len - 1]);
        if (c == 'k' || c == 'm') {
            mult = c == 'k' ? 1024ull : 1024ull * 1024ull;
            len--;
        }
    }
    for (i = 0; i < len; i++) {
        if (!isdigit((unsigned char) s[i]))
            return -1;
        v = v * 10 + (unsigned) (s[i] - '0');
        if (v > UINT32_MAX)
            return -1;
    }
    v *= mult;
    return v > UINT32_MAX ? -1 : (long long) v;
}

int ADIOI_DEPFS_Check_layout(const ADIOI_DEPFS_Layout *l, char *err, size_t err_len)
{
    if (l->k && l->n && l->k > l->n) {
        snprintf(err, err_len, "k (%u) > n (%u)", l->k, l->n);
        return -EINVAL;
    }
    if (l->n > ADIOI_DEPFS_MAX_N) {
        snprintf(err, err_len, "n (%u) > %u", l->n, (unsigned) ADIOI_DEPFS_MAX_N);
        return -EINVAL;
    }
    if (l->su && (l->su % ADIOI_DEPFS_SU_ALIGN_BYTES || l->su > ADIOI_DEPFS_MAX_SU_BYTES)) {
        snprintf(err, err_len, "stripe unit %u is not a multiple of %u up to %u",
                 (unsigned) l->su, ADIOI_DEPFS_SU_ALIGN_BYTES, ADIOI_DEPFS_MAX_SU_BYTES);
        return -EINVAL;
    }
    return 0;
}

/* "N@K" or "N@K@SU" (len bytes of spec) */
static int parse_fields(const char *spec, size_t len, ADIOI_DEPFS_Layout *out, char *err,
                        size_t err_len)
{
    static const char *const names[] = { "N", "K", "SU" };
    const char *p = spec, *end = spec + len;
    long long v[3] = { 0, 0, 0 };
    int nfields = 0;

    while (p <= end && nfields < 3) {
        const char *at = memchr(p, '@', (size_t) (end - p));
        const char *fe = at ? at : end;
        v[nfields] = parse_number(p, (size_t) (fe - p), nfields == 2);
        if (v[nfields] <= 0) {
            snprintf(err, err_len, "%s '%.*s' is not a positive number", names[nfields],
                     (int) ((fe - p) > ADIOI_DEPFS_MAX_LABEL_FIELD ? ADIOI_DEPFS_MAX_LABEL_FIELD
                            : (fe - p)), p);
            return -EINVAL;
        }
        nfields++;
        if (!at)
            break;
        p = at + 1;
        if (nfields == 3) {
            snprintf(err, err_len, "junk after SU: '@%.*s'", (int) (end - p), p);
            return -EINVAL;
        }
    }
    if (nfields < 2) {
        snprintf(err, err_len, "expected N@K or N@K@SU, got '%.*s'", (int) len, spec);
        return -EINVAL;
    }
    out->n = (unsigned) v[0];
    out->k = (unsigned) v[1];
    out->su = (uint32_t) v[2];
    return ADIOI_DEPFS_Check_layout(out, err, err_len);
}

int ADIOI_DEPFS_Parse_spec(const char *spec, ADIOI_DEPFS_Layout *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof(*out));
    return parse_fields(spec, strlen(spec), out, err, err_len);
}

int ADIOI_DEPFS_Parse_label(const char *name, ADIOI_DEPFS_Layout *out, const char **path,
                            char *err, size_t err_len)
{
    const char *colon, *spec;
    memset(out, 0, sizeof(*out));
    if (!ADIOI_DEPFS_Is_label(name)) {
        snprintf(err, err_len, "not a DePFS label (expected depfs:, depfs@N@K: or depfs@N@K@SU:)");
        return -EINVAL;
    }
    colon = strchr(name, ':');
    if (!colon) {
        snprintf(err, err_len, "missing ':' after the label");
        return -EINVAL;
    }
    *path = colon + 1;
    spec = name + ADIOI_DEPFS_LABEL_WORD_LEN;
    if (spec == colon)
        return 0;       /* depfs: - default layout */
    spec++;     /* past '@' */
    return parse_fields(spec, (size_t) (colon - spec), out, err, err_len);
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
