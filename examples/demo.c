/* The README's first command ends here: a tour of the library on the
 * built-in default cluster. */
#include <stdio.h>

#include <gpusched/gpusched.h>

static void show_core(void)
{
    uint32_t features = 0, chosen = 0;
    int rc = gpusched_cpu_features(&features, &chosen);
    if (rc) {
        fprintf(stderr, "cpu features: %s\n", gpusched_strerror(rc));
        return;
    }
    printf("libgpusched %s (headers %s)\n", gpusched_version_string(), GPUSCHED_VERSION_STRING);
    printf("cpu features:%s%s%s%s\n",
           features & GPUSCHED_CPU_SSE2 ? " sse2" : "",
           features & GPUSCHED_CPU_AVX2 ? " avx2" : "",
           features & GPUSCHED_CPU_AVX512 ? " avx512" : "",
           features & GPUSCHED_CPU_NEON ? " neon" : "");
    printf("simd path: %s\n", gpusched_simd_name(chosen));
}

int main(void)
{
    show_core();
    return 0;
}
