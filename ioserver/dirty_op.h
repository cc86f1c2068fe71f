/* dirty_op.h - what an IO_DIRTY request asks for, read in one place. Its
 * fields overlap (sync, unlock, dirty_action; handlers.c documents each),
 * so the access rule (authz.c), the bounds (req_check.c) and the handler
 * (handlers.c) must all take the same reading of them: where one read a
 * "probe" that the handler ran as a clear or a rejoin, a client could
 * clear dirty records or bring a server UP, and a request without a
 * server id reached the handler's assertion. */
#ifndef DEPFS_IOS_DIRTY_OP_H
#define DEPFS_IOS_DIRTY_OP_H
#include <stdbool.h>

#include "depfs.pb-c.h"

typedef enum ios_dirty_op {
    IOS_DIRTY_UP,      /* sync: the rejoin's end, this server becomes UP */
    IOS_DIRTY_LIST,    /* local_size = S: the records of S from file_id on */
    IOS_DIRTY_CLAIM,   /* local_size = S: claim (S, file_id) */
    IOS_DIRTY_CLEAR,   /* local_size = S: clear (S, file_id) if still claimed */
    IOS_DIRTY_PROBE,   /* down_servers: which of them have a record for file_id */
    IOS_DIRTY_UNKNOWN, /* a dirty_action this server does not know */
} ios_dirty_op;

/* sync first, then unlock (a clear), then dirty_action (absent: a list). */
ios_dirty_op ios_dirty_op_of(const Depfs__IoRequest *q);
/* Whether op names a server's records in local_size. */
static inline bool ios_dirty_op_names_server(ios_dirty_op op)
{
    return op == IOS_DIRTY_LIST || op == IOS_DIRTY_CLAIM || op == IOS_DIRTY_CLEAR;
}

#endif
