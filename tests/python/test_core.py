"""Loading, version check, error texts, exceptions, CPU features."""
import enum
import os
import subprocess
import sys
import unittest

import gstest  # noqa: F401
import gpusched
from gpusched import _errors, _lib
from gpusched._lib import lib

CODES = {
    -1: ("GPUSCHED_EINVAL", gpusched.InvalidArgument),
    -2: ("GPUSCHED_ERANGE", gpusched.OutOfRange),
    -3: ("GPUSCHED_E2BIG", gpusched.UnknownFields),
    -4: ("GPUSCHED_ENOTSUP", gpusched.NotSupported),
    -10: ("GPUSCHED_ENOMEM", gpusched.OutOfMemory),
    -11: ("GPUSCHED_ELIMIT", gpusched.LimitExceeded),
    -20: ("GPUSCHED_ENOENT", gpusched.NotFound),
    -21: ("GPUSCHED_EEXIST", gpusched.AlreadyExists),
    -22: ("GPUSCHED_EBUSY", gpusched.Busy),
    -23: ("GPUSCHED_ESTATE", gpusched.WrongState),
    -24: ("GPUSCHED_EEMPTY", gpusched.Empty),
    -30: ("GPUSCHED_ENOSPC", gpusched.DoesNotFit),
    -40: ("GPUSCHED_EPARSE", gpusched.ParseError),
    -41: ("GPUSCHED_ECORRUPT", gpusched.CorruptData),
    -42: ("GPUSCHED_EVERSION", gpusched.UnsupportedVersion),
    -43: ("GPUSCHED_EIO", gpusched.IOFailure),
}


def run_python(code, **env):
    e = dict(os.environ)
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e)


class TestVersion(unittest.TestCase):
    def test_version_matches_binding(self):
        v = gpusched.version()
        self.assertEqual(v[0], gpusched.BINDING_VERSION[0])
        self.assertGreaterEqual(v[1], gpusched.BINDING_VERSION[1])
        self.assertEqual(gpusched.version_string(), "%d.%d.%d" % v)

    def test_check_version_accepts_newer_minor(self):
        major, minor, _ = _lib.BINDING_VERSION
        _lib.check_version((major, minor, 0))
        _lib.check_version((major, minor + 3, 9))

    def test_check_version_rejects_other_major_and_older_minor(self):
        major, minor, _ = _lib.BINDING_VERSION
        with self.assertRaisesRegex(gpusched.LibraryError, "same major version"):
            _lib.check_version((major + 1, minor, 0))
        if minor > 0:
            with self.assertRaises(gpusched.LibraryError):
                _lib.check_version((major, minor - 1, 0))
        else:
            with self.assertRaisesRegex(gpusched.LibraryError, r"is libgpusched 0\.0\.0"):
                old = _lib.BINDING_VERSION
                _lib.BINDING_VERSION = (major, 1, 0)
                try:
                    _lib.check_version((major, 0, 0), "libgpusched")
                finally:
                    _lib.BINDING_VERSION = old

    def test_soname_and_version_are_the_builds(self):
        """The binding's copies of the build's version facts agree with it:
        meson passes the SONAME it gave the library."""
        want = os.environ.get("GPUSCHED_SONAME")
        if want is None:
            self.skipTest("GPUSCHED_SONAME not set (run through meson test)")
        self.assertEqual(_lib.SONAME, want)
        self.assertEqual(gpusched.version(), _lib.BINDING_VERSION)

    def test_decode_version(self):
        self.assertEqual(_lib.decode_version((1 << 16) | (2 << 8) | 3), (1, 2, 3))

    def test_library_path_is_the_one_asked_for(self):
        want = os.environ.get("GPUSCHED_LIBRARY")
        if bundled():
            self.assertEqual(gpusched.library_path(), bundled())
        elif want:
            self.assertEqual(gpusched.library_path(), want)


def bundled():
    """The library inside the package (pip install .), or None."""
    p = os.path.join(os.path.dirname(gpusched.__file__), _lib.SONAME)
    return p if os.path.exists(p) else None


def package_copy(d, with_library):
    """A copy of the package under d, with or without the library inside."""
    import shutil
    pkg = os.path.join(d, "gpusched")
    shutil.copytree(os.path.dirname(gpusched.__file__), pkg,
                    ignore=shutil.ignore_patterns("__pycache__", "*.so*"))
    if with_library:
        shutil.copy(gpusched.library_path(), os.path.join(pkg, _lib.SONAME))
    return pkg


