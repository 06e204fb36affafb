// SPDX-License-Identifier: GPL-2.0
#include <inttypes.h>

#include "json.h"

void jw_init(struct jw *jw, FILE *f, bool pretty)
{
	jw->f = f;
	jw->pretty = pretty;
	jw->depth = 0;
	jw->nonempty[0] = false;
}

static void jw_indent(struct jw *jw, int depth)
{
	int i;

	fputc('\n', jw->f);
	for (i = 0; i < depth; i++)
		fputs("    ", jw->f);
}

static void jw_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	for (; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\b':
			fputs("\\b", f);
			break;
		case '\f':
			fputs("\\f", f);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

/* Separator, indentation and key before a value at the current level. */
static void jw_prefix(struct jw *jw, const char *key)
{
	if (jw->depth > 0) {
		if (jw->nonempty[jw->depth])
			fputc(',', jw->f);
		if (jw->pretty)
			jw_indent(jw, jw->depth);
	}
	jw->nonempty[jw->depth] = true;
	if (key) {
		jw_string(jw->f, key);
		fputs(jw->pretty ? ": " : ":", jw->f);
	}
}

static void jw_open(struct jw *jw, const char *key, char c)
{
	jw_prefix(jw, key);
	fputc(c, jw->f);
	if (jw->depth < JW_MAX_DEPTH - 1)
		jw->depth++;
	jw->nonempty[jw->depth] = false;
}

static void jw_close(struct jw *jw, char c)
{
	bool nonempty = jw->nonempty[jw->depth];

	if (jw->depth > 0)
		jw->depth--;
	if (nonempty && jw->pretty)
		jw_indent(jw, jw->depth);
	fputc(c, jw->f);
}

void jw_obj_open(struct jw *jw, const char *key)
{
	jw_open(jw, key, '{');
}

void jw_obj_close(struct jw *jw)
{
	jw_close(jw, '}');
}

void jw_arr_open(struct jw *jw, const char *key)
{
	jw_open(jw, key, '[');
}

void jw_arr_close(struct jw *jw)
{
	jw_close(jw, ']');
}

void jw_u64(struct jw *jw, const char *key, uint64_t v)
{
	jw_prefix(jw, key);
	fprintf(jw->f, "%" PRIu64, v);
}

void jw_s64(struct jw *jw, const char *key, int64_t v)
{
	jw_prefix(jw, key);
	fprintf(jw->f, "%" PRId64, v);
}

void jw_str(struct jw *jw, const char *key, const char *s)
{
	jw_prefix(jw, key);
	jw_string(jw->f, s);
}

void jw_num(struct jw *jw, const char *key, const char *num)
{
	jw_prefix(jw, key);
	fputs(num, jw->f);
}
