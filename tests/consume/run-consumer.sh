#!/bin/sh
# Builds tests/consume/consumer.c the way a project outside libgpusched
# would, and runs it. TAP output, one line per check.
#
#   run-consumer.sh WAY BUILD_ROOT SOURCE_ROOT PREFIX LIBDIR
#
# WAY is pkg-config or cmake: the build tree is installed with DESTDIR into
# BUILD_ROOT/tests/consume/WAY/root, and the consumer is compiled against
# that tree and run with its library. WAY subproject builds the consumer's
# own Meson project with the source tree as subprojects/gpusched. WAY pip
# installs the Python package with pip into a new virtual environment
# (offline) and runs the binding's test suite against it. WAY go runs the
# Go binding's vet, tests and example against the installed tree.
# Environment: MESON, CMAKE, PKG_CONFIG, CC, GO, GPUSCHED_PIP_PYTHON (programs);
# GPUSCHED_VERSION, GPUSCHED_SONAME, GPUSCHED_PYHELPER; GPUSCHED_SANITIZE
# (the build's b_sanitize: the consumer is compiled with the same runtime).
set -eu
way=$1 build=$2 src=$3 prefix=$4 libdir=$5
work=$build/tests/consume/$way
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
fail() { n=$((n + 1)); echo "not ok $n - $*"; failed=1; }
failed=0
check() { # check DESCRIPTION COMMAND...: runs it, its output as TAP comments
    desc=$1
    shift
    if out=$("$@" 2>&1); then
        ok "$desc"
    else
        fail "$desc"
        echo "$out" | sed 's/^/# /'
    fi
}
refused() { # refused DESCRIPTION COMMAND...: passes when the command fails
    desc=$1
    shift
    if "$@" >/dev/null 2>&1; then fail "$desc"; else ok "$desc"; fi
}
skip_all() { echo "1..0 # SKIP $*"; exit 0; }

# meson test points LD_LIBRARY_PATH at the build's library: a consumer
# must find the installed one by its own means.
unset LD_LIBRARY_PATH
rm -rf "$work"
mkdir -p "$work"
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
root=$work/root
tree=$root$prefix

sanflags=""
if [ -n "${GPUSCHED_SANITIZE:-}" ] && [ "$GPUSCHED_SANITIZE" != none ]; then
    sanflags="-fsanitize=$GPUSCHED_SANITIZE"
fi

install_tree() {
    check "meson install --destdir into $root" "$MESON" install -C "$build" --no-rebuild --quiet --destdir "$root"
    check "the installed tree has the library, headers, pkg-config and CMake files" \
        test -f "$root$libdir/pkgconfig/gpusched.pc" -a -f "$root$libdir/cmake/gpusched/gpuschedConfig.cmake" \
        -a -f "$root$libdir/cmake/gpusched/gpuschedConfigVersion.cmake" -a -f "$tree/include/gpusched/gpusched.h"
}

# Runs the consumer with only the installed tree's library to be found.
run_installed() {
    LD_LIBRARY_PATH="$root$libdir" "$@"
}

case $way in
pkg-config)
    [ -n "${PKG_CONFIG:-}" ] || skip_all "pkg-config not found (tools/deps installs it)"
    install_tree
    # PKG_CONFIG_SYSROOT_DIR: the .pc file names the real prefix; the
    # sysroot puts the DESTDIR in front of its -I and -L paths.
    export PKG_CONFIG_PATH="$root$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root"
    version=$("$PKG_CONFIG" --modversion gpusched)
    check "pkg-config --modversion gpusched is $GPUSCHED_VERSION ($version)" test "$version" = "$GPUSCHED_VERSION"
    check "pkg-config --atleast-version $GPUSCHED_VERSION gpusched" "$PKG_CONFIG" --atleast-version "$GPUSCHED_VERSION" gpusched
    # shellcheck disable=SC2046,SC2086
    check "cc consumer.c \$(pkg-config --cflags --libs gpusched)" \
        "$CC" -std=c99 -pedantic -Wall -Wextra -Werror $sanflags -o "$work/consumer" "$src/tests/consume/consumer.c" \
        $("$PKG_CONFIG" --cflags --libs gpusched)
    check "the consumer runs against the installed library" run_installed "$work/consumer"
    check "it loaded the installed library" sh -c "LD_LIBRARY_PATH='$root$libdir' ldd '$work/consumer' | grep -q '$root$libdir/libgpusched.so'"
    ;;
