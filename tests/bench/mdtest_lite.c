/* mdtest_lite.c - metadata rates in the style of mdtest: P processes each
 * create, then stat, then remove F files in ONE shared directory, or with
 * --unique-dir (mdtest's -u) each in a directory of its own.
 *
 *   mdtest_lite DIR [--procs P] [--files F] [--unique-dir] [--drop-caches]
 *               [--durable]
 *
 * The shared directory is DIR/mdtest_lite.PID (made and removed here); with
 * --unique-dir, process R works in DIR/mdtest_lite.PID/d.R instead, made
 * before and removed after the timed phases. Each
 * phase starts all processes on a process-shared barrier and ends when the
 * last one is done; the rate is P*F operations over that wall time. create is
 * open(O_CREAT|O_EXCL|O_WRONLY) + close, stat is stat(2), remove is
 * unlink(2). With --drop-caches (root only) the kernel's dentry and inode
 * caches are dropped before the stat and remove phases, so every operation
 * reaches the file system daemon instead of the FUSE attribute cache.
 * With --durable each create and remove is made durable before the next,
 * as a local file system needs to be told: a create is followed by an
 * fsync of the new file and of its directory, a remove by an fsync of the
 * directory (DePFS's creates and removes are durable when they return, so
 * this is the reference that promises what DePFS does).
 *
 * Output: one line per phase, "PHASE OPS_PER_S", e.g. "create 1234.5". */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MDT_DEFAULT_PROCS 2u
#define MDT_DEFAULT_FILES 1000u
#define MDT_MAX_PROCS 64u
#define MDT_MAX_FILES 1000000u
#define MDT_FILE_MODE 0644
#define MDT_DIR_MODE 0755
#define MDT_NS_PER_S 1e9
#define MDT_DROP_CACHES "/proc/sys/vm/drop_caches"

enum mdt_phase { PHASE_CREATE, PHASE_STAT, PHASE_REMOVE, PHASE_COUNT };
static const char *const phase_names[PHASE_COUNT] = {"create", "stat", "remove"};

/* Shared between the parent and the workers (MAP_SHARED). */
struct mdt_shared {
    pthread_barrier_t barrier; /* procs + the parent */
    int failed;                /* a worker's first failing errno */
};

struct mdt_args {
    const char *dir;
    unsigned procs, files;
    bool unique_dir; /* one directory per process (mdtest -u) */
    bool drop_caches;
    bool durable;    /* fsync what a create or remove changed before the next */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / MDT_NS_PER_S;
}

/* One operation on path; dir_fd >= 0 (--durable): its directory, synced
 * after a create (with the new file) or a remove. 0 or an errno. */
static int file_op(enum mdt_phase phase, const char *path, int dir_fd)
{
    struct stat st;
    int fd, err = 0;
    switch (phase) {
    case PHASE_CREATE:
        fd = open(path, O_CREAT | O_EXCL | O_WRONLY, MDT_FILE_MODE);
        if (fd < 0)
            return errno;
        if (dir_fd >= 0 && fsync(fd) != 0)
            err = errno;
        if (close(fd) != 0 && !err)
            err = errno;
        break;
    case PHASE_STAT:
        return stat(path, &st) != 0 ? errno : 0;
    case PHASE_REMOVE:
        if (unlink(path) != 0)
            return errno;
        break;
    default:
        return EINVAL;
    }
    if (!err && dir_fd >= 0 && fsync(dir_fd) != 0)
        err = errno;
    return err;
}

/* The directory process RANK works in: the shared one, or its own below it.
 * Returns 0, or ENAMETOOLONG. */
static int rank_dir(const struct mdt_args *a, const char *shared_dir, unsigned rank, char *out,
                    size_t size)
{
    int n = a->unique_dir ? snprintf(out, size, "%s/d.%u", shared_dir, rank)
                          : snprintf(out, size, "%s", shared_dir);
    return n < 0 || (size_t)n >= size ? ENAMETOOLONG : 0;
}

static void worker(const struct mdt_args *a, const char *shared_dir, unsigned rank,
                   struct mdt_shared *sh)
{
    char dir[PATH_MAX], path[PATH_MAX];
    int dir_err = rank_dir(a, shared_dir, rank, dir, sizeof(dir)), dir_fd = -1;
    if (!dir_err && a->durable && (dir_fd = open(dir, O_RDONLY | O_DIRECTORY)) < 0)
        dir_err = errno;
    for (int phase = 0; phase < PHASE_COUNT; phase++) {
        pthread_barrier_wait(&sh->barrier); /* start */
        for (unsigned i = 0; i < a->files && !sh->failed; i++) {
            int err = dir_err ? dir_err : ENAMETOOLONG;
            if (!dir_err &&
                (size_t)snprintf(path, sizeof(path), "%s/f.%u.%u", dir, rank, i) < sizeof(path))
                err = file_op((enum mdt_phase)phase, path, dir_fd);
            if (err) {
                fprintf(stderr, "mdtest_lite: %s %s: %s\n", phase_names[phase], path,
                        strerror(err));
                __atomic_store_n(&sh->failed, err, __ATOMIC_SEQ_CST);
            }
        }
        pthread_barrier_wait(&sh->barrier); /* end */
    }
    if (dir_fd >= 0)
        close(dir_fd);
    _exit(sh->failed ? 1 : 0);
}

static void drop_caches(void)
{
    sync();
    FILE *f = fopen(MDT_DROP_CACHES, "w");
    if (!f) {
        fprintf(stderr, "mdtest_lite: cannot drop caches: %s\n", strerror(errno));
        return;
    }
    fputs("3\n", f);
    fclose(f);
}

