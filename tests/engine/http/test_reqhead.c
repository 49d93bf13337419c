/* test_reqhead.c: the check of a request's head before libmicrohttpd
 * parses it: each head it would answer with its own page is refused with
 * the status and code of the API's error table; sound heads pass, partial
 * ones wait. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "engine/http/reqhead.h"

static reqhead_verdict check(const char *head, reqhead *rh)
{
    return reqhead_check(head, strlen(head), 0, rh);
}

static void refused(const char *head, int status, const char *code)
{
    reqhead rh;
    cr_assert_eq(check(head, &rh), REQHEAD_REFUSE, "%.60s", head);
    cr_expect_eq(rh.status, status, "%.60s: %d", head, rh.status);
    cr_expect_str_eq(rh.code, code, "%.60s", head);
    cr_expect_neq(rh.message[0], '\0');
}

Test(reqhead, sound_heads_pass_with_their_path)
{
    reqhead rh;
    cr_expect_eq(check("GET /health HTTP/1.1\r\nHost: x\r\n\r\n", &rh), REQHEAD_OK);
    cr_expect_str_eq(rh.path, "/health");
    cr_expect_eq(check("\r\nPOST /v1/completions?a=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n"
                       "Content-Length: 12\r\n\r\n{\"partial\":",
                       &rh),
                 REQHEAD_OK, "a body after the head, the same length twice");
    cr_expect_str_eq(rh.path, "/v1/completions");
    cr_expect_eq(check("GET / HTTP/1.0\n\n", &rh), REQHEAD_OK, "bare LF, 1.0 without Host");
    cr_expect_eq(check("GET / HTTP/1.1\r\nHost: x\r\nX-A: b\r\n  folded\r\n\r\n", &rh), REQHEAD_OK);
}

Test(reqhead, partial_heads_wait_or_drop)
{
    reqhead rh;
    cr_expect_eq(check("GET /health HT", &rh), REQHEAD_MORE);
    cr_expect_eq(check("GET /health HTTP/1.1\r\nHost: x\r\n", &rh), REQHEAD_MORE);
    cr_expect_str_eq(rh.path, "/health", "the path is known once the line is");
    const char *h = "GET /health HTTP/1.1\r\nHo";
    cr_expect_eq(reqhead_check(h, strlen(h), 1, &rh), REQHEAD_DROP);
}

Test(reqhead, libmicrohttpds_cases_are_refused)
{
    refused("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 12abc\r\n\r\n", 400,
            "bad_content_length");
    refused("POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n", 400, "bad_content_length");
    refused("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400,
            "bad_content_length");
    refused("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551615\r\n\r\n", 413,
            "too_large");
    refused("GET /health HTTP/2.0\r\nHost: x\r\n\r\n", 505, "http_version");
    refused("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, "http_version");
    refused("GET /health HTTP/0.9\r\n\r\n", 505, "http_version");
    refused("GET /health\r\n\r\n", 400, "bad_request");
    refused("GET /health HTTP/1.1x\r\n\r\n", 400, "bad_request");
    refused("GET  HTTP/1.1\r\n\r\n", 400, "bad_request");
    refused("GET /health HTTP/1.1\r\n\r\n", 400, "bad_request");
    refused("GET /health HTTP/1.1\r\nHost: x\r\nnocolon\r\n\r\n", 400, "bad_request");
    refused("GET /health HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n", 400, "bad_request");
}

Test(reqhead, limits)
{
    static char buf[REQHEAD_MAX + 2];
    reqhead rh;
    /* A request line past its limit is refused before its end comes. */
    memset(buf, 'a', REQHEAD_LINE_MAX + 2);
    memcpy(buf, "GET /", 5);
    cr_expect_eq(reqhead_check(buf, REQHEAD_LINE_MAX + 2, 0, &rh), REQHEAD_REFUSE);
    cr_expect_eq(rh.status, 414);
    /* A head past its limit, without its end. */
    const char *line = "GET / HTTP/1.1\r\nHost: x\r\nX-A: ";
    memset(buf, 'b', sizeof buf);
    memcpy(buf, line, strlen(line));
    cr_expect_eq(reqhead_check(buf, sizeof buf, 0, &rh), REQHEAD_REFUSE);
    cr_expect_eq(rh.status, 431);
    cr_expect_str_eq(rh.code, "headers_too_large");
    /* Too many field lines, in a small head. */
    size_t n = (size_t)snprintf(buf, sizeof buf, "GET / HTTP/1.1\r\nHost: x\r\n");
    for (int i = 0; i < REQHEAD_FIELDS_MAX; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "A: b\r\n");
    snprintf(buf + n, sizeof buf - n, "\r\n");
    cr_expect_eq(check(buf, &rh), REQHEAD_REFUSE);
    cr_expect_eq(rh.status, 431);
}
