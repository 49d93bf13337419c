/* stopseq.c: stop sequences over streamed text (see stopseq.h). */
#include "stopseq.h"

#include <string.h>

/* Where the first stop sequence starts in text[from..len), or len. Text
 * before `from` went out already, so no match can start there: it would
 * have been held back. */
static size_t first_match(const stopseq *st, const char *text, size_t len, size_t from)
{
    size_t best = len;
    for (int i = 0; i < st->n; i++) {
        size_t n = strlen(st->s[i]);
        for (size_t p = from; p + n <= len && p < best; p++) {
            if (memcmp(text + p, st->s[i], n) == 0) {
                best = p;
                break;
            }
        }
    }
    return best;
}

/* The longest tail of text[from..len) that is a proper prefix of a stop
 * sequence: what must wait for the next token. */
static size_t held_back(const stopseq *st, const char *text, size_t len, size_t from)
{
    size_t hold = 0;
    for (int i = 0; i < st->n; i++) {
        size_t n = strlen(st->s[i]);
        for (size_t k = n - 1; k > hold; k--) {
            if (k <= len - from && memcmp(text + len - k, st->s[i], k) == 0) {
                hold = k;
                break;
            }
        }
    }
    return hold;
}

int stopseq_scan(const stopseq *st, const char *text, size_t len, size_t sent, size_t *emit)
{
    size_t at = first_match(st, text, len, sent);
    if (at < len) {
        *emit = at;
        return 1;
    }
    *emit = len - held_back(st, text, len, sent);
    return 0;
}
