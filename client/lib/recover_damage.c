/* recover_damage.c - depfs_repair_strip_range: the stripes behind a range of
 * one I/O server's strip file that its background scrub found damaged
 * (ioserver/scrubber.h; recovery/README.md "Background scrub"), rebuilt the
 * way a reading client rebuilds the damage it meets (eng_scrub.c: every
 * unit of those stripes checked under the stripe locks, the bad ones
 * decoded from the good ones and written back). */
#include <errno.h>
#include <string.h>
#include "recover.h"

int depfs_repair_strip_range(depfs_t *fs, uint64_t ino, uint32_t server_id, uint64_t local_offset,
                             uint64_t length, depfs_scrub_report *rep)
{
    if (fs == NULL || rep == NULL || local_offset + length < local_offset)
        return -EINVAL;
    memset(rep, 0, sizeof *rep);
    dc_target t;
    int rc = dc_target_load(fs, ino, &t);
    if (rc < 0)
        return rc;
    if (dc_pos_of(&t.lay, server_id) < 0) {
        dc_set_error("inode %llu has no units on server %u", (unsigned long long)ino, server_id);
        return -EINVAL;
    }
    /* the unit of stripe s sits at local offset s * su on every server */
    uint64_t stripes = dc_div_up(t.size, layout_stripe_bytes(&t.lay));
    uint64_t first = 0, end = stripes;
    if (length != 0) { /* 0: the whole strip file was lost */
        first = local_offset / t.lay.su;
        end = dc_div_up(local_offset + length, t.lay.su);
    }
    if (end > stripes)
        end = stripes; /* past the file's end: a rebuild cuts it away */
    return first < end ? dc_scrub_heal(fs, ino, &t.lay, first, end - first, rep) : 0;
}
