/* ns_xattr.c - extended attributes of the namespace, including the special
 * "user.depfs.layout": on a directory its layout policy (inherited by new
 * children, listed), on a regular file its actual layout (settable while
 * empty, or to the layout it has; not listed).
 * Linux rules: names carry a user./trusted./security. prefix (system.* and
 * others are EOPNOTSUPP), user.* only on files and directories (EPERM),
 * names <= 255 bytes (ERANGE), values <= 64 KiB (E2BIG), ENODATA when absent;
 * an inode's names fit in one listxattr (64 KiB, else ENOSPC for a new one). */
#include "ns_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "label.h"
#include "layout.h"
#include "perm.h"
#include "wire_check.h"

#define LAYOUT_SPEC_MAX 64u         /* bytes of an "N@K@SU" value */
static const char *const allowed_prefixes[] = { WIRE_XATTR_USER, WIRE_XATTR_TRUSTED,
                                                 WIRE_XATTR_SECURITY };

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

static int check_xattr_name(const char *name, char *why)
{
    if (!name || !name[0])
        return ns_fail(why, ERANGE, "empty xattr name");
    if (strlen(name) > WIRE_XATTR_NAME_MAX)
        return ns_fail(why, ERANGE, "xattr name longer than %u bytes", WIRE_XATTR_NAME_MAX);
    for (size_t i = 0; i < sizeof(allowed_prefixes) / sizeof(allowed_prefixes[0]); i++) {
        if (!has_prefix(name, allowed_prefixes[i]))
            continue;
        if (!name[strlen(allowed_prefixes[i])])
            return ns_fail(why, EINVAL, "xattr name '%s' has nothing after the prefix", name);
        return 0;
    }
    return ns_fail(why, EOPNOTSUPP, "xattr namespace of '%s' not supported", name);
}

static int check_xattr_target(const mds_inode *in, const char *name, char *why)
{
    if (has_prefix(name, WIRE_XATTR_USER) && !S_ISREG(in->mode) && !S_ISDIR(in->mode))
        return ns_fail(why, EPERM, "user xattrs only on regular files and directories");
    return 0;
}

static bool is_layout_name(const char *name)
{
    return strcmp(name, MDS_LAYOUT_XATTR) == 0;
}

/* Whether listxattr names the layout xattr: on a directory (its policy,
 * settable any time, so tar/rsync -X carry it to the copy), not on a file
 * (Ceph hides its layout vxattrs the same way): cp --preserve=xattr, rsync
 * -X and tar --xattrs set what they list on the copy after its data, when
 * a file's layout can no longer change. getxattr by name still answers. */
static bool layout_listed(const mds_inode *in)
{
    return S_ISDIR(in->mode) && in->pol_n;
}

/* The layout xattr's text for an inode; false when it has none. */
static bool layout_text(const mds_inode *in, char *buf, size_t len)
{
    if (S_ISREG(in->mode) && in->has_layout) {
        label_format_spec(buf, len, in->lay.n, in->lay.k, in->lay.su);
        return true;
    }
    if (S_ISDIR(in->mode) && in->pol_n) {
        if (in->pol_su)
            label_format_spec(buf, len, in->pol_n, in->pol_k, in->pol_su);
        else
            snprintf(buf, len, "%u@%u", in->pol_n, in->pol_k);
        return true;
    }
    return false;
}

/* "N@K[@SU]" from a value that may end in whitespace or NULs. */
static int parse_layout_value(mds_ns *ns, const void *value, size_t len, unsigned *n, unsigned *k,
                              uint32_t *su, char *why)
{
    char spec[LAYOUT_SPEC_MAX], err[MDS_WHY_MAX];
    /* an empty value arrives as (NULL, 0): it names no layout */
    if (len == 0 || !value)
        return ns_fail(why, EINVAL, "empty layout value (want N@K or N@K@SU)");
    if (len >= sizeof(spec))
        return ns_fail(why, EINVAL, "layout value too long (want N@K or N@K@SU)");
    memcpy(spec, value, len);
    spec[len] = '\0';
    while (len > 0 && (spec[len - 1] == '\0' || isspace((unsigned char)spec[len - 1])))
        spec[--len] = '\0';
    if (label_parse_spec(spec, n, k, su, err, sizeof(err)) < 0)
        return ns_fail(why, EINVAL, "bad layout '%s': %s", spec, err);
    if (label_check_cluster(*n, ns->p.n_servers, err, sizeof(err)) < 0)
        return ns_fail(why, EINVAL, "bad layout '%s': %s", spec, err);
    return 0;
}

