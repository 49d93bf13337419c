/* kpath.h: which kernel path (cpu.h) a per-path file is being compiled
 * for, and the suffix its public names take.
 *
 * The Makefile compiles each file of KERNELS once per path, QB_PATH the
 * path's number, with that path's instruction set; a file compiled once
 * (QB_PATH unset) is the scalar path. Such a file names what it exports
 * QB_SYM(name): name_scalar, name_avx2, ... for the caller to pick from
 * by cpu_active(). Compiling a whole file for the path, rather than
 * marking functions with a target attribute, also sets the feature
 * macros (__F16C__, __FMA__) that vec8.h's conversions test.
 */
#ifndef KPATH_H
#define KPATH_H

#ifndef QB_PATH
#define QB_PATH 0
#endif
#if QB_PATH == 0
#define QB_SUFFIX scalar
#elif QB_PATH == 1
#define QB_SUFFIX avx2
#elif QB_PATH == 2
#define QB_SUFFIX avx512
#elif QB_PATH == 3
#define QB_SUFFIX vnni
#elif QB_PATH == 4
#define QB_SUFFIX amx
#else
#error "QB_PATH: a cpu_path number, 0 to 4"
#endif
#if QB_PATH >= 1 && !(defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
#error "the avx2 path and those above need -mavx2 -mfma -mf16c"
#endif

#define QB_CAT_(a, b) a##_##b
#define QB_CAT(a, b) QB_CAT_(a, b)
#define QB_SYM(name) QB_CAT(name, QB_SUFFIX)

#endif
