/* ios_fixture.h - an I/O server's request handling without a transport,
 * for the unit tests that drive ios_process on a real data dir: a fresh
 * temp dir (/tmp/<name>.XXXXXX) with its strip store, lock table and
 * state store in an ios_ctx (everything else NULL: no cluster config, no
 * stall detection, lease, scrubber or capability key). Check assertions
 * fail the test on any error. */
#ifndef DEPFS_TEST_IOS_FIXTURE_H
#define DEPFS_TEST_IOS_FIXTURE_H
#include <limits.h>
#include <stdint.h>

#include "ioserver/handlers.h"

typedef struct ios_fixture {
    char dir[PATH_MAX];
    ios_ctx ctx;
} ios_fixture;

void ios_fixture_open(ios_fixture *f, const char *name, uint32_t server_id,
                      uint32_t max_bulk_bytes);
/* Closes everything and removes the temp dir. */
void ios_fixture_close(ios_fixture *f);

#endif