static int set_layout(mds_ns *ns, mds_inode *in, const void *value, size_t len,
                      unsigned flags, char *why)
{
    unsigned n, k;
    uint32_t su;
    int rc;

    if (!S_ISDIR(in->mode) && !S_ISREG(in->mode))
        return ns_fail(why, EPERM, "layouts apply to regular files and directories only");
    rc = parse_layout_value(ns, value, len, &n, &k, &su, why);
    if (rc < 0)
        return rc;
    if (S_ISDIR(in->mode)) {
        if ((flags & MDS_XATTR_CREATE) && in->pol_n)
            return ns_fail(why, EEXIST, "directory already has a layout policy");
        if ((flags & MDS_XATTR_REPLACE) && !in->pol_n)
            return ns_fail(why, ENODATA, "directory has no layout policy");
        in->pol_n = n;
        in->pol_k = k;
        in->pol_su = su;
        return 0;
    }
    if (flags & MDS_XATTR_CREATE)
        return ns_fail(why, EEXIST, "a file always has a layout");
    if (n == in->lay.n && k == in->lay.k && (su == 0 || su == in->lay.su))
        return 0; /* the layout it has (Lustre's way: a copy tool setting it again) */
    if (in->size > 0)
        return ns_fail(why, EBUSY, "the layout of a file can only change while it is empty (size %llu): "
                       "re-encode it with `depfs migrate PATH -r N@K[@SU]`",
                       (unsigned long long)in->size);
    layout nl;
    rc = ns_build_layout(ns, n, k, su ? su : in->lay.su, in->ino, in->lay.version + 1, &nl, why);
    if (rc < 0)
        return rc;
    in->lay = nl;
    in->has_layout = true;
    return 0;
}

/* Bytes listxattr of `in` returns now: every name with its NUL. */
static int list_bytes(mds_ns *ns, const mds_inode *in, size_t *total)
{
    uint8_t prefix[MDS_KEY_MAX];
    const void *k, *v;
    size_t kl, vl;
    char buf[LAYOUT_SPEC_MAX];
    size_t plen = mds_key_xattr_prefix(prefix, in->ino);
    kv_iter *it = kv_iter_new(ns->kv, prefix, plen, NULL, 0);
    if (!it)
        return -EIO;
    *total = layout_listed(in) && layout_text(in, buf, sizeof(buf)) ? strlen(MDS_LAYOUT_XATTR) + 1
                                                                     : 0;
    while (kv_iter_next(it, &k, &kl, &v, &vl))
        *total += kl - plen + 1;
    kv_iter_free(it);
    return 0;
}

/* A new xattr name must still fit in one listxattr (WIRE_XATTR_LIST_MAX):
 * that bounds what one inode holds, and every name stays listable. */
static int check_room(mds_ns *ns, const mds_inode *in, const char *name, char *why)
{
    size_t total = 0;
    if (list_bytes(ns, in, &total) < 0)
        return ns_fail(why, EIO, "store error");
    if (total + strlen(name) + 1 > WIRE_XATTR_LIST_MAX)
        return ns_fail(why, ENOSPC, "inode %llu has %zu bytes of xattr names; '%s' would pass "
                       "the %u a listxattr returns", (unsigned long long)in->ino, total, name,
                       WIRE_XATTR_LIST_MAX);
    return 0;
}

static int set_plain(mds_ns *ns, ns_txn *t, const mds_inode *in, const char *name, const void *value,
                     size_t len, unsigned flags, char *why)
{
    uint8_t key[MDS_KEY_MAX];
    void *old = NULL;
    size_t olen = 0;
    size_t klen = mds_key_xattr(key, in->ino, name, strlen(name));
    int rc = kv_get(ns->kv, key, klen, &old, &olen);
    free(old);
    if (rc < 0 && rc != -ENOENT)
        return ns_fail(why, EIO, "store error");
    if ((flags & MDS_XATTR_CREATE) && rc == 0)
        return ns_fail(why, EEXIST, "xattr '%s' exists", name);
    if ((flags & MDS_XATTR_REPLACE) && rc == -ENOENT)
        return ns_fail(why, ENODATA, "no xattr '%s'", name);
    if (rc == -ENOENT && (rc = check_room(ns, in, name, why)) < 0)
        return rc;
    kv_batch_put(t->b, key, klen, value, len);
    return 0;
}