cmake)
    [ -n "${CMAKE:-}" ] || skip_all "cmake not found (tools/deps installs it)"
    install_tree
    # Ninja, not CMake's default Makefiles: tools/deps installs ninja, and a
    # fresh machine has no make (the fresh-root check found it).
    cm() { # cm NAME VERSION: configures the consumer asking for VERSION
        "$CMAKE" -G Ninja -S "$src/tests/consume/cmake" -B "$work/$1" -DCMAKE_PREFIX_PATH="$tree" \
            -DGPUSCHED_WANT="$2" -DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="$sanflags" \
            -DCMAKE_EXE_LINKER_FLAGS="$sanflags" -DCMAKE_BUILD_TYPE=Release
    }
    check "cmake configure: find_package(gpusched 0.2 REQUIRED)" cm build 0.2
    check "cmake --build: target_link_libraries(consumer gpusched::gpusched)" "$CMAKE" --build "$work/build" -j 1
    check "the consumer runs (with CMake's build RPATH to the installed library)" "$work/build/consumer"
    check "it loaded the installed library" sh -c "ldd '$work/build/consumer' | grep -q '$root$libdir/libgpusched.so'"
    check "find_package(gpusched $GPUSCHED_VERSION EXACT)" cm exact "$GPUSCHED_VERSION EXACT"
    check "find_package(gpusched 0.2...0.3) (a range)" cm range "0.2...0.3"
    # The ABI series (doc/abi.md): before 1.0 each minor version is its own.
    refused "find_package(gpusched 0.1) is refused (another ABI series)" cm older 0.1
    refused "find_package(gpusched 0.3) is refused (newer than installed)" cm newer 0.3
    refused "find_package(gpusched 1.0) is refused" cm major 1.0
    ;;
subproject)
    [ -z "$sanflags" ] || skip_all "the subproject build is checked in the plain build only"
    mkdir -p "$work/src/subprojects"
    cp "$src/tests/consume/subproject/meson.build" "$src/tests/consume/consumer.c" "$work/src/"
    ln -s "$src" "$work/src/subprojects/gpusched"
    # -O0 and no tests, bench or docs: the point is that the subproject
    # builds and links, and the whole library is compiled again for it.
    check "meson setup with libgpusched as a subproject (forced fallback)" "$MESON" setup "$work/build" "$work/src" \
        --force-fallback-for=gpusched -Dbuildtype=plain -Dgpusched:tests=false -Dgpusched:bench=false \
        -Dgpusched:docs=disabled
    check "ninja: the consumer and the library it takes from the subproject" ninja -C "$work/build" -j 1
    check "meson test in the consumer project" "$MESON" test -C "$work/build" --print-errorlogs
    ;;
