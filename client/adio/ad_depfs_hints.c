/* ad_depfs_hints.c - hints: depfs_n, depfs_k, depfs_su plus ROMIO's own.
 *
 * ADIOI_GEN_SetInfo keeps only hints it knows, so the driver stores its
 * layout request in fd->info itself. The first SetInfo of an open (before
 * the file exists in ROMIO's eyes) merges, field by field, the label recorded
 * by the prefix step > the user's hints > $DEPFS_LAYOUT; ADIOI_DEPFS_Open
 * creates with that and then overwrites the keys with the layout actually
 * used. Later SetInfo calls (set_view, set_info) cannot change a layout. */
#include "ad_depfs.h"
#include "adioi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* one unsigned hint; 0 when absent, -1 (with error_code set) when malformed */
static long long hint_uint(MPI_Info info, const char *key, int *error_code)
{
    static char myname[] = "ADIOI_DEPFS_SETINFO";
    char value[MPI_MAX_INFO_VAL + 1], *end;
    unsigned long long v;
    int flag = 0;

    if (info == MPI_INFO_NULL)
        return 0;
    ADIOI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag);
    if (!flag)
        return 0;
    v = strtoull(value, &end, 10);
    if (end == value || (*end != '\0' && strchr("kKmM", *end) == NULL) || v > UINT32_MAX) {
        *error_code = MPIO_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, myname, __LINE__,
                                           MPI_ERR_ARG, "**io", "**io %s",
                                           "bad DePFS hint value (want an unsigned number)");
        return -1;
    }
    if (*end == 'k' || *end == 'K')
        v *= 1024;
    else if (*end == 'm' || *end == 'M')
        v *= 1024 * 1024;
    return v > UINT32_MAX ? -1 : (long long) v;
}

static void merge(ADIOI_DEPFS_Layout *into, const ADIOI_DEPFS_Layout *lower)
{
    if (!into->n)
        into->n = lower->n;
    if (!into->k)
        into->k = lower->k;
    if (!into->su)
        into->su = lower->su;
}

static int layout_from_env(ADIOI_DEPFS_Layout *out)
{
    char err[ADIOI_DEPFS_ERR_LEN];
    const char *spec = getenv(ADIOI_DEPFS_LAYOUT_ENV);
    memset(out, 0, sizeof(*out));
    if (!spec || !*spec)
        return 0;
    if (ADIOI_DEPFS_Parse_spec(spec, out, err, sizeof(err)) < 0) {
        memset(out, 0, sizeof(*out));
        return -1;
    }
    return 0;
}

static int info_has(MPI_Info info, const char *key)
{
    char value[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    if (info != MPI_INFO_NULL)
        ADIOI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag);
    return flag;
}

/* an on/off hint of ours into fd->info: enable/true/1 or disable/false/0
 * as the user gave it, or auto where the hint has it (dflt "auto"), else
 * dflt when not there yet */
static void copy_switch(ADIO_File fd, MPI_Info users_info, const char *key, const char *dflt)
{
    char value[MPI_MAX_INFO_VAL + 1];
    int flag = 0;

    if (users_info != MPI_INFO_NULL)
        ADIOI_Info_get(users_info, key, MPI_MAX_INFO_VAL, value, &flag);
    if (flag) {
        const char *set = "disable";
        if (!strcasecmp(value, "enable") || !strcasecmp(value, "true") || !strcmp(value, "1"))
            set = "enable";
        else if (!strcmp(dflt, "auto") && !strcasecmp(value, "auto"))
            set = "auto";
        ADIOI_Info_set(fd->info, key, set);
    } else if (!info_has(fd->info, key)) {
        ADIOI_Info_set(fd->info, key, dflt);
    }
}

/* depfs_write_behind may change any time; depfs_node_cache and
 * depfs_stripe_gather count at the open only */
static void copy_switches(ADIO_File fd, MPI_Info users_info)
{
    ADIOI_DEPFS_File *file = fd->fs_ptr;

    copy_switch(fd, users_info, ADIOI_DEPFS_HINT_WRITE_BEHIND, "enable");
    copy_switch(fd, users_info, ADIOI_DEPFS_HINT_NODE_CACHE, "enable");
    copy_switch(fd, users_info, ADIOI_DEPFS_HINT_STRIPE_GATHER, "auto");
    if (file)
        file->write_behind = ADIOI_DEPFS_Switch_on(fd, ADIOI_DEPFS_HINT_WRITE_BEHIND);
}

