/* ios_fixture.c - an ios_ctx on a temp data dir for unit tests
 * (ios_fixture.h). */
#include "ios_fixture.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IOS_FIXTURE_ERR_BYTES 256

void ios_fixture_open(ios_fixture *f, const char *name, uint32_t server_id,
                      uint32_t max_bulk_bytes)
{
    char err[IOS_FIXTURE_ERR_BYTES];
    memset(f, 0, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/%s.XXXXXX", name);
    ck_assert_ptr_nonnull(mkdtemp(f->dir));
    f->ctx.server_id = server_id;
    f->ctx.max_bulk_bytes = max_bulk_bytes;
    ck_assert_int_eq(ios_strips_open(f->dir, 0, &f->ctx.strips), 0);
    ck_assert_int_eq(ios_locks_create(0, &f->ctx.locks), 0);
    ck_assert_msg(ios_state_open(f->dir, &f->ctx.state, err, sizeof(err)) == 0, "%s", err);
}

void ios_fixture_close(ios_fixture *f)
{
    char cmd[PATH_MAX + 16];
    ios_locks_free(f->ctx.locks);
    ios_state_close(f->ctx.state);
    ios_strips_close(f->ctx.strips);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
    ck_assert_int_eq(system(cmd), 0);
}
