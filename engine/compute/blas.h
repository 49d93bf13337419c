/* blas.h: which OpenBLAS kernels run, and on how many threads. */
#ifndef BLAS_H
#define BLAS_H

/* Call first thing in main(), before any output. When OpenBLAS runs older
 * kernels than the CPU supports (its own fallback, or an inherited
 * OPENBLAS_CORETYPE such as "Haswell" on an AVX-512 machine), re-executes
 * the program with OPENBLAS_CORETYPE set to the best kernels for this CPU.
 * INFERD_BLAS_CORE=NAME pins a kernel set instead. Returns normally when no
 * re-exec is needed or the exec fails. */
void blas_select_core(char **argv);

void blas_set_threads(int n);

/* The kernel set in use ("SkylakeX", "Haswell", ...), for reports. */
const char *blas_core(void);

#endif
