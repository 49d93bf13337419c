/* run.c: see run.h. */
#include "run.h"

#include <stddef.h>

int cli_test_run(int (*verb)(int, char **), const char *const *args)
{
    char *argv[16];
    int argc = 0;
    for (; args[argc] && argc < 15; argc++)
        argv[argc] = (char *)args[argc];
    argv[argc] = NULL;
    return verb(argc, argv);
}
