#include "core.h"

GPUSCHED_API uint32_t gpusched_version(void)
{
    return (uint32_t)GPUSCHED_VERSION;
}

GPUSCHED_API const char *gpusched_version_string(void)
{
    return GPUSCHED_VERSION_STRING;
}
