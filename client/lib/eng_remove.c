/* eng_remove.c - removing every strip file of a file whose last link went
 * away and that no handle may use any more: the purge queue's drainer
 * (recover_purge.c) calls it for each entry the MDS lists. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "engines.h"
#include "log.h"

int dc_data_remove(depfs_t *fs, uint64_t ino, const layout *lay, uint32_t reach)
{
    dc_req *reqs = calloc(lay->n, sizeof *reqs);
    if (reqs == NULL)
        return -ENOMEM;
    for (unsigned p = 0; p < lay->n; p++) {
        dc_req_init(&reqs[p], lay, p, DEPFS__IO_OP__IO_REMOVE);
        if ((reach >> p) & 1u) {
            reqs[p].any_state = true;
        } else {
            reqs[p].active = false;
            reqs[p].result = DC_ERR_DOWN;
        }
    }
    dc_io_run(fs, ino, reqs, lay->n);
    int rc = 0;
    unsigned failed_pos = 0;
    for (unsigned p = 0; p < lay->n && rc == 0; p++) /* gone already (ENOENT) is done */
        if (reqs[p].result < 0 && reqs[p].result != -ENOENT) {
            rc = reqs[p].result;
            failed_pos = p;
        }
    if (rc < 0)
        dc_set_error("removing the strip files of inode %llu: server %u: %s",
                     (unsigned long long)ino, lay->servers[failed_pos],
                     rc == DC_ERR_DOWN ? "down" : strerror(-rc));
    free(reqs);
    return rc;
}
