/* The ephemeral range as the kernel says it, and free ports outside it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "engine/sys/ports.h"

Test(ports, range_is_the_kernels)
{
    int lo, hi, klo = 0, khi = 0;
    ports_ephemeral(&lo, &hi);
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    cr_assert(f);
    cr_assert_eq(fscanf(f, "%d %d", &klo, &khi), 2);
    fclose(f);
    cr_assert_eq(lo, klo);
    cr_assert_eq(hi, khi);
}

Test(ports, ephemeral_names_the_range)
{
    int lo, hi;
    char why[512], range[64];
    ports_ephemeral(&lo, &hi);
    snprintf(range, sizeof range, "%d..%d", lo, hi);
    cr_assert_eq(ports_is_ephemeral(lo, why, sizeof why), 1);
    cr_assert(strstr(why, range), "%s", why);
    cr_assert_eq(ports_is_ephemeral(hi, NULL, 0), 1);
    cr_assert_eq(ports_is_ephemeral(lo - 1, why, sizeof why), 0);
    cr_assert_eq(ports_is_ephemeral(0, why, sizeof why), 0);
}

Test(ports, free_run_outside_the_range)
{
    int first = 0;
    char err[256];
    cr_assert_eq(ports_free_run(3, &first, err, sizeof err), 0, "%s", err);
    cr_assert_geq(first, 1024);
    for (int p = first; p < first + 3; p++)
        cr_assert_eq(ports_is_ephemeral(p, NULL, 0), 0, "port %d", p);
    cr_assert_eq(ports_free_run(0, &first, err, sizeof err), -1);
    cr_assert(strstr(err, "no run of 0 ports"), "%s", err);
}