int mds_ns_setxattr(mds_ns *ns, const mds_caller *who, uint64_t ino, const char *name, const void *value, size_t len,
                    unsigned flags, char *why)
{
    mds_inode in;
    ns_txn t;
    int rc;

    if ((flags & ~(MDS_XATTR_CREATE | MDS_XATTR_REPLACE)) ||
        flags == (MDS_XATTR_CREATE | MDS_XATTR_REPLACE))
        return ns_fail(why, EINVAL, "setxattr: bad flags 0x%x", flags);
    rc = check_xattr_name(name, why);
    if (rc < 0)
        return rc;
    if (len > WIRE_XATTR_VALUE_MAX)
        return ns_fail(why, E2BIG, "xattr value larger than %u bytes", WIRE_XATTR_VALUE_MAX);
    if (len > 0 && !value)
        return ns_fail(why, EINVAL, "missing xattr value");

    pthread_rwlock_wrlock(&ns->lock);
    rc = ns_load_inode(ns, ino, &in, why);
    if (rc == 0)
        rc = check_xattr_target(&in, name, why);
    if (rc == 0 && who)
        rc = perm_xattr(who, &in, name, true, why);
    if (rc < 0)
        goto out;
    rc = ns_txn_begin(ns, &t);
    if (rc < 0)
        goto out;
    rc = is_layout_name(name) ? set_layout(ns, &in, value, len, flags, why)
                              : set_plain(ns, &t, &in, name, value, len, flags, why);
    if (rc < 0) {
        ns_txn_abort(&t);
        goto out;
    }
    in.ctime_ns = clock_real_ns();
    ns_put_inode(&t, &in);
    rc = ns_txn_commit(&t);
    if (rc < 0)
        rc = ns_fail(why, EIO, "store write failed");
out:
    pthread_rwlock_unlock(&ns->lock);
    return ns_settle(ns, rc, why);
}

static int get_layout_value(const mds_inode *in, void **value, size_t *len, char *why)
{
    char buf[LAYOUT_SPEC_MAX];
    if (!layout_text(in, buf, sizeof(buf)))
        return ns_fail(why, ENODATA, "no layout on inode %llu", (unsigned long long)in->ino);
    *len = strlen(buf);
    *value = strdup(buf);
    return *value ? 0 : ns_fail(why, ENOMEM, "out of memory");
}

int mds_ns_getxattr(mds_ns *ns, const mds_caller *who, uint64_t ino, const char *name, void **value, size_t *len, char *why)
{
    mds_inode in;
    uint8_t key[MDS_KEY_MAX];
    int rc = check_xattr_name(name, why);
    if (rc < 0)
        return rc;
    *value = NULL;
    *len = 0;

    pthread_rwlock_rdlock(&ns->lock);
    rc = ns_load_inode(ns, ino, &in, why);
    if (rc == 0 && who)
        rc = perm_xattr(who, &in, name, false, why);
    if (rc < 0)
        goto out;
    if (is_layout_name(name)) {
        rc = get_layout_value(&in, value, len, why);
        goto out;
    }
    rc = kv_get(ns->kv, key, mds_key_xattr(key, ino, name, strlen(name)), value, len);
    if (rc == -ENOENT)
        rc = ns_fail(why, ENODATA, "no xattr '%s'", name);
    else if (rc < 0)
        rc = ns_fail(why, EIO, "store error");
out:
    pthread_rwlock_unlock(&ns->lock);
    return rc;
}

void mds_ns_free_names(char **names, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
}

/* Appends a copy of name[0..len) to the growing list. */
static int push_name(char ***names, size_t *count, size_t *cap, size_t *total, const char *name,
                     size_t len)
{
    if (*total + len + 1 > WIRE_XATTR_LIST_MAX)
        return -E2BIG;
    if (*count == *cap) {
        size_t ncap = *cap ? *cap * 2 : 8;
        char **nn = realloc(*names, ncap * sizeof(*nn));
        if (!nn)
            return -ENOMEM;
        *names = nn;
        *cap = ncap;
    }
    char *s = strndup(name, len);
    if (!s)
        return -ENOMEM;
    (*names)[(*count)++] = s;
    *total += len + 1;
    return 0;
}

