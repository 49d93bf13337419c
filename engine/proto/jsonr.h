/* jsonr.h: typed reads of one field of a jansson object, for the protocol's
 * decoders of replies and telemetry.
 *
 * A missing field leaves *out as it is and returns 0 (v1 messages may omit
 * fields a reader knows, and carry fields it does not). A field of the
 * wrong type returns -1 with "field 'key': expected X, got Y" in err.
 */
#ifndef JSONR_H
#define JSONR_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* "object", "array", "string", "integer", "real", "boolean" or "null". */
const char *jr_type(const json_t *v);

int jr_int(const json_t *o, const char *key, int *out, char *err, size_t errlen);
int jr_i64(const json_t *o, const char *key, int64_t *out, char *err, size_t errlen);
int jr_u64(const json_t *o, const char *key, uint64_t *out, char *err, size_t errlen);
/* An integer or a real; null reads as NaN (non-finite values are sent as null). */
int jr_num(const json_t *o, const char *key, double *out, char *err, size_t errlen);
int jr_bool(const json_t *o, const char *key, int *out, char *err, size_t errlen);
/* Copies the string, cut at a character boundary to fit cap. */
int jr_str(const json_t *o, const char *key, char *out, size_t cap, char *err, size_t errlen);

#endif
