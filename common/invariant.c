/* check.c - the failure path of INVARIANT (invariant.h): one log line with the
 * place, the expression and the context, then abort(3). */
#include "invariant.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"

#define INVARIANT_CONTEXT_MAX 512u

void invariant_failed(const char *file, int line, const char *expr, const char *fmt, ...)
{
    char ctx[INVARIANT_CONTEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof ctx, fmt, ap);
    va_end(ap);
    log_err("invariant broken at %s:%d: %s (%s)", file, line, expr, ctx);
    fprintf(stderr, "invariant broken at %s:%d: %s (%s)\n", file, line, expr, ctx);
    abort();
}
