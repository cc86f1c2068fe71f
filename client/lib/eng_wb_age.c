/* eng_wb_age.c - when write-behind sends a scatter set early (eng_wb_age.h). */
#include "eng_wb_age.h"

bool dc_wb_fly_early(uint64_t now_ms, uint64_t set_first_ms, uint64_t last_out_ms, unsigned n_ext,
                     bool flying)
{
    if (n_ext == 0 || flying)
        return false;
    if (now_ms < set_first_ms + DC_WB_FIRST_AGE_MS)
        return false;
    return last_out_ms == 0 || now_ms >= last_out_ms + DC_WB_QUIET_MS;
}
