/* fuzz_dir.h - a scratch directory for a fuzz target's stores: under
 * $DEPFS_FUZZ_DIR, else /dev/shm (tmpfs: syncs cost nothing), else /tmp;
 * removed when the target exits normally. Header only. */
#ifndef DEPFS_FUZZ_DIR_H
#define DEPFS_FUZZ_DIR_H
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_DIR_SHM "/dev/shm"
#define FUZZ_DIR_FDS 16 /* descriptors nftw may hold */
#define FUZZ_DIR_TMP "/tmp"

static char fuzz_dir_path[PATH_MAX];

static inline void fuzz_dir_remove(void)
{
    char cmd[PATH_MAX + 16];
    if (!fuzz_dir_path[0])
        return;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fuzz_dir_path);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz: could not remove %s\n", fuzz_dir_path);
}

static const char *fuzz_dir_keep; /* fuzz_dir_empty: the directory itself stays */

static inline int fuzz_dir_unlink(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    if (strcmp(path, fuzz_dir_keep) != 0 && remove(path) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

/* Removes everything inside dir (without a shell: it runs per input). */
static inline void fuzz_dir_empty(const char *dir)
{
    fuzz_dir_keep = dir;
    if (nftw(dir, fuzz_dir_unlink, FUZZ_DIR_FDS, FTW_DEPTH | FTW_PHYS) != 0)
        abort();
}

/* Makes the directory (name: depfs-fuzz-<tag>-XXXXXX); aborts on failure. */
static inline const char *fuzz_dir_make(const char *tag)
{
    const char *base = getenv("DEPFS_FUZZ_DIR");
    if (!base)
        base = access(FUZZ_DIR_SHM, W_OK) == 0 ? FUZZ_DIR_SHM : FUZZ_DIR_TMP;
    snprintf(fuzz_dir_path, sizeof(fuzz_dir_path), "%s/depfs-fuzz-%s-XXXXXX", base, tag);
    if (!mkdtemp(fuzz_dir_path)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(fuzz_dir_remove);
    return fuzz_dir_path;
}

#endif
