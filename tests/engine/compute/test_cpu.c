/* test_cpu.c: the choice of kernel path (engine/compute/cpu.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "engine/compute/cpu.h"

/* Every combination of the features cpuid and xgetbv report: the best
 * path has every feature it needs, and the next one up lacks one. */
Test(cpu, best_never_needs_a_missing_feature)
{
    for (unsigned f = 0; f < 1u << CPU_F_COUNT; f++) {
        cpu_path p = cpu_best(f);
        cr_assert((cpu_path_needs(p) & ~f) == 0, "features %#x: %s needs %#x", f, cpu_path_name(p),
                  cpu_path_needs(p));
        for (int q = p + 1; q < CPU_NPATHS; q++)
            cr_assert((cpu_path_needs((cpu_path)q) & ~f) != 0,
                      "features %#x: %s chosen, but %s has all it needs", f, cpu_path_name(p),
                      cpu_path_name((cpu_path)q));
    }
}

/* Each path needs all its predecessor needs, and more; the OS's consent
 * to the wider registers is part of each. */
Test(cpu, paths_are_nested)
{
    cr_assert_eq(cpu_path_needs(CPU_SCALAR), 0u);
    for (int p = 1; p < CPU_NPATHS; p++) {
        unsigned prev = cpu_path_needs((cpu_path)(p - 1)), now = cpu_path_needs((cpu_path)p);
        cr_assert((prev & ~now) == 0 && now != prev, "%s", cpu_path_name((cpu_path)p));
    }
    cr_assert(cpu_path_needs(CPU_AVX2) & CPU_F_OS_YMM);
    cr_assert(cpu_path_needs(CPU_AVX512) & CPU_F_OS_ZMM);
    cr_assert(cpu_path_needs(CPU_AMX) & CPU_F_OS_TILE);
    cr_assert_null(cpu_path_name(CPU_NPATHS));
}

/* This machine: the best path is selectable and active after a default
 * selection; a path it lacks is refused naming the missing features, an
 * unknown one naming the known ones, and neither changes the path. */
Test(cpu, select_refuses_what_the_cpu_lacks)
{
    char err[512];
    unsigned have = cpu_features();
    cr_assert_eq(cpu_select(NULL, err, sizeof err), 0);
    cr_assert_eq(cpu_active(), cpu_best(have));
    for (int p = 0; p < CPU_NPATHS; p++) {
        const char *name = cpu_path_name((cpu_path)p);
        unsigned missing = cpu_path_needs((cpu_path)p) & ~have;
        int rc = cpu_select(name, err, sizeof err);
        if (!missing) {
            cr_assert_eq(rc, 0, "%s: %s", name, err);
            cr_assert_eq(cpu_active(), (cpu_path)p);
            continue;
        }
        cr_assert_eq(rc, -1, "%s selected without %#x", name, missing);
        cr_assert(strstr(err, name) && strstr(err, "lacks"), "%s: '%s'", name, err);
        cr_assert_neq(cpu_active(), (cpu_path)p);
        fprintf(stderr, "cpu: %s\n", err);
    }
    cr_assert_eq(cpu_select("avx3", err, sizeof err), -1);
    cr_assert(strstr(err, "unknown kernel path 'avx3'"), "%s", err);
}

/* INFERD_CPU, as inferd reads it: the variable named in the refusal. */
Test(cpu, select_env_names_the_variable)
{
    char err[512];
    setenv("INFERD_CPU", "bogus", 1);
    cr_assert_eq(cpu_select_env(err, sizeof err), -1);
    cr_assert(strstr(err, "INFERD_CPU=bogus: unknown kernel path"), "%s", err);
    setenv("INFERD_CPU", "scalar", 1);
    cr_assert_eq(cpu_select_env(err, sizeof err), 0, "%s", err);
    cr_assert_eq(cpu_active(), CPU_SCALAR);
    unsetenv("INFERD_CPU");
    cr_assert_eq(cpu_select_env(err, sizeof err), 0, "%s", err);
    cr_assert_eq(cpu_active(), cpu_best(cpu_features()));
}
