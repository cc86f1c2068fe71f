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

#endif
