/* store_keys.c - MDS key encoding and the binary inode/dirent records
 * (see store_keys.h for the key map). */
#include "store_keys.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

void mds_put_u64le(uint8_t *p, uint64_t v)
{
    for (unsigned i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t mds_get_u64le(const uint8_t *p)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void mds_put_u32le(uint8_t *p, uint32_t v)
{
    for (unsigned i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

uint32_t mds_get_u32le(const uint8_t *p)
{
    uint32_t v = 0;
    for (unsigned i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static void put_u64be(uint8_t *p, uint64_t v)
{
    for (unsigned i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static void put_u32be(uint8_t *p, uint32_t v)
{
    for (unsigned i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (24 - 8 * i));
}

/* ------------------------------------------------------------ inode record */

/* A cursor over a record buffer; overflow is sticky. */
typedef struct rec_cur {
    uint8_t *w;
    const uint8_t *r;
    size_t pos, len;
    bool bad;
} rec_cur;

static void w32(rec_cur *c, uint32_t v)
{
    mds_put_u32le(c->w + c->pos, v);
    c->pos += 4;
}

static void w64(rec_cur *c, uint64_t v)
{
    mds_put_u64le(c->w + c->pos, v);
    c->pos += 8;
}

static uint32_t r32(rec_cur *c)
{
    if (c->bad || c->len - c->pos < 4) {
        c->bad = true;
        return 0;
    }
    uint32_t v = mds_get_u32le(c->r + c->pos);
    c->pos += 4;
    return v;
}

static uint64_t r64(rec_cur *c)
{
    if (c->bad || c->len - c->pos < 8) {
        c->bad = true;
        return 0;
    }
    uint64_t v = mds_get_u64le(c->r + c->pos);
    c->pos += 8;
    return v;
}

size_t mds_inode_encode(const mds_inode *in, uint8_t out[MDS_INODE_REC_MAX])
{
    rec_cur c = { .w = out };
    uint32_t lay_n = in->has_layout ? in->lay.n : 0;

    assert(lay_n <= LAYOUT_MAX_N);
    out[c.pos++] = MDS_INODE_REC_VERSION;
    w32(&c, in->mode);
    w32(&c, in->nlink);
    w32(&c, in->uid);
    w32(&c, in->gid);
    w64(&c, in->rdev);
    w64(&c, in->size);
    w64(&c, (uint64_t)in->atime_ns);
    w64(&c, (uint64_t)in->mtime_ns);
    w64(&c, (uint64_t)in->ctime_ns);
    w64(&c, in->parent);
    w64(&c, in->next_seq);
    w32(&c, in->pol_n);
    w32(&c, in->pol_k);
    w32(&c, in->pol_su);
    w32(&c, lay_n);
    w32(&c, in->has_layout ? in->lay.k : 0);
    w32(&c, in->has_layout ? in->lay.su : 0);
    w32(&c, in->has_layout ? in->lay.version : 0);
    w32(&c, in->has_layout ? in->lay.codec_version : 0);
    for (uint32_t i = 0; i < lay_n; i++)
        w32(&c, in->lay.servers[i]);
    w32(&c, (in->may_have_data ? MDS_INODE_FLAG_MAY_HAVE_DATA : 0) |
                (in->alloc_known ? MDS_INODE_FLAG_ALLOC_KNOWN : 0) |
                (in->data_version ? MDS_INODE_FLAG_DATA_VERSION : 0) |
                (in->migrated_away ? MDS_INODE_FLAG_MIGRATED_AWAY : 0) |
                (in->name_gen ? MDS_INODE_FLAG_NAME_GEN : 0) |
                (in->moved_epoch ? MDS_INODE_FLAG_MOVED : 0));
    if (in->alloc_known)
        w64(&c, in->alloc_bytes);
    if (in->data_version)
        w64(&c, in->data_version);
    if (in->name_gen)
        w64(&c, in->name_gen);
    if (in->moved_epoch) {
        w64(&c, in->moved_epoch);
        w64(&c, in->moved_by);
    }
    assert(c.pos <= MDS_INODE_REC_MAX);
    return c.pos;
}

int mds_inode_decode(uint64_t ino, const uint8_t *buf, size_t len, mds_inode *out)
{
    rec_cur c = { .r = buf, .len = len, .pos = 1 };

    memset(out, 0, sizeof(*out));
    if (len < 1 || buf[0] != MDS_INODE_REC_VERSION)
        return -EIO;
    out->ino = ino;
    out->mode = r32(&c);
    out->nlink = r32(&c);
    out->uid = r32(&c);
    out->gid = r32(&c);
    out->rdev = r64(&c);
    out->size = r64(&c);
    out->atime_ns = (int64_t)r64(&c);
    out->mtime_ns = (int64_t)r64(&c);
    out->ctime_ns = (int64_t)r64(&c);
    out->parent = r64(&c);
    out->next_seq = r64(&c);
    out->pol_n = r32(&c);
    out->pol_k = r32(&c);
    out->pol_su = r32(&c);
    uint32_t lay_n = r32(&c);
    out->lay.k = r32(&c);
    out->lay.su = r32(&c);
    out->lay.version = r32(&c);
    out->lay.codec_version = r32(&c);
    if (c.bad || lay_n > LAYOUT_MAX_N)
        return -EIO;
    out->lay.n = lay_n;
    out->has_layout = lay_n > 0;
    for (uint32_t i = 0; i < lay_n; i++)
        out->lay.servers[i] = r32(&c);
    if (c.bad)
        return -EIO;
    if (c.pos == len) { /* a record from before the flags word: assume data */
        out->may_have_data = out->has_layout;
        return 0;
    }
    uint32_t flags = r32(&c);
    out->may_have_data = (flags & MDS_INODE_FLAG_MAY_HAVE_DATA) != 0;
    out->alloc_known = (flags & MDS_INODE_FLAG_ALLOC_KNOWN) != 0;
    out->migrated_away = (flags & MDS_INODE_FLAG_MIGRATED_AWAY) != 0;
    if (flags & ~(uint32_t)MDS_INODE_FLAGS_KNOWN)
        return -EIO;
    if (out->alloc_known)
        out->alloc_bytes = r64(&c);
    if (flags & MDS_INODE_FLAG_DATA_VERSION)
        out->data_version = r64(&c);
    if (flags & MDS_INODE_FLAG_NAME_GEN)
        out->name_gen = r64(&c);
    if (flags & MDS_INODE_FLAG_MOVED) {
        out->moved_epoch = r64(&c);
        out->moved_by = r64(&c);
    }
    if (c.bad || c.pos != len)
        return -EIO;
    return 0;
}

/* ------------------------------------------------------------------ dirents */

void mds_dirent_val_encode(uint8_t out[MDS_DIRENT_VAL_LEN], uint64_t ino, uint64_t seq, uint32_t mode)
{
    mds_put_u64le(out, ino);
    mds_put_u64le(out + 8, seq);
    mds_put_u32le(out + 16, mode);
}

int mds_dirent_val_decode(const uint8_t *buf, size_t len, uint64_t *ino, uint64_t *seq, uint32_t *mode)
{
    if (len != MDS_DIRENT_VAL_LEN)
        return -EIO;
    *ino = mds_get_u64le(buf);
    *seq = mds_get_u64le(buf + 8);
    *mode = mds_get_u32le(buf + 16);
    return 0;
}

size_t mds_dirseq_val_encode(uint8_t out[MDS_DIRSEQ_VAL_MAX], uint64_t ino, uint32_t mode,
                             const char *name, size_t name_len)
{
    assert(name_len <= WIRE_NAME_MAX);
    mds_put_u64le(out, ino);
    mds_put_u32le(out + 8, mode);
    memcpy(out + 12, name, name_len);
    return 12 + name_len;
}

int mds_dirseq_val_decode(const uint8_t *buf, size_t len, uint64_t *ino, uint32_t *mode,
                          const char **name, size_t *name_len)
{
    if (len < 13 || len > MDS_DIRSEQ_VAL_MAX)
        return -EIO;
    *ino = mds_get_u64le(buf);
    *mode = mds_get_u32le(buf + 8);
    *name = (const char *)buf + 12;
    *name_len = len - 12;
    return 0;
}

void mds_purge_val_encode(uint8_t out[MDS_PURGE_VAL_LEN], int64_t queued_at_ns, uint64_t held_until_s)
{
    mds_put_u64le(out, (uint64_t)queued_at_ns);
    mds_put_u64le(out + 8, held_until_s);
}

int mds_purge_val_decode(const uint8_t *buf, size_t len, int64_t *queued_at_ns, uint64_t *held_until_s)
{
    if (len != MDS_PURGE_VAL_LEN)
        return -EIO;
    *queued_at_ns = (int64_t)mds_get_u64le(buf);
    *held_until_s = mds_get_u64le(buf + 8);
    return 0;
}

void mds_hold_val_encode(uint8_t out[MDS_HOLD_VAL_LEN], uint64_t until_s, bool writer)
{
    mds_put_u64le(out, until_s);
    out[8] = writer ? MDS_HOLD_FLAG_WRITER : 0u;
}

int mds_hold_val_decode(const uint8_t *buf, size_t len, uint64_t *until_s, bool *writer)
{
    if (len != MDS_HOLD_VAL_LEN || (buf[8] & ~MDS_HOLD_FLAG_WRITER) != 0)
        return -EIO;
    *until_s = mds_get_u64le(buf);
    *writer = (buf[8] & MDS_HOLD_FLAG_WRITER) != 0;
    return 0;
}

/* --------------------------------------------------------------------- keys */

static size_t key_tag_u64(uint8_t *out, char tag, uint64_t v)
{
    out[0] = (uint8_t)tag;
    put_u64be(out + 1, v);
    return MDS_KEY_PREFIX_LEN;
}

size_t mds_key_inode(uint8_t *out, uint64_t ino)
{
    return key_tag_u64(out, MDS_TAG_INODE, ino);
}

size_t mds_key_dirent_prefix(uint8_t *out, uint64_t parent)
{
    return key_tag_u64(out, MDS_TAG_DIRENT, parent);
}

size_t mds_key_dirent(uint8_t *out, uint64_t parent, const char *name, size_t name_len)
{
    assert(name_len <= WIRE_NAME_MAX);
    size_t n = key_tag_u64(out, MDS_TAG_DIRENT, parent);
    memcpy(out + n, name, name_len);
    return n + name_len;
}

size_t mds_key_dirseq(uint8_t *out, uint64_t parent, uint64_t seq)
{
    size_t n = key_tag_u64(out, MDS_TAG_DIRSEQ, parent);
    put_u64be(out + n, seq);
    return n + 8;
}

size_t mds_key_dirseq_prefix(uint8_t *out, uint64_t parent)
{
    return key_tag_u64(out, MDS_TAG_DIRSEQ, parent);
}

static uint64_t get_u64be(const uint8_t *p)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

uint64_t mds_key_dirseq_seq(const uint8_t *key)
{
    return get_u64be(key + MDS_KEY_PREFIX_LEN);
}

size_t mds_key_xattr_prefix(uint8_t *out, uint64_t ino)
{
    return key_tag_u64(out, MDS_TAG_XATTR, ino);
}

size_t mds_key_xattr(uint8_t *out, uint64_t ino, const char *name, size_t name_len)
{
    assert(name_len <= WIRE_XATTR_NAME_MAX);
    size_t n = key_tag_u64(out, MDS_TAG_XATTR, ino);
    memcpy(out + n, name, name_len);
    return n + name_len;
}

size_t mds_key_symlink(uint8_t *out, uint64_t ino)
{
    return key_tag_u64(out, MDS_TAG_SYMLINK, ino);
}

size_t mds_key_purge(uint8_t *out, uint64_t ino)
{
    return key_tag_u64(out, MDS_TAG_PURGE, ino);
}

size_t mds_key_purge_prefix(uint8_t *out)
{
    out[0] = MDS_TAG_PURGE;
    return 1;
}

uint64_t mds_key_purge_ino(const uint8_t *key)
{
    return get_u64be(key + 1);
}

size_t mds_key_hold(uint8_t *out, uint64_t ino, uint64_t client)
{
    size_t n = key_tag_u64(out, MDS_TAG_HOLD, ino);
    put_u64be(out + n, client);
    return n + 8;
}

size_t mds_key_hold_prefix(uint8_t *out)
{
    out[0] = MDS_TAG_HOLD;
    return 1;
}

int mds_key_hold_decode(const uint8_t *key, size_t klen, uint64_t *ino, uint64_t *client)
{
    if (klen != MDS_KEY_HOLD_LEN || key[0] != MDS_TAG_HOLD)
        return -EIO;
    *ino = get_u64be(key + 1);
    *client = get_u64be(key + MDS_KEY_PREFIX_LEN);
    return 0;
}

size_t mds_key_counter(uint8_t *out, const char *name)
{
    size_t len = strlen(name);
    assert(len + 1 <= MDS_KEY_MAX);
    out[0] = MDS_TAG_COUNTER;
    memcpy(out + 1, name, len);
    return 1 + len;
}

size_t mds_key_server(uint8_t *out, uint32_t id)
{
    out[0] = MDS_TAG_SERVER;
    put_u32be(out + 1, id);
    return 5;
}
