/* mds_store.h - the MDS unit tests' namespace store: a real LevelDB in a
 * fresh temp dir with the namespace opened on it, N servers with ids
 * 10, 11, ... and a default layout. Each call fails the running Check test
 * on error.
 *
 *   tms_setup(&s, 6, 4, 2, 65536);  temp dir + store + namespace
 *   tms_reopen(&s);                 close and open again (a restart)
 *   tms_teardown(&s);               close, remove the temp dir */
#ifndef DEPFS_TEST_MDS_STORE_H
#define DEPFS_TEST_MDS_STORE_H
#include <limits.h>
#include <stdint.h>
#include "kvstore.h"
#include "mds/namespace.h"

typedef struct tms_store {
    char dir[PATH_MAX];
    mds_ns_params params;
    kvstore *kv;
    mds_ns *ns;
} tms_store;

void tms_setup(tms_store *s, unsigned n_servers, unsigned def_n, unsigned def_k, uint32_t def_su);
void tms_open(tms_store *s);
void tms_close(tms_store *s);
void tms_reopen(tms_store *s);
void tms_teardown(tms_store *s);

#endif
