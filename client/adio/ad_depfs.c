/* ad_depfs.c - the DePFS driver's operations table. Data paths that need
 * nothing DePFS-specific (strided, collective two-phase, non-blocking) use
 * ROMIO's generic routines on top of the driver's contiguous read/write. */
#include "ad_depfs.h"
#include "adioi.h"

struct ADIOI_Fns_struct ADIO_DEPFS_operations = {
    ADIOI_DEPFS_Open,           /* Open */
    ADIOI_DEPFS_OpenColl,       /* OpenColl: rank 0 creates, then all open, and agree */
    ADIOI_DEPFS_ReadContig,     /* ReadContig */
    ADIOI_DEPFS_WriteContig,    /* WriteContig */
    ADIOI_DEPFS_ReadStridedColl,        /* ReadStridedColl: contiguous direct, else two-phase */
    ADIOI_DEPFS_WriteStridedColl,       /* WriteStridedColl: contiguous direct, else two-phase
                                         * on stripe-aligned domains; flushed */
    ADIOI_GEN_SeekIndividual,   /* SeekIndividual */
    ADIOI_DEPFS_Fcntl,          /* Fcntl */
    ADIOI_DEPFS_SetInfo,        /* SetInfo */
    ADIOI_GEN_ReadStrided,      /* ReadStrided */
    ADIOI_DEPFS_WriteStrided,   /* WriteStrided: naive (no data-sieving writes), one flush */
    ADIOI_DEPFS_Close,          /* Close */
    ADIOI_FAKE_IreadContig,     /* IreadContig */
    ADIOI_FAKE_IwriteContig,    /* IwriteContig */
    ADIOI_FAKE_IODone,          /* ReadDone */
    ADIOI_FAKE_IODone,          /* WriteDone */
    ADIOI_FAKE_IOComplete,      /* ReadComplete */
    ADIOI_FAKE_IOComplete,      /* WriteComplete */
    ADIOI_FAKE_IreadStrided,    /* IreadStrided */
    ADIOI_FAKE_IwriteStrided,   /* IwriteStrided */
    ADIOI_DEPFS_Flush,          /* Flush */
    ADIOI_DEPFS_Resize,         /* Resize */
    ADIOI_DEPFS_Delete,         /* Delete */
    ADIOI_DEPFS_Feature,        /* Features */
    "DEPFS: erasure-coded DePFS through libdepfs",
    ADIOI_GEN_IreadStridedColl, /* IreadStridedColl */
    ADIOI_GEN_IwriteStridedColl,        /* IwriteStridedColl */
    ADIOI_DEPFS_SetLock         /* SetLock: node-local lock files, see ad_depfs_lock.c */
};

int ADIOI_DEPFS_Feature(ADIO_File fd, int flag)
{
    (void) fd;
    switch (flag) {
        case ADIO_LOCKS:
        case ADIO_SHARED_FP:
        case ADIO_ATOMIC_MODE:
        case ADIO_UNLINK_AFTER_CLOSE:
        case ADIO_TWO_PHASE:
        case ADIO_SCALABLE_RESIZE:
            return 1;
        case ADIO_DATA_SIEVING_WRITES:  /* would read-modify-write whole extents */
        case ADIO_IMMEDIATELY_VISIBLE:  /* write-behind until flush/sync/close */
        case ADIO_SCALABLE_OPEN:
        default:
            return 0;
    }
}
