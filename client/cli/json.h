/* json.h - a tiny streaming JSON writer for the depfs CLI's --json output.
 *
 * Usage: cli_json_init(&j, stdout); cli_json_begin_object(&j, NULL);
 * cli_json_uint(&j, "size", 42); cli_json_end_object(&j); cli_json_finish(&j);
 * Members of an object take a key; elements of an array (and the top value)
 * take key NULL. Strings are escaped per RFC 8259; bytes that are not valid
 * UTF-8 (file names may be anything) become U+FFFD, so the output is always
 * valid JSON. Output is indented two spaces per level. */
#ifndef DEPFS_CLI_JSON_H
#define DEPFS_CLI_JSON_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_JSON_MAX_DEPTH 32u

typedef struct cli_json {
    FILE *out;
    unsigned depth;                        /* open containers */
    bool has_items[CLI_JSON_MAX_DEPTH + 1]; /* container at depth d has a member */
    bool is_object[CLI_JSON_MAX_DEPTH + 1];
} cli_json;

void cli_json_init(cli_json *j, FILE *out);
void cli_json_begin_object(cli_json *j, const char *key);
void cli_json_end_object(cli_json *j);
void cli_json_begin_array(cli_json *j, const char *key);
void cli_json_end_array(cli_json *j);
void cli_json_string(cli_json *j, const char *key, const char *val); /* NULL -> null */
void cli_json_uint(cli_json *j, const char *key, uint64_t val);
void cli_json_int(cli_json *j, const char *key, int64_t val);
void cli_json_bool(cli_json *j, const char *key, bool val);
void cli_json_null(cli_json *j, const char *key);
/* Ends the document with a newline; every container must be closed. */
void cli_json_finish(cli_json *j);

/* Writes s as a quoted, escaped JSON string (exposed for tests). */
void cli_json_write_escaped(FILE *out, const char *s);

#endif