/* The parent: releases each phase and times it from start to the last end.
 * It passes every barrier even after a failure (the workers then skip their
 * operations), so nobody is left waiting. */
static int run_phases(const struct mdt_args *a, struct mdt_shared *sh)
{
    for (int phase = 0; phase < PHASE_COUNT; phase++) {
        if (phase != PHASE_CREATE && a->drop_caches && !sh->failed)
            drop_caches();
        pthread_barrier_wait(&sh->barrier);
        double t0 = now_s();
        pthread_barrier_wait(&sh->barrier);
        double secs = now_s() - t0;
        if (sh->failed)
            continue;
        printf("%s %.1f\n", phase_names[phase], (double)a->procs * a->files / secs);
        fflush(stdout);
    }
    return sh->failed ? -1 : 0;
}

/* --unique-dir: make (or, with remove, remove) the first COUNT processes'
 * directories. Returns 0, or -1 after saying which failed (a failed make
 * removes those made before it). */
static int rank_dirs(const struct mdt_args *a, const char *shared_dir, unsigned count,
                     bool remove)
{
    char dir[PATH_MAX];
    int rc = 0;
    for (unsigned r = 0; a->unique_dir && r < count; r++) {
        int err = rank_dir(a, shared_dir, r, dir, sizeof(dir));
        if (!err && (remove ? rmdir(dir) : mkdir(dir, MDT_DIR_MODE)) != 0)
            err = errno;
        if (!err)
            continue;
        fprintf(stderr, "mdtest_lite: %s %s: %s\n", remove ? "rmdir" : "mkdir", dir,
                strerror(err));
        rc = -1;
        if (!remove) {
            rank_dirs(a, shared_dir, r, true);
            break;
        }
    }
    return rc;
}

static int run(const struct mdt_args *a)
{
    char shared_dir[PATH_MAX];
    pid_t pids[MDT_MAX_PROCS];
    unsigned started = 0;
    int rc = 1;
    pthread_barrierattr_t ba;

    if ((size_t)snprintf(shared_dir, sizeof(shared_dir), "%s/mdtest_lite.%ld", a->dir,
                         (long)getpid()) >= sizeof(shared_dir)) {
        fprintf(stderr, "mdtest_lite: %s: path too long\n", a->dir);
        return 1;
    }
    if (mkdir(shared_dir, MDT_DIR_MODE) != 0) {
        fprintf(stderr, "mdtest_lite: mkdir %s: %s\n", shared_dir, strerror(errno));
        return 1;
    }
    if (rank_dirs(a, shared_dir, a->procs, false) != 0)
        goto out_dir;
    struct mdt_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
                                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        goto out_rank_dirs;
    pthread_barrierattr_init(&ba);
    pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&sh->barrier, &ba, a->procs + 1);
    pthread_barrierattr_destroy(&ba);
    sh->failed = 0;

    fflush(stdout);
    for (; started < a->procs; started++) {
        pid_t pid = fork();
        if (pid < 0) {
            /* workers already forked would wait forever on the barrier */
            fprintf(stderr, "mdtest_lite: fork: %s\n", strerror(errno));
            for (unsigned i = 0; i < started; i++)
                kill(pids[i], SIGKILL);
            goto out_reap;
        }
        if (pid == 0)
            worker(a, shared_dir, started, sh);
        pids[started] = pid;
    }
    rc = run_phases(a, sh) == 0 ? 0 : 1;
out_reap:
    for (unsigned i = 0; i < started; i++) {
        int status;
        if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
            rc = 1;
    }
    pthread_barrier_destroy(&sh->barrier);
    munmap(sh, sizeof(*sh));
out_rank_dirs:
    if (rank_dirs(a, shared_dir, a->procs, true) != 0)
        rc = 1;
out_dir:
    if (rmdir(shared_dir) != 0) {
        fprintf(stderr, "mdtest_lite: rmdir %s: %s\n", shared_dir, strerror(errno));
        rc = 1;
    }
    return rc;
}

static int parse_uint(const char *s, unsigned max, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v == 0 || v > max)
        return -1;
    *out = (unsigned)v;
    return 0;
}

int main(int argc, char **argv)
{
    struct mdt_args a = {.procs = MDT_DEFAULT_PROCS, .files = MDT_DEFAULT_FILES};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--procs") == 0 && i + 1 < argc) {
            if (parse_uint(argv[++i], MDT_MAX_PROCS, &a.procs) != 0)
                goto usage;
        } else if (strcmp(argv[i], "--files") == 0 && i + 1 < argc) {
            if (parse_uint(argv[++i], MDT_MAX_FILES, &a.files) != 0)
                goto usage;
        } else if (strcmp(argv[i], "--unique-dir") == 0 || strcmp(argv[i], "-u") == 0) {
            a.unique_dir = true;
        } else if (strcmp(argv[i], "--drop-caches") == 0) {
            a.drop_caches = true;
        } else if (strcmp(argv[i], "--durable") == 0) {
            a.durable = true;
        } else if (argv[i][0] != '-' && !a.dir) {
            a.dir = argv[i];
        } else {
            goto usage;
        }
    }
    if (!a.dir)
        goto usage;
    return run(&a);
usage:
    fprintf(stderr, "usage: mdtest_lite DIR [--procs P] [--files F] [--unique-dir] [--drop-caches] "
                    "[--durable]\n");
    return 2;
}
