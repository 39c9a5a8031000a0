#!/usr/bin/env python3
"""Checks the exported symbols of libgpusched.so against the checked-in list.

Fails when a symbol is exported but not listed (or listed but not exported),
when an exported symbol lacks the gpusched_ prefix or a GPUSCHED_ version
node, when the version script is not sorted or disagrees with the list, or
when the SONAME is not the expected one. Fix by editing lib/libgpusched.map
and tests/abi/symbols.txt on purpose (tools/update-abi).
"""
import re
import subprocess
import sys


def dynsyms(lib):
    out = subprocess.run(["readelf", "--dyn-syms", "--wide", lib], check=True,
                         capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        # Num: Value Size Type Bind Vis Ndx Name
        if len(parts) < 8 or parts[6] == "UND" or parts[4] not in ("GLOBAL", "WEAK"):
            continue
        name, _, node = parts[7].partition("@")
        syms[name] = node.lstrip("@")
    return syms


def soname(lib):
    out = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True, text=True).stdout
    m = re.search(r"\(SONAME\)\s+Library soname: \[(.*)\]", out)
    return m.group(1) if m else None


def map_symbols(path):
    text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    nodes = {}
    for node, body in re.findall(r"(GPUSCHED_[0-9.]+)\s*\{(.*?)\}", text, flags=re.S):
        glob = body.split("local:")[0].replace("global:", "")
        nodes[node] = [s.strip() for s in glob.split(";") if s.strip()]
    return nodes


def main():
    lib, listfile, mapfile, want_soname = sys.argv[1:5]
    errors = []
    exported = dynsyms(lib)
    listed = [l.strip() for l in open(listfile) if l.strip() and not l.startswith("#")]
    for name, node in sorted(exported.items()):
        if name.startswith("GPUSCHED_") and node == "":
            continue  # the version node's own definition
        if not name.startswith("gpusched_"):
            errors.append(f"exported symbol without the gpusched_ prefix: {name}")
        if not node.startswith("GPUSCHED_"):
            errors.append(f"exported symbol without a GPUSCHED_ version node: {name}")
    names = {n for n in exported if not (n.startswith("GPUSCHED_") and exported[n] == "")}
    for n in sorted(names - set(listed)):
        errors.append(f"exported but not in {listfile}: {n}")
    for n in sorted(set(listed) - names):
        errors.append(f"listed in {listfile} but not exported: {n}")
    if listed != sorted(listed):
        errors.append(f"{listfile} is not sorted")
    mapped = map_symbols(mapfile)
    for node, syms in mapped.items():
        if syms != sorted(syms):
            errors.append(f"{mapfile}: node {node} is not sorted")
    allmapped = sorted(s for syms in mapped.values() for s in syms)
    if allmapped != sorted(listed):
        errors.append(f"{mapfile} and {listfile} disagree: "
                      f"{sorted(set(allmapped) ^ set(listed))}")
    got = soname(lib)
    if got != want_soname:
        errors.append(f"SONAME is {got}, expected {want_soname} (an ABI break needs a decision, see doc/abi.md)")
    for e in errors:
        print("FAIL:", e)
    print(f"{len(names)} exported symbols checked, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
