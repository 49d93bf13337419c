/* utf8.h: the one place that knows UTF-8's rules (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF). Whoever cuts, counts,
 * checks or cleans text calls these instead of testing bits itself, so
 * that every part of the tree agrees on where a character ends and what
 * is invalid.
 *
 * Invalid bytes are taken in maximal subparts (Unicode's "U+FFFD
 * substitution of maximal subparts"): the longest start of a sequence that
 * could have been valid, or else one byte, counts as one character and is
 * replaced by one U+FFFD, as terminals and browsers show it.
 */
#ifndef UTF8_H
#define UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Whether c is a continuation byte (10xxxxxx). */
static inline int utf8_is_cont(unsigned char c)
{
    return (c & 0xC0) == 0x80;
}

/* What starts at s (n > 0 bytes there): the length 1..4 of a valid
 * character; 0 when the bytes are the valid start of one that n cuts off;
 * -k when the first k bytes (a maximal subpart) can never be part of one. */
int utf8_check(const char *s, size_t n);

/* The length of the valid character at s, 0 when none starts there
 * (invalid, or cut off by n). */
size_t utf8_seq(const char *s, size_t n);

/* Bytes from s (n > 0) to the next character: a valid one's length, an
 * invalid maximal subpart's, or all n when the rest is cut off. */
size_t utf8_step(const char *s, size_t n);

/* Characters in s[0..n), an invalid subpart counting as one: the columns
 * the text takes on a terminal that draws one per character. */
size_t utf8_count(const char *s, size_t n);

/* The length of s[0..n) without a character that n cuts off at its end:
 * where to cut a longer text so that no character is split. */
size_t utf8_cut(const char *s, size_t n);

/* The code point of the valid character at s (n bytes there) into *cp;
 * its length, or 0 when none starts there. */
size_t utf8_decode(const char *s, size_t n, uint32_t *cp);

/* The UTF-8 of cp (a code point, not a surrogate) into out; its length. */
size_t utf8_encode(uint32_t cp, char out[4]);

/* Copies src[0..n) into dst (cap > 0 bytes, NUL-terminated), replacing
 * each invalid subpart and each NUL by U+FFFD and cutting at a character
 * boundary when it does not fit. Returns the bytes written, without the
 * NUL. */
size_t utf8_clean(char *dst, size_t cap, const char *src, size_t n);

#endif
