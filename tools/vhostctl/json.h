/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small JSON writer.  Compact output has no spaces at all; pretty output
 * is byte for byte what "python3 -m json.tool" prints (4-space indent,
 * ": " after keys), so either can be checked against the other.
 */
#ifndef VHOSTCTL_JSON_H
#define VHOSTCTL_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JW_MAX_DEPTH 16

struct jw {
	FILE *f;
	bool pretty;
	int depth;
	bool nonempty[JW_MAX_DEPTH];	/* a value was written at this level */
};

void jw_init(struct jw *jw, FILE *f, bool pretty);
/* key is NULL inside arrays and at the top level. */
void jw_obj_open(struct jw *jw, const char *key);
void jw_obj_close(struct jw *jw);
void jw_arr_open(struct jw *jw, const char *key);
void jw_arr_close(struct jw *jw);
void jw_u64(struct jw *jw, const char *key, uint64_t v);
void jw_s64(struct jw *jw, const char *key, int64_t v);
void jw_str(struct jw *jw, const char *key, const char *s);
/* num: the text of a JSON number, written as it is. */
void jw_num(struct jw *jw, const char *key, const char *num);

#endif
