/* engfix.h: the engines' captured answers (tests/fixtures/engines), for
 * the tests of tui/engine. */
#ifndef ENGFIX_H
#define ENGFIX_H

#include <stddef.h>

#define ENGFIX_LLAMACPP "tests/fixtures/engines/llama.cpp/"

/* An answer as a poller hands it over. */
struct engfix {
    long status;
    char *body;
    size_t len;
};

/* The file ENGFIX_LLAMACPP `name`, whole, as a 200 answer; a `.http`
 * capture is split into its status line's code and its body. Fails the
 * test when it cannot be read. */
struct engfix engfix_load(const char *name);
void engfix_free(struct engfix *f);

#endif
