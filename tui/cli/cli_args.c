/* cli_args.c: argument helpers the headless verbs share (see cli.h). */
#include <errno.h>
#include <stdlib.h>

#include "cli.h"

int cli_usage_error(const char *verb, const char *fmt, const char *arg)
{
    fprintf(stderr, "infertop %s: ", verb);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see infertop %s --help)\n", verb);
    return CLI_USAGE;
}

int cli_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_int(const char *s, int min, int max, int *out)
{
    int64_t v;
    if (cli_parse_i64(s, min, max, &v) != 0)
        return -1;
    *out = (int)v;
    return 0;
}
