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

static void show_topo(void)
{
    gpusched_topo *t = NULL;
    char err[256];
    int rc = gpusched_topo_preset("gb200-nvl72-1m", NULL, &t, err, sizeof err);
    if (rc) {
        fprintf(stderr, "topology: %s\n", err);
        return;
    }
    printf("topology gb200-nvl72-1m:");
    for (uint32_t l = 0; l < gpusched_topo_level_count(t); l++)
        printf(" %u %ss%s", gpusched_topo_domain_count(t, l), gpusched_topo_level_name(t, l),
               l + 1 < gpusched_topo_level_count(t) ? "," : "");
    uint64_t gpus = gpusched_topo_gpu_count(t);
    size_t bytes = gpusched_topo_memory_bytes(t);
    printf("; %u nodes, %llu GPUs of class %s\n", gpusched_topo_node_count(t), (unsigned long long)gpus,
           gpusched_topo_class_name(t, 0));
    printf("topology memory: %.1f MiB, %.2f bytes per GPU\n", (double)bytes / (1 << 20),
           (double)bytes / (double)gpus);
    gpusched_topo_unref(t);
}

int main(void)
{
    show_core();
    show_topo();
    return 0;
}
