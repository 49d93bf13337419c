/* cpu.c: the choice of kernel path (cpu.h). Compiled for baseline x86-64:
 * it runs before anything knows what the CPU has. */
#include "cpu.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

static const char *const PATH_NAMES[CPU_NPATHS] = {"scalar", "avx2", "avx512", "vnni", "amx"};

/* Each path's needs over the one before it. */
static const unsigned PATH_ADDS[CPU_NPATHS] = {
    [CPU_AVX2] = CPU_F_AVX | CPU_F_AVX2 | CPU_F_FMA | CPU_F_F16C | CPU_F_OS_YMM,
    [CPU_AVX512] = CPU_F_AVX512F | CPU_F_AVX512BW | CPU_F_AVX512DQ | CPU_F_AVX512VL | CPU_F_OS_ZMM,
    [CPU_VNNI] = CPU_F_AVX512VNNI,
    [CPU_AMX] = CPU_F_AVX512VBMI | CPU_F_GFNI | CPU_F_AMX_TILE | CPU_F_AMX_INT8 | CPU_F_OS_TILE,
};

static const char *const FEATURE_NAMES[CPU_F_COUNT] = {"avx",
                                                       "avx2",
                                                       "fma",
                                                       "f16c",
                                                       "OS support of ymm state",
                                                       "avx512f",
                                                       "avx512bw",
                                                       "avx512dq",
                                                       "avx512vl",
                                                       "OS support of zmm state",
                                                       "avx512_vnni",
                                                       "avx512_vbmi",
                                                       "gfni",
                                                       "amx_tile",
                                                       "amx_int8",
                                                       "OS grant of AMX tile data"};

const char *cpu_path_name(cpu_path p)
{
    return p >= 0 && p < CPU_NPATHS ? PATH_NAMES[p] : NULL;
}

unsigned cpu_path_needs(cpu_path p)
{
    unsigned needs = 0;
    for (int i = 0; i <= (int)p && i < CPU_NPATHS; i++)
        needs |= PATH_ADDS[i];
    return needs;
}

cpu_path cpu_best(unsigned features)
{
    cpu_path best = CPU_SCALAR;
    for (int p = CPU_SCALAR; p < CPU_NPATHS; p++)
        if ((cpu_path_needs((cpu_path)p) & ~features) == 0)
            best = (cpu_path)p;
    return best;
}

#if defined(__x86_64__) || defined(__i386__)

static unsigned long long xcr0(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (unsigned long long)hi << 32 | lo;
}

/* Linux keeps AMX's 8 KiB of tile data out of a process's saved state
 * until the process asks for it. */
static int amx_permitted(void)
{
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

static unsigned probe(void)
{
    unsigned a, b, c, d, f = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
        return 0;
    unsigned long long x = xcr0();
    f |= (c & bit_AVX ? CPU_F_AVX : 0) | (c & bit_FMA ? CPU_F_FMA : 0) |
         (c & bit_F16C ? CPU_F_F16C : 0) | ((x & 0x6) == 0x6 ? CPU_F_OS_YMM : 0) |
         ((x & 0xe6) == 0xe6 ? CPU_F_OS_ZMM : 0);
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return f;
    f |= (b & bit_AVX2 ? CPU_F_AVX2 : 0) | (b & bit_AVX512F ? CPU_F_AVX512F : 0) |
         (b & bit_AVX512BW ? CPU_F_AVX512BW : 0) | (b & bit_AVX512DQ ? CPU_F_AVX512DQ : 0) |
         (b & bit_AVX512VL ? CPU_F_AVX512VL : 0) | (c & bit_AVX512VNNI ? CPU_F_AVX512VNNI : 0) |
         (c & bit_AVX512VBMI ? CPU_F_AVX512VBMI : 0) | (c & bit_GFNI ? CPU_F_GFNI : 0) |
         (d & bit_AMX_TILE ? CPU_F_AMX_TILE : 0) | (d & bit_AMX_INT8 ? CPU_F_AMX_INT8 : 0);
    if ((f & CPU_F_AMX_TILE) && (x & 0x60000) == 0x60000 && amx_permitted())
        f |= CPU_F_OS_TILE;
    return f;
}

#else

static unsigned probe(void)
{
    return 0;
}

#endif

unsigned cpu_features(void)
{
    /* Probed at most a few times at once, each time with the same answer. */
    static atomic_uint cached; /* features | 1u << 31 once probed */
    unsigned f = atomic_load_explicit(&cached, memory_order_relaxed);
    if (!(f & 1u << 31)) {
        f = probe() | 1u << 31;
        atomic_store_explicit(&cached, f, memory_order_relaxed);
    }
    return f & ~(1u << 31);
}

static atomic_int active = -1;

cpu_path cpu_active(void)
{
    int p = atomic_load_explicit(&active, memory_order_relaxed);
    if (p < 0) {
        /* Programs call cpu_select_env first and report a bad INFERD_CPU;
         * here it is taken when valid (tests, benches), else the best. */
        char err[256];
        if (cpu_select_env(err, sizeof err) != 0)
            cpu_select(NULL, err, sizeof err);
        p = atomic_load_explicit(&active, memory_order_relaxed);
    }
    return (cpu_path)p;
}

int cpu_select(const char *name, char *err, size_t errlen)
{
    unsigned have = cpu_features();
    if (!name || !*name) {
        atomic_store_explicit(&active, (int)cpu_best(have), memory_order_relaxed);
        return 0;
    }
    int p = 0;
    while (p < CPU_NPATHS && strcmp(name, PATH_NAMES[p]) != 0)
        p++;
    if (p == CPU_NPATHS) {
        snprintf(err, errlen, "unknown kernel path '%s' (scalar, avx2, avx512, vnni or amx)", name);
        return -1;
    }
    unsigned missing = cpu_path_needs((cpu_path)p) & ~have;
    if (missing) {
        int at = snprintf(err, errlen, "kernel path %s: this CPU lacks", name);
        for (int i = 0; i < CPU_F_COUNT && at >= 0 && (size_t)at < errlen; i++)
            if (missing & 1u << i)
                at += snprintf(err + at, errlen - (size_t)at, " %s%s", FEATURE_NAMES[i],
                               (missing >> i) > 1 ? "," : "");
        return -1;
    }
    atomic_store_explicit(&active, p, memory_order_relaxed);
    return 0;
}

int cpu_select_env(char *err, size_t errlen)
{
    const char *name = getenv("INFERD_CPU");
    if (cpu_select(name, err, errlen) == 0)
        return 0;
    /* Name the variable: the reason alone does not say where it came from. */
    char why[256];
    snprintf(why, sizeof why, "%s", err);
    snprintf(err, errlen, "INFERD_CPU=%s: %s", name, why);
    return -1;
}
