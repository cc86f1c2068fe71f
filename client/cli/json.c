/* json.c - the CLI's streaming JSON writer: nesting, commas, indentation and
 * RFC 8259 string escaping (with UTF-8 validation). See json.h. */
#include "json.h"

#include <assert.h>
#include <inttypes.h>
#include <stddef.h>

#define JSON_INDENT_SPACES 2u
#define UTF8_REPLACEMENT "\xEF\xBF\xBD" /* U+FFFD */

void cli_json_init(cli_json *j, FILE *out)
{
    assert(out != NULL);
    j->out = out;
    j->depth = 0;
    j->has_items[0] = false;
    j->is_object[0] = false;
}

/* Length of the valid UTF-8 sequence starting at s, or 0 when invalid
 * (overlong forms, surrogates and code points above U+10FFFF are invalid). */
static size_t utf8_seq_len(const unsigned char *s)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    uint32_t min_cp;

    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0) {
        len = 2; cp = c & 0x1F; min_cp = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3; cp = c & 0x0F; min_cp = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4; cp = c & 0x07; min_cp = 0x10000;
    } else {
        return 0;
    }
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) /* also stops at the NUL terminator */
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

static void write_escaped_char(FILE *out, unsigned char c)
{
    switch (c) {
    case '"':  fputs("\\\"", out); break;
    case '\\': fputs("\\\\", out); break;
    case '\b': fputs("\\b", out); break;
    case '\f': fputs("\\f", out); break;
    case '\n': fputs("\\n", out); break;
    case '\r': fputs("\\r", out); break;
    case '\t': fputs("\\t", out); break;
    default:
        if (c < 0x20 || c == 0x7F)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
}

void cli_json_write_escaped(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    fputc('"', out);
    while (*p != '\0') {
        size_t len = utf8_seq_len(p);
        if (len == 0) {
            fputs(UTF8_REPLACEMENT, out);
            p++;
        } else if (len == 1) {
            write_escaped_char(out, *p);
            p++;
        } else {
            fwrite(p, 1, len, out);
            p += len;
        }
    }
    fputc('"', out);
}

static void indent(cli_json *j)
{
    fputc('\n', j->out);
    for (unsigned i = 0; i < j->depth * JSON_INDENT_SPACES; i++)
        fputc(' ', j->out);
}

/* Separator, indentation and key before a value at the current depth. */
static void value_prefix(cli_json *j, const char *key)
{
    if (j->depth == 0) {
        assert(key == NULL);
        assert(!j->has_items[0]); /* one top-level value */
        j->has_items[0] = true;
        return;
    }
    assert(j->is_object[j->depth] == (key != NULL));
    if (j->has_items[j->depth])
        fputc(',', j->out);
    j->has_items[j->depth] = true;
    indent(j);
    if (key != NULL) {
        cli_json_write_escaped(j->out, key);
        fputs(": ", j->out);
    }
}

static void begin(cli_json *j, const char *key, bool object)
{
    value_prefix(j, key);
    assert(j->depth < CLI_JSON_MAX_DEPTH);
    fputc(object ? '{' : '[', j->out);
    j->depth++;
    j->has_items[j->depth] = false;
    j->is_object[j->depth] = object;
}

static void end(cli_json *j, bool object)
{
    assert(j->depth > 0);
    assert(j->is_object[j->depth] == object);
    bool had_items = j->has_items[j->depth];
    j->depth--;
    if (had_items)
        indent(j);
    fputc(object ? '}' : ']', j->out);
}

void cli_json_begin_object(cli_json *j, const char *key) { begin(j, key, true); }
void cli_json_end_object(cli_json *j) { end(j, true); }
void cli_json_begin_array(cli_json *j, const char *key) { begin(j, key, false); }
void cli_json_end_array(cli_json *j) { end(j, false); }

void cli_json_string(cli_json *j, const char *key, const char *val)
{
    value_prefix(j, key);
    if (val == NULL)
        fputs("null", j->out);
    else
        cli_json_write_escaped(j->out, val);
}

void cli_json_uint(cli_json *j, const char *key, uint64_t val)
{
    value_prefix(j, key);
    fprintf(j->out, "%" PRIu64, val);
}

void cli_json_int(cli_json *j, const char *key, int64_t val)
{
    value_prefix(j, key);
    fprintf(j->out, "%" PRId64, val);
}

void cli_json_bool(cli_json *j, const char *key, bool val)
{
    value_prefix(j, key);
    fputs(val ? "true" : "false", j->out);
}

void cli_json_null(cli_json *j, const char *key)
{
    value_prefix(j, key);
    fputs("null", j->out);
}

void cli_json_finish(cli_json *j)
{
    assert(j->depth == 0);
    fputc('\n', j->out);
    fflush(j->out);
}
