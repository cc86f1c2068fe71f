/* holds_journal.h - the MDS's holds table (holds.h) kept across restarts
 * by its journal in the namespace store (namespace.h "holds journal").
 *
 * At a start, the previous run's holds are known one by one when its
 * journal names them all: it stopped cleanly, or crashed (its process
 * killed) under the kernel boot this run starts in. Then no file waits
 * for the start floor: a file unlinked after the restart is purged as
 * soon as no hold of it, journalled or new, is live. Otherwise (the
 * machine crashed, or a store from before the journal) the start floor is
 * what holds.h says: the clean stop's record, or start + AUTH_CAP_TTL_S.
 * Either way the journalled holds are loaded, and a floor the previous
 * run had (a full table's) still holds. */
#ifndef DEPFS_MDS_HOLDS_JOURNAL_H
#define DEPFS_MDS_HOLDS_JOURNAL_H
#include <stdint.h>
#include "holds.h"
#include "namespace.h"

/* This kernel boot's id into out (MDS_BOOT_ID_MAX + 1 bytes): the
 * kernel's, or "" when it cannot be read (a crash is then never taken for
 * one under the same boot). Test builds (make hooks) take
 * DEPFS_TEST_BOOT_ID from the environment instead when it is set: a
 * test's "reboot". */
void mds_boot_id(char *out);

/* The holds table of a run starting at now_s in boot boot_id: the
 * previous run's holds loaded, the start floor set, the journal on (and
 * its start recorded durably). 0 and *out, or -errno with why. */
int mds_holds_open(mds_ns *ns, const char *boot_id, uint64_t now_s, mds_holds **out, char *why);

#endif