pip)
    [ -z "$sanflags" ] || skip_all "pip builds its own library: checked in the plain build only"
    py=${GPUSCHED_PIP_PYTHON:-/usr/bin/python3}
    "$py" -c "import mesonpy, venv, ensurepip" >/dev/null 2>&1 ||
        skip_all "$py lacks meson-python or venv (tools/deps installs python3-mesonpy and python3-venv)"
    # Nothing of the build tree or the caller's environment may leak in:
    # the package must work from the virtual environment alone.
    unset GPUSCHED_LIBRARY PYTHONPATH PYTHONHOME
    check "python3 -m venv --system-site-packages" "$py" -m venv --system-site-packages "$work/venv"
    vpy=$work/venv/bin/python
    # meson-python 0.12 leaves .mesonpy-native-file.ini in the source tree
    # and, when it finds it unchanged and a build directory is given, runs
    # meson setup --reconfigure, which fails on the new, empty build
    # directory (its fallback to a plain setup catches the wrong
    # exception). The build directory is new each run, so the stale file
    # goes first.
    rm -f "$src/.mesonpy-native-file.ini"
    # Offline: no index, and meson-python from Debian instead of an
    # isolated build environment fetched from PyPI. -j1: a shared machine.
    check "pip install --no-build-isolation --no-index . (meson-python builds the library)" \
        "$vpy" -m pip install --no-build-isolation --no-index --no-cache-dir \
        --config-settings=builddir="$work/build" --config-settings=compile-args=-j1 "$src"
    site=$("$vpy" -c "import sysconfig; print(sysconfig.get_path('platlib'))")
    check "the package holds the library: gpusched/$GPUSCHED_SONAME in $site" test -f "$site/gpusched/$GPUSCHED_SONAME"
    check "pip show gpusched: version $GPUSCHED_VERSION" sh -c "'$vpy' -m pip show gpusched | grep -qx 'Version: $GPUSCHED_VERSION'"
    loaded=$(cd "$work" && "$vpy" -c "import gpusched; print(gpusched.__file__, gpusched.library_path())" 2>&1) || true
    check "import gpusched loads the bundled library ($loaded)" test "$loaded" = "$site/gpusched/__init__.py $site/gpusched/$GPUSCHED_SONAME"
    # The bundled library comes before GPUSCHED_LIBRARY (doc/python.md).
    check "the bundled library wins over GPUSCHED_LIBRARY" sh -c "cd '$work' && GPUSCHED_LIBRARY=/nonexistent '$vpy' -c 'import gpusched'"
    # The binding's suite against the installed package, from outside the
    # source tree (tap.py puts only tests/python on the path).
    for t in "$src"/tests/python/test_*.py; do
        name=$(basename "$t")
        if out=$(cd "$work" && GPUSCHED_SOURCE_ROOT="$src" GPUSCHED_DATA_DIR="$src/tests/data" \
                 GPUSCHED_PYHELPER="${GPUSCHED_PYHELPER:-}" GPUSCHED_SONAME="$GPUSCHED_SONAME" \
                 PYTHONDONTWRITEBYTECODE=1 "$vpy" "$src/tests/python/tap.py" "$t" 2>&1) &&
           ! echo "$out" | grep -q "^not ok"; then
            ok "python suite, installed package: $name ($(echo "$out" | grep -c '^ok') cases)"
        else
            fail "python suite, installed package: $name"
            echo "$out" | grep -v "^ok" | sed 's/^/# /'
        fi
    done
    check "examples/python/quickstart.py with the installed package" sh -c "cd '$work' && '$vpy' '$src/examples/python/quickstart.py'"
    ;;
go)
    [ -z "$sanflags" ] || skip_all "the Go binding is checked in the plain build only (cgo links no sanitizer runtime)"
    [ -n "${GO:-}" ] || skip_all "go not found (tools/deps installs golang-go)"
    [ -n "${PKG_CONFIG:-}" ] || skip_all "pkg-config not found (tools/deps installs it)"
    install_tree
    # cgo finds the installed library through pkg-config; offline: no
    # module proxy, no toolchain download, caches under the build dir
    # (kept between runs, outside this way's work directory).
    export PKG_CONFIG_PATH="$root$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root"
    export LD_LIBRARY_PATH="$root$libdir"
    export GOCACHE="$build/tests/consume/go-cache" GOPATH="$build/tests/consume/go-path"
    export GOPROXY=off GOTOOLCHAIN=local GOFLAGS="-p=1" GOTELEMETRY=off CGO_ENABLED=1
    cd "$src/bindings/go"
    check "gofmt -l finds nothing to reformat" sh -c 'test -z "$("$(dirname "$GO")/gofmt" -l .)"'
    check "go vet ./..." "$GO" vet ./...
    # Every test case of go test -v as a TAP line of its own.
    if out=$("$GO" test -v -count=1 ./... 2>&1); then rc=0; else rc=$?; fi
    cases=$(echo "$out" | grep -E '^ *--- (PASS|FAIL|SKIP): ' || true)
    if [ -z "$cases" ]; then
        fail "go test ./... ran no test"
    fi
    echo "$cases" | awk -v n="$n" '
        NF >= 3 {
            n++
            if ($2 == "PASS:") printf "ok %d - go test %s\n", n, $3
            else if ($2 == "SKIP:") printf "ok %d - go test %s # SKIP\n", n, $3
            else printf "not ok %d - go test %s\n", n, $3
        }' > "$work/cases.tap"
    grep -q "^not ok" "$work/cases.tap" && failed=1
    n=$((n + $(wc -l < "$work/cases.tap")))
    cat "$work/cases.tap"
    if [ "$rc" -ne 0 ]; then
        fail "go test ./... exited $rc"
        echo "$out" | grep -v -E '^(=== RUN|    --- PASS|--- PASS)' | sed 's/^/# /'
    else
        ok "go test ./... passed"
    fi
    check "the Kubernetes Filter/Score example runs and preempts for the big gang" \
        sh -c '"$GO" run ./examples/k8s-filter-score | tee /dev/stderr | grep -q "PostFilter nominates"'
    ;;
*)
    echo "run-consumer.sh: unknown way '$way'" >&2
    exit 2
    ;;
esac
echo "1..$n"
exit $failed
