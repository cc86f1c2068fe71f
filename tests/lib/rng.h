/* rng.h - the tests' one random generator: xorshift64 (13, 7, 17), fast,
 * reproducible from its seed, never for anything but test data.
 *
 * A test seeds it once and the seed is printed ("seed N ...") on stderr,
 * which the runners keep in the test's log: DEPFS_TEST_SEED=N runs the
 * same numbers again.
 *
 *   seed_rng();                  seed from DEPFS_TEST_SEED, else time and pid
 *   seed_rng_default(0x2545...); seed from DEPFS_TEST_SEED, else this one
 *   rnd(), rnd_below(n), rnd_fill(buf, len)   the process-wide stream
 *
 * Check forks every test case from main: seeded in main, each case starts
 * from the same state. The process-wide stream is not thread-safe; a
 * thread takes its own stream with rng_split() and draws with rng_next(). */
#ifndef DEPFS_TEST_RNG_H
#define DEPFS_TEST_RNG_H
#include <stddef.h>
#include <stdint.h>

typedef struct rng_stream {
    uint64_t state; /* never 0 */
} rng_stream;

static inline uint64_t rng_next(rng_stream *r)
{
    r->state ^= r->state << 13;
    r->state ^= r->state >> 7;
    r->state ^= r->state << 17;
    return r->state;
}

/* Seeds the process-wide stream and prints the seed; returns it. */
uint64_t seed_rng(void);
uint64_t seed_rng_default(uint64_t seed);

uint64_t rnd(void);
uint64_t rnd_below(uint64_t n); /* 0 when n is 0 */
void rnd_fill(void *buf, size_t len); /* one draw per byte, its low byte */

/* A new stream for a thread, seeded from the process-wide one. */
rng_stream rng_split(void);

#endif