class TestLoading(unittest.TestCase):
    def setUp(self):
        # The checks of GPUSCHED_LIBRARY run on a copy of the package
        # without a bundled library: a bundled one would come first.
        import tempfile
        self._tmp = tempfile.TemporaryDirectory()
        package_copy(self._tmp.name, with_library=False)

    def tearDown(self):
        self._tmp.cleanup()

    def run_copy(self, code, **env):
        return run_python(code, PYTHONPATH=self._tmp.name, **env)

    def test_missing_library_fails_clearly(self):
        r = self.run_copy("import gpusched", GPUSCHED_LIBRARY="/nonexistent/libgpusched.so.0.2")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("LibraryError", r.stderr)
        self.assertIn("cannot load libgpusched", r.stderr)
        self.assertIn("/nonexistent/libgpusched.so.0.2", r.stderr)

    def test_not_libgpusched_fails_clearly(self):
        import ctypes.util
        libc = ctypes.util.find_library("c")
        if not libc:
            self.skipTest("no libc to load")
        r = self.run_copy("import gpusched", GPUSCHED_LIBRARY=libc)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("is not libgpusched", r.stderr)

    def test_library_is_found_next_to_the_package(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            pkg = package_copy(d, with_library=True)
            env = {k: v for k, v in os.environ.items() if k != "GPUSCHED_LIBRARY"}
            env["PYTHONPATH"] = d
            r = subprocess.run([sys.executable, "-c",
                                "import gpusched; print(gpusched.library_path())"],
                               capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.strip(), os.path.join(pkg, _lib.SONAME))

    def test_bundled_library_comes_before_gpusched_library(self):
        """pip install . bundles the library; it wins over the variable."""
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            pkg = package_copy(d, with_library=True)
            r = run_python("import gpusched; print(gpusched.library_path())", PYTHONPATH=d,
                           GPUSCHED_LIBRARY="/nonexistent/libgpusched.so.0.2")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.strip(), os.path.join(pkg, _lib.SONAME))


class TestErrors(unittest.TestCase):
    def test_every_code_has_its_class_name_and_text(self):
        for code, (name, cls) in CODES.items():
            self.assertEqual(gpusched.err_name(code), name)
            self.assertNotEqual(gpusched.strerror(code), "unknown error")
            self.assertIs(_errors.error_class(code), cls)
            self.assertEqual(cls.code, code)
            self.assertTrue(issubclass(cls, gpusched.Error))

    def test_unknown_code(self):
        self.assertEqual(gpusched.err_name(-999), "GPUSCHED_UNKNOWN")
        self.assertEqual(gpusched.strerror(-999), "unknown error")
        self.assertIs(_errors.error_class(-999), gpusched.UnknownError)

    def test_raise_error_carries_code_name_and_message(self):
        with self.assertRaises(gpusched.DoesNotFit) as cm:
            lib.raise_error(-30, b"largest block holds 3 of 4 slices", "gpusched_x")
        e = cm.exception
        self.assertEqual((e.code, e.name, e.message, e.function),
                         (-30, "GPUSCHED_ENOSPC", "largest block holds 3 of 4 slices", "gpusched_x"))
        self.assertEqual(str(e), "GPUSCHED_ENOSPC: largest block holds 3 of 4 slices")

    def test_raise_error_without_message_uses_strerror(self):
        with self.assertRaises(gpusched.NotFound) as cm:
            lib.raise_error(-20)
        self.assertEqual(cm.exception.message, gpusched.strerror(-20))

    def test_check_passes_non_negative(self):
        self.assertEqual(lib.check(0), 0)
        self.assertEqual(lib.check(5), 5)

    def test_bad_argument_types(self):
        with self.assertRaises(TypeError):
            gpusched.strerror("x")
        with self.assertRaises(ValueError):
            gpusched.strerror(2**40)
        with self.assertRaises(ValueError):
            gpusched.simd_name(-1)
        with self.assertRaises(TypeError):
            gpusched.simd_name(1.5)
        with self.assertRaises(TypeError):
            gpusched.simd_name(True)


class TestCpu(unittest.TestCase):
    def test_features_and_paths(self):
        detected, chosen = gpusched.cpu_features()
        self.assertIsInstance(detected, int)
        compiled = gpusched.simd_compiled()
        self.assertIn("scalar", compiled)
        self.assertIn(chosen, compiled)
        self.assertEqual([gpusched.simd_name(i) for i in range(5)],
                         ["scalar", "sse2", "avx2", "avx512", "neon"])
        self.assertEqual(gpusched.simd_name(99), "unknown")

    def test_forced_unknown_path_raises_invalid_argument(self):
        r = run_python("import gpusched\n"
                       "try:\n gpusched.cpu_features()\n"
                       "except gpusched.InvalidArgument as e:\n print(e.name)\n",
                       GPUSCHED_SIMD="bogus")
        self.assertEqual(r.stdout.strip(), "GPUSCHED_EINVAL", r.stderr)

    def test_forced_path_this_cpu_cannot_run_raises_not_supported(self):
        detected, _ = gpusched.cpu_features()
        if "avx512" not in gpusched.simd_compiled() or detected & gpusched.core.CpuFeature.AVX512:
            self.skipTest("needs a build with AVX-512 kernels on a CPU without AVX-512")
        r = run_python("import gpusched\n"
                       "for f in (gpusched.cpu_features, lambda: gpusched.FairQueue(2)):\n"
                       " try:\n  f()\n"
                       " except gpusched.NotSupported as e:\n  print(e.name)\n",
                       GPUSCHED_SIMD="avx512")
        self.assertEqual(r.stdout.split("\n")[:2], ["GPUSCHED_ENOTSUP"] * 2, r.stderr)

    def test_forced_scalar_path(self):
        r = run_python("import gpusched; print(gpusched.cpu_features()[1])", GPUSCHED_SIMD="scalar")
        self.assertEqual(r.stdout.strip(), "scalar", r.stderr)


