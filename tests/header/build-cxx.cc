// The umbrella header must compile as C++ and link with C linkage.
#include <gpusched/gpusched.h>

int main()
{
    gpusched_allocator a = GPUSCHED_ALLOCATOR_INIT;
    return (gpusched_version() == GPUSCHED_VERSION && a.size == sizeof a) ? 0 : 1;
}
