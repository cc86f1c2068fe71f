##
## Makefile.mk - the DePFS ROMIO driver (client/adio in the DePFS tree,
## copied to src/mpi/romio/adio/ad_depfs by patch-mpich.sh).
##

if BUILD_AD_DEPFS

noinst_HEADERS += adio/ad_depfs/ad_depfs.h

romio_other_sources +=                  \
    adio/ad_depfs/ad_depfs.c            \
    adio/ad_depfs/ad_depfs_prefix.c     \
    adio/ad_depfs/ad_depfs_fs.c         \
    adio/ad_depfs/ad_depfs_open.c       \
    adio/ad_depfs/ad_depfs_close.c      \
    adio/ad_depfs/ad_depfs_io.c         \
    adio/ad_depfs/ad_depfs_node_cache.c \
    adio/ad_depfs/ad_depfs_stripe_gather.c \
    adio/ad_depfs/ad_depfs_hints.c      \
    adio/ad_depfs/ad_depfs_resize.c     \
    adio/ad_depfs/ad_depfs_delete.c     \
    adio/ad_depfs/ad_depfs_fcntl.c      \
    adio/ad_depfs/ad_depfs_flush.c      \
    adio/ad_depfs/ad_depfs_lock.c

endif BUILD_AD_DEPFS
