/* api.h - helpers the libdepfs entry points (api_*.c) share with each
 * other; nothing below the entry points uses them. */
#ifndef DEPFS_CLIENT_API_H
#define DEPFS_CLIENT_API_H
#include "engines.h"
#include "depfs_admin.h"

/* IO_STAT on every server in parallel; out[i] for servers[i] (NULL when
 * unreachable), freed with dc_stat_free. */
void dc_stat_servers(depfs_t *fs, Depfs__IoReply **out);
void dc_stat_free(depfs_t *fs, Depfs__IoReply **out);

/* A read-only handle on ino for a client that needs no capabilities (the
 * cluster key's holders: depfs-recovery, the admin CLI): MDS_OPEN as a
 * hold (renew_hold), which no new-open rule refuses (a file a migrate
 * replaced is ESTALE to new opens, and still read through older handles).
 * The MDS holds ino for this client while the handle is open (the keeper
 * renews it; depfs_close gives it back). -ENOENT: gone, or unlinked and
 * held by nobody, its strip files possibly going. */
int dc_open_held(depfs_t *fs, uint64_t ino, depfs_fh_t **fh);

#endif
