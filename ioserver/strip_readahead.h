/* strip_readahead.h - the I/O server's own read-ahead of its strip files.
 *
 * A strip file holds this server's unit of every stripe in stripe order,
 * whatever its role: with parity rotating (common/layout.h), n - k of every
 * n units are parity. The kernel's read-ahead reads a file's bytes in
 * order, so for a fault-free reader, who wants only the data units, a third
 * of what it read ahead for 8@6 was parity nobody asked for, and that is
 * what a disk-bound read lost. So strip files are opened with the kernel's
 * read-ahead off (POSIX_FADV_RANDOM), and this module plans the server's
 * own, for the streams of each strip file:
 *  - a read where a stream ended (or past the parity units a data-unit
 *    reader skips after that) continues it, and so, once it is sequential,
 *    does a read within IOS_RA_REORDER times its last read's length of
 *    where it has got to (parallel requests arrive out of order); a read at
 *    the file's start begins a stream; any other read takes over the
 *    stream used longest ago and reads nothing ahead (random readers).
 *    IOS_RA_STREAMS per file: readers of different regions of one file
 *    (MPI ranks, a rebuild beside a client) keep theirs;
 *  - a stream's window starts at twice its first read (at least
 *    IOS_RA_MIN_BYTES), doubles with each read up to IOS_RA_MAX_BYTES, and
 *    is read ahead (POSIX_FADV_WILLNEED: the kernel starts the disk reads,
 *    nobody waits) once less than half of it is ahead of the stream;
 *  - what is read ahead is what the stream's readers want: the data units
 *    when every read of it said which those are (IoRequest.data_units,
 *    ios_data_units), else every unit (degraded reads, repairs, rebuilds
 *    read parity too).
 *
 * Pure planning (no I/O, no locks): strips.c keeps an ios_ra_file per open
 * strip file under its lock and issues the reads. */
#ifndef DEPFS_IOS_STRIP_READAHEAD_H
#define DEPFS_IOS_STRIP_READAHEAD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strips.h"

#define IOS_RA_MIN_BYTES (256u << 10) /* a stream's first window, at least */
#define IOS_RA_MAX_BYTES (8u << 20)   /* a stream's window, at most */
#define IOS_RA_STREAMS 4u             /* per strip file */
#define IOS_RA_REORDER 4u             /* reads out of order by this many lengths continue */
/* Ranges one plan names at most (su 512 would cut a window of data units
 * into thousands): a data-unit reader's window is capped to fit. */
#define IOS_RA_MAX_RANGES 64u

typedef struct ios_ra_stream {
    uint64_t used;       /* when a read last continued it (0: free) */
    uint64_t next;       /* where its reads have got to */
    uint64_t span;       /* the length of the last read it took */
    uint64_t ahead;      /* read ahead up to here */
    uint64_t window;     /* 0: not sequential (yet) */
    ios_data_units units;/* what its readers want, with has_units */
    bool has_units;      /* every read of it named its data units */
} ios_ra_stream;

/* The streams of one strip file (zeroed: none). */
typedef struct ios_ra_file {
    uint64_t clock; /* reads planned */
    ios_ra_stream s[IOS_RA_STREAMS];
} ios_ra_file;

/* A read of local bytes [first, end) (first < end) of the file, wanting
 * the units `want` says (NULL: every unit): advances the file's streams
 * and fills out[] with the ranges to read ahead now, in order (none past
 * IOS_STRIP_BYTES_CAP); returns how many. */
size_t ios_ra_plan(ios_ra_file *f, const ios_data_units *want, uint64_t first, uint64_t end,
                   ios_extent out[IOS_RA_MAX_RANGES]);

#endif
