/* scrubber.h - the background scrub of one I/O server (issue 12: disks
 * rot where nobody reads). A thread walks the server's strip files at a
 * configured rate and verifies every block against its checksum (strips.h
 * reads do that); a strip file lost beside its sidecar counts too. What it
 * finds stays on a bounded list, reported in heartbeat replies, until a
 * write covers it: depfs-recovery rebuilds those stripes from the other
 * units (the same repair a reading client does), and the write that stores
 * the rebuilt unit makes it count as repaired. A listed range that reads
 * fine again at the next pass (rewritten whole some other way) is dropped.
 *
 * It yields to clients: while the server began client I/O within the
 * last IOS_SCRUB_YIELD_MS (client_io.h) it waits, though never longer than
 * IOS_SCRUB_MAX_WAIT_MS between two chunks. */
#ifndef DEPFS_IOS_SCRUBBER_H
#define DEPFS_IOS_SCRUBBER_H
#include <stddef.h>
#include <stdint.h>

#include "client_io.h"
#include "strips.h"

#define IOS_SCRUB_CHUNK_BYTES (256u << 10) /* verified per step */
#define IOS_SCRUB_PROBE_BYTES 4096u        /* a failing chunk is re-read in pieces this big */
#define IOS_SCRUB_DAMAGE_MAX 64u           /* unrepaired ranges kept (more: found next pass) */
#define IOS_SCRUB_YIELD_MS 20u
#define IOS_SCRUB_MAX_WAIT_MS 1000u
#define IOS_SCRUB_PASS_GAP_MS 5000u        /* at least this between two passes */

typedef struct ios_scrub_stats {
    uint64_t bytes_verified;
    uint64_t blocks_damaged;  /* probe ranges found damaged, and strip files found lost */
    uint64_t blocks_repaired; /* of those, covered by a write since */
    uint64_t passes;
    uint64_t last_pass_end_s; /* wall clock; 0: no pass finished yet */
    uint64_t last_pass_bytes, last_pass_ms; /* what it verified, how long it took */
    uint32_t rate;            /* bytes/s, 0: off */
} ios_scrub_stats;

/* A damaged range of a strip file; length 0: the strip file is lost. */
typedef struct ios_scrub_damage {
    uint64_t file_id, offset, length;
} ios_scrub_damage;

typedef struct ios_scrubber ios_scrubber;

/* rate 0: no thread (the counters still answer); client_io NULL: it
 * never yields. */
int ios_scrubber_start(ios_strips *s, uint32_t rate, ios_client_io *client_io,
                       ios_scrubber **out);
void ios_scrubber_stop(ios_scrubber *sc);
/* A write stored [offset, offset+length) of file_id: listed ranges it
 * covers are repaired (any write to a lost strip file recreates it). */
void ios_scrubber_note_write(ios_scrubber *sc, uint64_t file_id, uint64_t offset,
                             uint64_t length);
/* The file was removed: its listed ranges are dropped. */
void ios_scrubber_note_remove(ios_scrubber *sc, uint64_t file_id);
void ios_scrubber_stats(ios_scrubber *sc, ios_scrub_stats *out);
/* Copies up to max listed ranges; returns how many. */
size_t ios_scrubber_damage(ios_scrubber *sc, ios_scrub_damage *out, size_t max);

#endif
