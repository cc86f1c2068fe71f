/* dirty_op.c - the one reading of an IO_DIRTY request (dirty_op.h). */
#include "dirty_op.h"

ios_dirty_op ios_dirty_op_of(const Depfs__IoRequest *q)
{
    if (q->has_sync && q->sync)
        return IOS_DIRTY_UP;
    if (q->has_unlock && q->unlock)
        return IOS_DIRTY_CLEAR;
    if (!q->has_dirty_action)
        return IOS_DIRTY_LIST;
    switch (q->dirty_action) {
    case DEPFS__DIRTY_ACTION__DIRTY_LIST:
        return IOS_DIRTY_LIST;
    case DEPFS__DIRTY_ACTION__DIRTY_CLAIM:
        return IOS_DIRTY_CLAIM;
    case DEPFS__DIRTY_ACTION__DIRTY_CLEAR:
        return IOS_DIRTY_CLEAR;
    case DEPFS__DIRTY_ACTION__DIRTY_PROBE:
        return IOS_DIRTY_PROBE;
    default:
        return IOS_DIRTY_UNKNOWN;
    }
}