int ADIOI_DEPFS_Switch(ADIO_File fd, const char *key)
{
    char value[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    ADIOI_Info_get(fd->info, key, MPI_MAX_INFO_VAL, value, &flag);
    if (!flag)
        return ADIOI_DEPFS_OFF;
    if (!strcmp(value, "enable"))
        return ADIOI_DEPFS_ON;
    return !strcmp(value, "auto") ? ADIOI_DEPFS_AUTO : ADIOI_DEPFS_OFF;
}

int ADIOI_DEPFS_Switch_on(ADIO_File fd, const char *key)
{
    return ADIOI_DEPFS_Switch(fd, key) == ADIOI_DEPFS_ON;
}

/* MPI_Info_delete fails on a missing key */
static void info_drop(MPI_Info info, const char *key)
{
    char value[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    ADIOI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag);
    if (flag)
        ADIOI_Info_delete(info, key);
}

static void store_request(MPI_Info info, const ADIOI_DEPFS_Layout *l)
{
    char value[32];
    info_drop(info, ADIOI_DEPFS_HINT_N);
    info_drop(info, ADIOI_DEPFS_HINT_K);
    info_drop(info, ADIOI_DEPFS_HINT_SU);
    if (l->n) {
        snprintf(value, sizeof(value), "%u", l->n);
        ADIOI_Info_set(info, ADIOI_DEPFS_HINT_N, value);
    }
    if (l->k) {
        snprintf(value, sizeof(value), "%u", l->k);
        ADIOI_Info_set(info, ADIOI_DEPFS_HINT_K, value);
    }
    if (l->su) {
        snprintf(value, sizeof(value), "%u", (unsigned) l->su);
        ADIOI_Info_set(info, ADIOI_DEPFS_HINT_SU, value);
    }
}

void ADIOI_DEPFS_SetInfo(ADIO_File fd, MPI_Info users_info, int *error_code)
{
    static char myname[] = "ADIOI_DEPFS_SETINFO";
    ADIOI_DEPFS_Layout want, hints, env;
    char err[ADIOI_DEPFS_ERR_LEN], msg[2 * ADIOI_DEPFS_ERR_LEN];
    long long v;

    ADIOI_GEN_SetInfo(fd, users_info, error_code);
    if (*error_code != MPI_SUCCESS)
        return;
    /* every process opens (keeps the reported layout the same everywhere) */
    fd->hints->deferred_open = 0;
    copy_switches(fd, users_info);
    if (fd->fs_ptr != NULL || fd->is_open)
        return;         /* open already: the layout is fixed */

    ADIOI_DEPFS_user_hints.fd = fd;
    ADIOI_DEPFS_user_hints.cb_buffer_size = info_has(users_info, "cb_buffer_size");
    ADIOI_DEPFS_user_hints.striping_unit = info_has(users_info, "striping_unit");
    ADIOI_DEPFS_Take_pending(fd->filename, &want);
    memset(&hints, 0, sizeof(hints));
    if ((v = hint_uint(users_info, ADIOI_DEPFS_HINT_N, error_code)) < 0)
        return;
    hints.n = (unsigned) v;
    if ((v = hint_uint(users_info, ADIOI_DEPFS_HINT_K, error_code)) < 0)
        return;
    hints.k = (unsigned) v;
    if ((v = hint_uint(users_info, ADIOI_DEPFS_HINT_SU, error_code)) < 0)
        return;
    hints.su = (uint32_t) v;
    merge(&want, &hints);
    if (layout_from_env(&env) < 0) {
        *error_code = MPIO_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, myname, __LINE__,
                                           MPI_ERR_ARG, "**io", "**io %s",
                                           "DEPFS_LAYOUT is not N@K or N@K@SU");
        return;
    }
    merge(&want, &env);
    if (ADIOI_DEPFS_Check_layout(&want, err, sizeof(err)) < 0) {
        snprintf(msg, sizeof(msg), "DePFS layout from label/hints/DEPFS_LAYOUT: %s", err);
        *error_code = MPIO_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, myname, __LINE__,
                                           MPI_ERR_ARG, "**io", "**io %s", msg);
        return;
    }
    store_request(fd->info, &want);
    /* full-stripe alignment known up front when the request names it; the
     * open re-aligns to the layout actually used */
    if (want.k && want.su) {
        depfs_layout_info lay;
        memset(&lay, 0, sizeof(lay));
        lay.n = want.n;
        lay.k = want.k;
        lay.stripe_unit = want.su;
        ADIOI_DEPFS_Align_hints(fd, &lay);
        store_request(fd->info, &want);
        info_drop(fd->info, ADIOI_DEPFS_HINT_LAYOUT);   /* not created yet */
    }
    *error_code = MPI_SUCCESS;
}
