/* paths.c: see paths.h. */
#include "paths.h"

#include <stdio.h>

#include "engine/compute/cpu.h"

void paths_each(const char *test, void (*body)(void))
{
    char err[512];
    for (int p = 0; p < CPU_NPATHS; p++) {
        const char *name = cpu_path_name((cpu_path)p);
        if (cpu_select(name, err, sizeof err) != 0) {
            fprintf(stderr, "%s: skipped %s\n", test, err);
            continue;
        }
        fprintf(stderr, "%s: path %s\n", test, name);
        body();
    }
    cr_assert_eq(cpu_select(NULL, err, sizeof err), 0, "%s", err);
}
