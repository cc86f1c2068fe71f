/* readahead.h - depfs-fuse: the kernel's read-ahead window for the mount.
 *
 * The kernel reads ahead on a FUSE mount through the mount's backing device
 * (bdi), whose window starts at 128 KiB and which FUSE_INIT can only lower:
 * a third of one 8@6@64k stripe, so a sequential reader keeps ~2 servers of
 * 8 busy per request. Once INIT is done we raise the bdi's read_ahead_kb
 * (sysfs, root only), as an admin would by hand; the kernel then keeps
 * several max_read (1 MiB) requests in flight for a sequential reader. */
#ifndef DFUSE_READAHEAD_H
#define DFUSE_READAHEAD_H

/* Default window: 16 MiB, ~43 stripes of 8@6@64k, 16 requests of 1 MiB.
 * Cold 1 GiB sequential read of an 8@6 file on 8 local servers, MB/s over 3
 * rounds (2 cores): 128 KiB 480-655, 1 MiB 806-869, 4 MiB 974-1172, 8 MiB
 * 871-1442, 16 MiB 779-1428 (most rounds 1260-1430), 32 MiB 852-1292. */
#define DFUSE_READ_AHEAD_KB_DEFAULT 16384u
/* Upper bound of -o read_ahead_kb: a larger window only pins more page
 * cache per sequential reader. */
#define DFUSE_READ_AHEAD_KB_MAX (256u * 1024u)

/* Writes KB to /sys/class/bdi/MAJ:MIN/read_ahead_kb of the FUSE mount at
 * MOUNTPOINT. Call it after the kernel took the INIT reply (an earlier
 * value is lowered again by INIT): dfuse_io_after_init. It finds the
 * mount's device with statx(AT_STATX_DONT_SYNC), which sends this daemon no
 * request, so it may run on a session loop thread. 0 or -errno; the caller
 * logs a failure, which is harmless: reads work with the kernel's window. */
int dfuse_readahead_set(const char *mountpoint, unsigned kb);

#endif
