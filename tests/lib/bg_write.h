/* bg_write.h - a write and its fsync through libdepfs in a thread of its
 * own, for tests that act on the cluster while the write waits (a server
 * it must go around, a rejoin it must wait for) and then check whether it
 * was acknowledged, and when.
 *
 *   td_bg_write w = {.fs = fs, .path = "/f", .buf = b, .len = n, .off = 0};
 *   td_bg_write_start(&w);  ...  atomic_load(&w.done)  ...
 *   ck_assert_int_eq(td_bg_write_join(&w), 0);
 *
 * The thread never asserts (a failed check in it would end the test case
 * with no word of where): its outcome is in rc. */
#ifndef DEPFS_TEST_BG_WRITE_H
#define DEPFS_TEST_BG_WRITE_H
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "depfs.h"

typedef struct td_bg_write {
    depfs_t *fs;       /* in: the client */
    const char *path;  /* in: an existing file, opened O_RDWR */
    const void *buf;   /* in: len bytes written at off */
    size_t len;
    uint64_t off;
    int rc;            /* out: 0 once written and fsynced, else the first error */
    atomic_bool done;  /* out: true once acknowledged (or failed) */
    pthread_t thread;
} td_bg_write;

/* Starts the thread; the test fails when it cannot. */
void td_bg_write_start(td_bg_write *w);
/* Waits for it; returns w->rc. */
int td_bg_write_join(td_bg_write *w);

#endif
