/* invariant.h - always-on assertions for the invariants that matter (lock
 * tables, layouts, request shapes). Unlike assert(3) they stay in release
 * builds: a broken invariant in a storage daemon must stop it before it
 * writes a wrong byte, and the log line says where and with which values
 * (INVARIANT(cond, "file %llx stripe %llu", ...)). Use assert(3) only for
 * cheap programming checks whose failure cannot touch data. */
#ifndef DEPFS_INVARIANT_H
#define DEPFS_INVARIANT_H

_Noreturn void invariant_failed(const char *file, int line, const char *expr, const char *fmt,
                                ...) __attribute__((format(printf, 4, 5)));

#define INVARIANT(cond, ...)                                                 \
    do {                                                                     \
        if (__builtin_expect(!(cond), 0))                                    \
            invariant_failed(__FILE__, __LINE__, #cond, __VA_ARGS__);        \
    } while (0)

#endif
