/* cpu.h: which kernel path the quantized products run (run-time dispatch).
 *
 * One build carries every path of qblock_f.c, qblock_q.c and qblock_k.c,
 * each compiled with its own instruction set (see the Makefile); at start
 * the best path the CPU and the OS support is chosen from cpuid and
 * xgetbv, or the one INFERD_CPU names. This file and everything that runs
 * before the choice is baseline x86-64.
 */
#ifndef CPU_H
#define CPU_H

#include <stddef.h>

/* Kernel paths, each a superset of the one before. */
typedef enum cpu_path {
    CPU_SCALAR, /* portable C: the reference */
    CPU_AVX2,   /* AVX2 + FMA + F16C, 256-bit registers */
    CPU_AVX512, /* + AVX-512 F/BW/DQ/VL: the AVX2 kernels on 32 registers */
    CPU_VNNI,   /* + AVX-512 VNNI: fused byte and word dot products */
    CPU_AMX,    /* + AMX-TILE/INT8, VBMI, GFNI: batched Q8_0 on tiles */
    CPU_NPATHS
} cpu_path;

/* Features a path needs, as cpuid and xgetbv report them. */
enum {
    CPU_F_AVX = 1u << 0,
    CPU_F_AVX2 = 1u << 1,
    CPU_F_FMA = 1u << 2,
    CPU_F_F16C = 1u << 3,
    CPU_F_OS_YMM = 1u << 4, /* the OS saves ymm registers (XCR0 bits 1, 2) */
    CPU_F_AVX512F = 1u << 5,
    CPU_F_AVX512BW = 1u << 6,
    CPU_F_AVX512DQ = 1u << 7,
    CPU_F_AVX512VL = 1u << 8,
    CPU_F_OS_ZMM = 1u << 9, /* ... and opmask and zmm registers (bits 5-7) */
    CPU_F_AVX512VNNI = 1u << 10,
    CPU_F_AVX512VBMI = 1u << 11,
    CPU_F_GFNI = 1u << 12,
    CPU_F_AMX_TILE = 1u << 13,
    CPU_F_AMX_INT8 = 1u << 14,
    CPU_F_OS_TILE = 1u << 15, /* ... and tile data, granted to this process */
    CPU_F_COUNT = 16
};

/* "scalar", "avx2", ...; NULL for a value out of range. */
const char *cpu_path_name(cpu_path p);

/* The features path p needs. */
unsigned cpu_path_needs(cpu_path p);

/* The best path a CPU with `features` can run: a pure function. */
cpu_path cpu_best(unsigned features);

/* What this CPU and OS support, probed once (asking Linux for the AMX
 * tile state on the way). */
unsigned cpu_features(void);

/* Makes path `name` (NULL or "": the best) the one in use; -1 with the
 * reason in err when the name is unknown or the CPU lacks a feature the
 * path needs. */
int cpu_select(const char *name, char *err, size_t errlen);

/* cpu_select from the INFERD_CPU environment variable. */
int cpu_select_env(char *err, size_t errlen);

/* The path in use: the best one until something is selected. */
cpu_path cpu_active(void);

#endif
