// Drives the gpusched-bench scenarios through Google Benchmark. Each
// scenario times itself (medians of repeated runs); the shim runs it once
// per benchmark iteration and exposes every record it reports as a counter,
// so the figures are the same as gpusched-bench's.
#include <benchmark/benchmark.h>

#include <string>

#include "bench.h"

static void run_scenario(benchmark::State &state, const gsb_scenario *s)
{
    for (auto _ : state) {
        gsb_ctx *b = gsb_ctx_new(true, true, nullptr);
        s->run(b);
        for (size_t i = 0; i < gsb_record_count(b); i++) {
            const char *name, *unit;
            double value;
            gsb_record_get(b, i, &name, &value, &unit);
            state.counters[std::string(name) + " [" + unit + "]"] = value;
        }
        gsb_ctx_free(b);
    }
}

int main(int argc, char **argv)
{
    for (size_t t = 0; gsb_tables[t]; t++)
        for (const gsb_scenario *s = gsb_tables[t]; s->name; s++)
            benchmark::RegisterBenchmark(s->name, run_scenario, s)->Iterations(1);
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
