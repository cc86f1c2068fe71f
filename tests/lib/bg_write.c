/* bg_write.c - a write and its fsync in a thread of its own (bg_write.h). */
#include "tests/lib/bg_write.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/types.h>

static void *bg_write(void *arg)
{
    td_bg_write *w = arg;
    depfs_fh_t *fh = NULL;
    w->rc = depfs_open(w->fs, w->path, O_RDWR, 0, &fh);
    if (w->rc == 0) {
        ssize_t n = depfs_write(fh, w->buf, w->len, w->off);
        w->rc = n == (ssize_t)w->len ? depfs_fsync(fh) : (n < 0 ? (int)n : -EIO);
        int crc = depfs_close(fh);
        if (w->rc == 0)
            w->rc = crc;
    }
    atomic_store(&w->done, true);
    return NULL;
}

void td_bg_write_start(td_bg_write *w)
{
    w->rc = 0;
    atomic_store(&w->done, false);
    ck_assert_int_eq(pthread_create(&w->thread, NULL, bg_write, w), 0);
}

int td_bg_write_join(td_bg_write *w)
{
    ck_assert_int_eq(pthread_join(w->thread, NULL), 0);
    return w->rc;
}
