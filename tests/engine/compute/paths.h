/* paths.h: a Criterion test run once per kernel path (engine/compute/cpu.h)
 * this CPU has, each named on stderr; the paths it lacks are named as
 * skipped, with the features missing. */
#ifndef PATHS_H
#define PATHS_H

#include <criterion/criterion.h>

/* body() under every path the CPU runs, then the best path again. */
void paths_each(const char *test, void (*body)(void));

/* Test(suite, name) whose body runs under every path. */
#define PATHS_TEST(suite, name)                                                                    \
    static void name##_on_path(void);                                                              \
    Test(suite, name)                                                                              \
    {                                                                                              \
        paths_each(#suite "::" #name, name##_on_path);                                             \
    }                                                                                              \
    static void name##_on_path(void)

#endif
