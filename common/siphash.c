/* siphash.c - SipHash-2-4-128, incremental (see siphash.h). Words are read
 * little-endian byte by byte, so the result does not depend on the host's
 * byte order or on the alignment of the pieces. */
#include "siphash.h"

#include <assert.h>
#include <endian.h>
#include <string.h>

#define SIP_C_ROUNDS 2 /* compression rounds per word */
#define SIP_D_ROUNDS 4 /* finalization rounds per output half */
#define SIP_OUT128_V1 0xeeu /* the 128-bit variant's domain constants */
#define SIP_OUT128_V2 0xeeu
#define SIP_OUT128_SECOND 0xddu

static inline uint64_t rotl64(uint64_t x, unsigned b) { return (x << b) | (x >> (64 - b)); }

static inline uint64_t load_le64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return le64toh(v);
}

static inline void store_le64(uint8_t *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, sizeof(v));
}

/* The state's words live in locals while a piece is hashed: through the
 * struct, every byte store into buf could alias them. */
typedef struct sip_v { uint64_t v0, v1, v2, v3; } sip_v;

static inline void sip_round(sip_v *s)
{
    s->v0 += s->v1; s->v1 = rotl64(s->v1, 13); s->v1 ^= s->v0; s->v0 = rotl64(s->v0, 32);
    s->v2 += s->v3; s->v3 = rotl64(s->v3, 16); s->v3 ^= s->v2;
    s->v0 += s->v3; s->v3 = rotl64(s->v3, 21); s->v3 ^= s->v0;
    s->v2 += s->v1; s->v1 = rotl64(s->v1, 17); s->v1 ^= s->v2; s->v2 = rotl64(s->v2, 32);
}

static inline void sip_word(sip_v *s, uint64_t m)
{
    s->v3 ^= m;
    for (unsigned r = 0; r < SIP_C_ROUNDS; r++)
        sip_round(s);
    s->v0 ^= m;
}

static inline sip_v sip_load(const siphash128_state *st)
{
    return (sip_v){ st->v0, st->v1, st->v2, st->v3 };
}

static inline void sip_store(siphash128_state *st, const sip_v *v)
{
    st->v0 = v->v0;
    st->v1 = v->v1;
    st->v2 = v->v2;
    st->v3 = v->v3;
}

void siphash128_init(siphash128_state *st, const uint8_t key[SIPHASH_KEY_BYTES])
{
    uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
    st->v0 = k0 ^ 0x736f6d6570736575ull; /* "somepseu" */
    st->v1 = k1 ^ 0x646f72616e646f6dull ^ SIP_OUT128_V1; /* "dorandom" */
    st->v2 = k0 ^ 0x6c7967656e657261ull; /* "lygenera" */
    st->v3 = k1 ^ 0x7465646279746573ull; /* "tedbytes" */
    st->total = 0;
    st->buf_len = 0;
}

void siphash128_update(siphash128_state *st, const void *data, size_t len)
{
    const uint8_t *p = data;
    sip_v v = sip_load(st);
    st->total += len;
    if (st->buf_len > 0) {
        size_t take = 8 - st->buf_len;
        if (take > len)
            take = len;
        memcpy(st->buf + st->buf_len, p, take);
        st->buf_len += (unsigned)take;
        p += take;
        len -= take;
        if (st->buf_len < 8)
            return;
        sip_word(&v, load_le64(st->buf));
        st->buf_len = 0;
    }
    for (; len >= 8; p += 8, len -= 8)
        sip_word(&v, load_le64(p));
    memcpy(st->buf, p, len);
    st->buf_len = (unsigned)len;
    sip_store(st, &v);
}

static uint64_t finish_half(sip_v *v)
{
    for (unsigned r = 0; r < SIP_D_ROUNDS; r++)
        sip_round(v);
    return v->v0 ^ v->v1 ^ v->v2 ^ v->v3;
}

void siphash128_final(siphash128_state *st, uint8_t out[SIPHASH128_BYTES])
{
    assert(st->buf_len < 8);
    sip_v v = sip_load(st);
    /* The last word: the leftover bytes, and the length's low byte on top. */
    uint64_t b = (st->total & 0xffu) << 56;
    for (unsigned i = 0; i < st->buf_len; i++)
        b |= (uint64_t)st->buf[i] << (8 * i);
    sip_word(&v, b);
    v.v2 ^= SIP_OUT128_V2;
    store_le64(out, finish_half(&v));
    v.v1 ^= SIP_OUT128_SECOND;
    store_le64(out + 8, finish_half(&v));
    sip_store(st, &v);
}
