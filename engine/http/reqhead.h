/* reqhead.h: the check of a request's head (request line and fields)
 * before libmicrohttpd parses it.
 *
 * libmicrohttpd 0.9.75 answers some malformed requests itself with HTML
 * pages (a bad Content-Length, a request line or fields past its memory,
 * an HTTP version other than 1.x, a missing Host) and has no hook to
 * replace them. The guard (guard.h) peeks at a new connection's first
 * bytes, and this check refuses every head libmicrohttpd would, with
 * limits below its own, so that libmicrohttpd never reaches its pages
 * and every error is the API's JSON. No I/O here.
 */
#ifndef REQHEAD_H
#define REQHEAD_H

#include <stddef.h>

/* The limits, all here. A request line past REQHEAD_LINE_MAX is 414, a
 * head past REQHEAD_MAX bytes or REQHEAD_FIELDS_MAX field lines 431
 * (nginx's defaults: large_client_header_buffers 4 8k). */
#define REQHEAD_LINE_MAX 8192
#define REQHEAD_MAX 16384
#define REQHEAD_FIELDS_MAX 128
/* libmicrohttpd's memory per connection: it reads into half of it (0.9.75,
 * try_grow_read_buffer), so a head of REQHEAD_MAX fits with its field
 * records (about 64 bytes each) and the response's header: libmicrohttpd
 * never runs out of it for a head this check let through. */
#define REQHEAD_MHD_MEMORY (4 * REQHEAD_MAX)

typedef enum reqhead_verdict {
    REQHEAD_MORE,   /* not whole yet: wait for more bytes */
    REQHEAD_OK,     /* whole and sound: libmicrohttpd may take it */
    REQHEAD_REFUSE, /* answer status with code and message, then close */
    REQHEAD_DROP    /* the client closed before a whole head: nothing to answer */
} reqhead_verdict;

typedef struct reqhead {
    int status;        /* REQHEAD_REFUSE */
    const char *code;  /* REQHEAD_REFUSE: the API's error code */
    char message[160]; /* REQHEAD_REFUSE */
    char path[64];     /* the path, when the request line came ("" before) */
} reqhead;

/* The head at the start of buf (n bytes, what came so far; closed: the
 * client sent nothing more). */
reqhead_verdict reqhead_check(const char *buf, size_t n, int closed, reqhead *out);

#endif
