/* api_migrate.c - libdepfs entry points of `depfs migrate` (depfs.h
 * "migrate"): a file's data version, and the switch of a file to a copy
 * of it made under another layout (MDS_MIGRATE_SWAP). The copy itself is
 * made with the ordinary calls (create, unlink, write, fsync). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "depfs_admin.h"

int depfs_data_version(depfs_t *fs, uint64_t ino, uint64_t *out)
{
    Depfs__MdsReply *rep = NULL;
    int rc = dc_getattr_rep(fs, ino, &rep);
    if (rc == 0 && !S_ISREG(rep->attr->mode)) {
        dc_set_error("inode %llu is not a regular file", (unsigned long long)ino);
        rc = -EINVAL;
    }
    if (rc == 0)
        *out = rep->attr->has_data_version ? rep->attr->data_version : 0;
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rc;
}

int depfs_migrate_swap(depfs_t *fs, uint64_t parent, const char *name, uint64_t ino,
                       uint64_t copy_ino, uint64_t data_version, struct stat *st)
{
    if (!name || !name[0] || strchr(name, '/') || ino == 0 || copy_ino == 0 || ino == copy_ino) {
        dc_set_error("migrate swap: bad arguments (name, ino %llu, copy %llu)",
                     (unsigned long long)ino, (unsigned long long)copy_ino);
        return -EINVAL;
    }
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep = NULL;
    req.has_parent = req.has_ino = req.has_migrate_ino = req.has_data_version = 1;
    req.parent = parent;
    req.name = (char *)name;
    req.ino = ino;
    req.migrate_ino = copy_ino;
    req.data_version = data_version;
    depfs_release_holds(fs); /* the source may be one closed here (depfs_admin.h) */
    int rc = dc_mds_call_ticketed(fs, DEPFS__MDS_OP__MDS_MIGRATE_SWAP, &req, &rep);
    if (rc == 0 && !rep->attr) {
        dc_set_error("MDS_MIGRATE_SWAP: reply without attributes");
        rc = -EPROTO;
    }
    if (rc == 0)
        dc_reply_to_stat(fs, rep, st);
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rc;
}
