/* rng.c - the process-wide test stream and its seeding (rng.h). */
#include "tests/lib/rng.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define RNG_SEED_ENV "DEPFS_TEST_SEED"

static rng_stream rng_global = {.state = 1};

static uint64_t seed_with(uint64_t seed, const char *from)
{
    const char *env = getenv(RNG_SEED_ENV);
    if (env && *env) {
        seed = strtoull(env, NULL, 0);
        from = RNG_SEED_ENV;
    }
    if (seed == 0) /* xorshift stays at 0 forever */
        seed = 1;
    rng_global.state = seed;
    fprintf(stderr, "seed %" PRIu64 " (%s; " RNG_SEED_ENV "=%" PRIu64 " repeats it)\n", seed,
            from, seed);
    return seed;
}

uint64_t seed_rng(void)
{
    return seed_with((uint64_t)time(NULL) << 16 ^ (uint64_t)getpid(), "time and pid");
}

uint64_t seed_rng_default(uint64_t seed)
{
    return seed_with(seed, "the test's default");
}

uint64_t rnd(void)
{
    return rng_next(&rng_global);
}

uint64_t rnd_below(uint64_t n)
{
    return n ? rnd() % n : 0;
}

void rnd_fill(void *buf, size_t len)
{
    uint8_t *p = buf;
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)rnd();
}

rng_stream rng_split(void)
{
    rng_stream r = {.state = rnd()};
    if (r.state == 0)
        r.state = 1;
    return r;
}