class TestAllocatorCheck(unittest.TestCase):
    def test_null_allocator_is_valid_and_empty_one_is_not(self):
        import ctypes
        self.assertEqual(lib.allocator_check(None), 0)
        a = _lib.Allocator()
        a.size = ctypes.sizeof(_lib.Allocator)
        self.assertEqual(lib.allocator_check(ctypes.byref(a)), -1)



class TestDocstrings(unittest.TestCase):
    def test_every_public_class_function_and_method_has_a_docstring(self):
        import inspect
        missing = []
        for name in gpusched.__all__:
            obj = getattr(gpusched, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if not (obj.__doc__ or "").strip():
                missing.append(name)
            if not inspect.isclass(obj):
                continue
            for attr, member in vars(obj).items():
                if attr.startswith("_"):
                    continue
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if inspect.isfunction(member) or isinstance(member, property):
                    if not (member.__doc__ or "").strip():
                        missing.append(f"{name}.{attr}")
        self.assertEqual(missing, [], "\n".join(missing))


class TestTyping(unittest.TestCase):
    """PEP 561 marker, annotations on every public callable, and options as
    keyword-only parameters rather than a **kwargs gate."""

    #: Constructors that only raise (the class has factory methods instead).
    RAISING_INIT = {"Topology.__init__", "DecisionLog.__init__"}

    @staticmethod
    def public_callables():
        """(qualified name, function, module) of every public function of the
        package and every public method, property getter and __init__ of its
        public classes."""
        import inspect
        out = []
        for name in gpusched.__all__:
            obj = getattr(gpusched, name)
            if inspect.isfunction(obj):
                out.append((name, obj, sys.modules[obj.__module__]))
            if not inspect.isclass(obj) or not obj.__module__.startswith("gpusched"):
                continue
            if issubclass(obj, (tuple, enum.Enum)):
                continue  # NamedTuples: typed fields (test_named_tuples_have_typed_fields)
            module = sys.modules[obj.__module__]
            for attr, member in vars(obj).items():
                if attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__")):
                    continue
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if isinstance(member, property):
                    member = member.fget
                if inspect.isfunction(member):
                    out.append((f"{name}.{attr}", member, module))
        from gpusched import _util  # the base of every class that owns a handle
        for attr in ("close", "closed", "__enter__", "__exit__"):
            member = vars(_util.Handle)[attr]
            out.append((f"Handle.{attr}", getattr(member, "fget", member), _util))
        return out

    def test_py_typed_marker(self):
        self.assertTrue(os.path.isfile(os.path.join(os.path.dirname(gpusched.__file__),
                                                    "py.typed")))

    def test_every_public_callable_is_annotated(self):
        import inspect
        import typing
        missing = []
        for qualname, fn, module in self.public_callables():
            sig = inspect.signature(fn)
            if sig.return_annotation is inspect.Signature.empty:
                missing.append(f"{qualname} -> ?")
            for i, p in enumerate(sig.parameters.values()):
                if i == 0 and p.name in ("self", "cls"):
                    continue
                if p.annotation is inspect.Parameter.empty:
                    missing.append(f"{qualname}({p.name})")
            # The annotations are valid expressions of the standard typing
            # module, resolvable in the package (Python 3.9 syntax).
            ns = dict(vars(gpusched))
            ns.update(vars(module))
            try:
                typing.get_type_hints(fn, globalns=ns)
            except Exception as e:  # noqa: BLE001 - report which annotation fails
                missing.append(f"{qualname}: {type(e).__name__}: {e}")
        self.assertEqual(missing, [], "\n".join(missing))

    def test_named_tuples_have_typed_fields(self):
        import inspect
        for name in gpusched.__all__:
            obj = getattr(gpusched, name)
            if inspect.isclass(obj) and issubclass(obj, tuple):
                self.assertEqual(list(getattr(obj, "__annotations__", {})), list(obj._fields), name)

    def test_mypy_finds_no_error_when_installed(self):
        """The package type-checks as Python 3.9 (mypy is optional: Debian's
        python3-mypy, for example; the test skips without it)."""
        import shutil
        for py in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
            if py and subprocess.run([py, "-c", "import mypy"], capture_output=True).returncode == 0:
                break
        else:
            self.skipTest("mypy is not installed")
        pkg = os.path.dirname(gpusched.__file__)
        r = subprocess.run([py, "-m", "mypy", "--python-version", "3.9", "--no-incremental",
                            "--cache-dir", os.devnull, pkg], capture_output=True, text=True,
                           cwd=os.path.dirname(pkg))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_options_are_keyword_only_parameters(self):
        import inspect
        gates = []
        for qualname, fn, _ in self.public_callables():
            if qualname in self.RAISING_INIT:
                continue
            for p in inspect.signature(fn).parameters.values():
                if p.kind is inspect.Parameter.VAR_KEYWORD:
                    gates.append(f"{qualname}(**{p.name})")
        self.assertEqual(gates, [])


if __name__ == "__main__":
    unittest.main()