bool ns_has_xattrs(mds_ns *ns, uint64_t ino)
{
    uint8_t prefix[MDS_KEY_MAX];
    const void *k, *v;
    size_t kl, vl;
    kv_iter *it = kv_iter_new(ns->kv, prefix, mds_key_xattr_prefix(prefix, ino), NULL, 0);
    if (!it)
        return true;
    bool any = kv_iter_next(it, &k, &kl, &v, &vl);
    kv_iter_free(it);
    return any;
}

/* The stored names who may see (who NULL: all). */
static int list_store(mds_ns *ns, const mds_caller *who, uint64_t ino, char ***names,
                      size_t *count, size_t *cap, size_t *total)
{
    uint8_t prefix[MDS_KEY_MAX];
    const void *k, *v;
    size_t kl, vl;
    size_t plen = mds_key_xattr_prefix(prefix, ino);
    kv_iter *it = kv_iter_new(ns->kv, prefix, plen, NULL, 0);
    int rc = 0;
    if (!it)
        return -EIO;
    while (rc == 0 && kv_iter_next(it, &k, &kl, &v, &vl)) {
        const char *name = (const char *)k + plen;
        if (!who || perm_xattr_listed(who, name, kl - plen))
            rc = push_name(names, count, cap, total, name, kl - plen);
    }
    kv_iter_free(it);
    return rc;
}

int mds_ns_listxattr(mds_ns *ns, const mds_caller *who, uint64_t ino, char ***names, size_t *count, char *why)
{
    mds_inode in;
    char buf[LAYOUT_SPEC_MAX];
    size_t cap = 0, total = 0;
    int rc;

    *names = NULL;
    *count = 0;
    pthread_rwlock_rdlock(&ns->lock);
    rc = ns_load_inode(ns, ino, &in, why);
    if (rc < 0)
        goto out;
    if (layout_listed(&in) && layout_text(&in, buf, sizeof(buf)))
        rc = push_name(names, count, &cap, &total, MDS_LAYOUT_XATTR, strlen(MDS_LAYOUT_XATTR));
    if (rc == 0)
        rc = list_store(ns, who, ino, names, count, &cap, &total);
    if (rc < 0) {
        mds_ns_free_names(*names, *count);
        *names = NULL;
        *count = 0;
        rc = ns_fail(why, -rc, "listxattr of %llu failed", (unsigned long long)ino);
    }
out:
    pthread_rwlock_unlock(&ns->lock);
    return rc;
}

static int remove_layout(mds_inode *in, char *why)
{
    if (S_ISREG(in->mode))
        return ns_fail(why, EPERM, "the layout of a file cannot be removed");
    if (!S_ISDIR(in->mode) || !in->pol_n)
        return ns_fail(why, ENODATA, "no layout policy");
    in->pol_n = in->pol_k = in->pol_su = 0;
    return 0;
}

static int remove_plain(mds_ns *ns, ns_txn *t, uint64_t ino, const char *name, char *why)
{
    uint8_t key[MDS_KEY_MAX];
    void *old = NULL;
    size_t olen = 0;
    size_t klen = mds_key_xattr(key, ino, name, strlen(name));
    int rc = kv_get(ns->kv, key, klen, &old, &olen);
    free(old);
    if (rc == -ENOENT)
        return ns_fail(why, ENODATA, "no xattr '%s'", name);
    if (rc < 0)
        return ns_fail(why, EIO, "store error");
    kv_batch_delete(t->b, key, klen);
    return 0;
}

int mds_ns_removexattr(mds_ns *ns, const mds_caller *who, uint64_t ino, const char *name, char *why)
{
    mds_inode in;
    ns_txn t;
    int rc = check_xattr_name(name, why);
    if (rc < 0)
        return rc;

    pthread_rwlock_wrlock(&ns->lock);
    rc = ns_load_inode(ns, ino, &in, why);
    if (rc == 0 && who)
        rc = perm_xattr(who, &in, name, true, why);
    if (rc < 0)
        goto out;
    rc = ns_txn_begin(ns, &t);
    if (rc < 0)
        goto out;
    rc = is_layout_name(name) ? remove_layout(&in, why) : remove_plain(ns, &t, ino, name, why);
    if (rc < 0) {
        ns_txn_abort(&t);
        goto out;
    }
    in.ctime_ns = clock_real_ns();
    ns_put_inode(&t, &in);
    rc = ns_txn_commit(&t);
    if (rc < 0)
        rc = ns_fail(why, EIO, "store write failed");
out:
    pthread_rwlock_unlock(&ns->lock);
    return ns_settle(ns, rc, why);
}
