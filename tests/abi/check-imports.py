#!/usr/bin/env python3
"""Checks what the library's objects take from the C library.

Everything the library allocates goes through the caller's allocator
(gpusched_allocator), so only lib/core/alloc.c, the default allocator, may
call the C library's heap functions. Functions that allocate behind the
caller's back are refused everywhere: qsort (glibc's merge sort takes a
malloc'd buffer for large arrays; the library sorts with lib/core/heap.h),
strdup and the like (gs_strdup allocates through the allocator).

Usage: check-imports.py NM ARCHIVE, ARCHIVE being the static library the
shared one is linked from (libgpusched-internal.a).
"""
import subprocess
import sys

HEAP = {"malloc", "calloc", "realloc", "free", "reallocarray", "posix_memalign", "aligned_alloc",
        "memalign", "valloc", "pvalloc"}
HIDDEN_ALLOC = {"qsort", "qsort_r", "strdup", "strndup", "asprintf", "vasprintf", "open_memstream",
                "getline", "getdelim", "realpath", "scandir", "tempnam"}
ALLOCATOR = "core_alloc.c.o"


def imports(nm, archive):
    out = subprocess.run([nm, "-A", "-u", archive], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        # archive:member: U symbol (thin archives add the member's path)
        head, _, sym = line.rpartition(" ")
        member = head.split(":")[-2].strip().rsplit("/", 1)[-1] if head.count(":") >= 2 else head
        name = sym.split("@")[0]
        yield member, name


def main():
    nm, archive = sys.argv[1:3]
    errors, members = [], set()
    for member, name in imports(nm, archive):
        members.add(member)
        if name in HIDDEN_ALLOC:
            errors.append(f"{member} calls {name}, which allocates outside the caller's allocator")
        elif name in HEAP and member != ALLOCATOR:
            errors.append(f"{member} calls {name}: allocate through gs_alloc (lib/core/alloc.c) instead")
    if ALLOCATOR not in members:
        errors.append(f"{ALLOCATOR} not found in {archive}: the check reads the wrong archive")
    for e in errors:
        print("FAIL:", e)
    print(f"{len(members)} objects checked, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
