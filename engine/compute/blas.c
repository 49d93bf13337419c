/* blas.c: picking OpenBLAS's kernel set for this CPU.
 *
 * A DYNAMIC_ARCH OpenBLAS (Debian's) chooses its kernels in the library
 * constructor, before main(), from its own CPU table or from the
 * OPENBLAS_CORETYPE environment variable. When it does not know the CPU it
 * falls back to older kernels (Haswell's AVX2 ones on an AVX-512 part: about
 * 20% less sgemm throughput). Since the choice is made before main runs, the
 * only way to change it from inside the program is to set the variable and
 * exec ourselves again.
 *
 * An inherited OPENBLAS_CORETYPE naming OLDER kernels than this CPU runs is
 * upgraded too: "OPENBLAS_CORETYPE=Haswell" is a common workaround for old
 * OpenBLAS builds crashing on new CPUs, and it lingers in environments
 * where it only costs speed. The upgrade never picks kernels the CPU does
 * not run (checked with cpuid), so it cannot bring the crash back. An
 * operator who wants a given kernel set anyway names it in INFERD_BLAS_CORE,
 * which always wins.
 */
#include "blas.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Set across the re-exec so the new image never tries again. */
#define REEXEC_MARK "INFERD_BLAS_REEXEC"

/* OpenBLAS's x86 kernel sets, oldest first. Cores not listed (AMD's, or
 * ones newer than this list) are trusted as OpenBLAS chose them. */
static const char *const ladder[] = {
    "Prescott", "Nehalem", "Sandybridge", "Haswell", "SkylakeX", "Cooperlake",
};
#define LADDER_LEN ((int)(sizeof ladder / sizeof ladder[0]))

static int rung(const char *core)
{
    for (int i = 0; i < LADDER_LEN; i++)
        if (strcasecmp(core, ladder[i]) == 0)
            return i;
    return -1;
}

/* The newest rung this CPU runs. SkylakeX and Cooperlake share the sgemm
 * kernel (measured equal within noise on Sapphire Rapids); Cooperlake adds
 * bf16, and is what OpenBLAS itself picks when the CPU has it. */
static int best_rung(void)
{
    __builtin_cpu_init();
    int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    if (avx512 && __builtin_cpu_supports("avx512bf16"))
        return rung("Cooperlake");
    if (avx512)
        return rung("SkylakeX");
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return rung("Haswell");
    return -1;
}

/* Exec the binary's own path, not /proc/self/exe: the kernel names the
 * process after the last part of the path it was exec'd by, and tools
 * that find inferd by name (pgrep -x, /proc/PID/comm, the SSH driver's
 * status) would see "exe". /proc/self/exe is the fallback for a binary
 * replaced or deleted since it started. */
static void exec_self(char **argv)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        if (access(self, X_OK) == 0)
            execv(self, argv);
    }
    execv("/proc/self/exe", argv);
}

void blas_select_core(char **argv)
{
    if (getenv(REEXEC_MARK))
        return; /* we are the re-executed image */
    const char *pinned = getenv("INFERD_BLAS_CORE");
    const char *inherited = getenv("OPENBLAS_CORETYPE");
    const char *want;
    if (pinned && *pinned) {
        if (inherited && strcasecmp(inherited, pinned) == 0)
            return;
        want = pinned;
    } else {
        int now = rung(openblas_get_corename());
        int best = best_rung();
        if (now < 0 || best <= now)
            return;
        want = ladder[best];
    }
    char *saved = inherited ? strdup(inherited) : NULL;
    if (setenv("OPENBLAS_CORETYPE", want, 1) == 0 && setenv(REEXEC_MARK, "1", 1) == 0)
        exec_self(argv);
    /* exec failed: carry on with the kernels already loaded, and leave the
     * environment children inherit as it was. */
    if (saved)
        setenv("OPENBLAS_CORETYPE", saved, 1);
    else
        unsetenv("OPENBLAS_CORETYPE");
    unsetenv(REEXEC_MARK);
    free(saved);
}

void blas_set_threads(int n)
{
    openblas_set_num_threads(n);
}

const char *blas_core(void)
{
    return openblas_get_corename();
}
