"""The binding's constants against the public headers.

include/gpusched/*.h are parsed here: the bodies of their enums (``NAME =
value,``) and their integer ``#define GPUSCHED_...`` lines, with simple
expressions such as ``(1u << 24)``, ``UINT32_MAX`` or ``(A | B)`` evaluated.
Three tables below say which Python object mirrors which header constant:

- PREFIXES: a header prefix and the IntEnum, IntFlag, error classes or
  module constants that mirror every constant with that prefix, member
  name = header name less the prefix;
- DEFINES: each integer ``#define`` and the module attribute that mirrors it;
- NOT_MIRRORED: the header constants the binding deliberately lacks, each
  with the reason.

The tests check both ways: every header constant is mirrored (or listed as
not mirrored) with the same value, every constant the package defines
(IntEnum and IntFlag members, error codes, upper-case integer module
attributes, public or not) mirrors a header constant with the same value or
is listed in BINDING_ONLY, and ``gpusched.enum_bounds()`` of the loaded
library agrees with each mirrored IntEnum's first and last value. A new
header constant therefore fails this test until the binding mirrors it, or
it is listed here with a reason.
"""
import ast
import enum
import glob
import inspect
import os
import re
import unittest

import gstest
import gpusched
from gpusched import (_errors, _lib, _util, cluster, core, fairq, placement, preemption, scheduler,
                      topology)

#: Every module of the package, scanned for constants.
MODULES = [gpusched, _errors, _lib, _util, core, topology, cluster, placement, preemption, fairq,
           scheduler]

#: Header prefix -> what mirrors every constant that has it. A class: its
#: members, named as the header constants less the prefix. A module: its
#: attributes, named as the header constants less "GPUSCHED_". "errors": the
#: exception classes of ERRORS. The longest matching prefix wins, and all
#: constants of one C enum must share one prefix (one prefix per family).
PREFIXES = {
    "GPUSCHED_NODE_": gpusched.NodeHealth,
    "GPUSCHED_GPU_": gpusched.GpuState,
    "GPUSCHED_SPLIT_": gpusched.Split,
    "GPUSCHED_POLICY_": gpusched.PlacePolicy,
    "GPUSCHED_REASON_": gpusched.PlaceReason,
    "GPUSCHED_FAIRQ_PARAM_": gpusched.Param,
    "GPUSCHED_FAIRQ_POLICY_": gpusched.Policy,
    "GPUSCHED_FAIRQ_TENANT_": gpusched.TenantValue,
    "GPUSCHED_PREEMPT_": gpusched.PreemptPolicy,
    "GPUSCHED_SCHED_PARAM_": gpusched.SchedParam,
    "GPUSCHED_SCHED_ORDER_": gpusched.SchedOrder,
    "GPUSCHED_SCHED_WAIT_": gpusched.WaitReason,
    "GPUSCHED_SCHED_JOB_": gpusched.JobStatus,
    "GPUSCHED_CPU_": gpusched.CpuFeature,
    "GPUSCHED_SIMD_": gpusched.Simd,
    "GPUSCHED_ENUM_": core,
    "GPUSCHED_E": "errors",
}

#: The status codes and the exception class of each.
ERRORS = {
    "GPUSCHED_EINVAL": gpusched.InvalidArgument,
    "GPUSCHED_ERANGE": gpusched.OutOfRange,
    "GPUSCHED_E2BIG": gpusched.UnknownFields,
    "GPUSCHED_ENOTSUP": gpusched.NotSupported,
    "GPUSCHED_ENOMEM": gpusched.OutOfMemory,
    "GPUSCHED_ELIMIT": gpusched.LimitExceeded,
    "GPUSCHED_ENOENT": gpusched.NotFound,
    "GPUSCHED_EEXIST": gpusched.AlreadyExists,
    "GPUSCHED_EBUSY": gpusched.Busy,
    "GPUSCHED_ESTATE": gpusched.WrongState,
    "GPUSCHED_EEMPTY": gpusched.Empty,
    "GPUSCHED_ENOSPC": gpusched.DoesNotFit,
    "GPUSCHED_EPARSE": gpusched.ParseError,
    "GPUSCHED_ECORRUPT": gpusched.CorruptData,
    "GPUSCHED_EVERSION": gpusched.UnsupportedVersion,
    "GPUSCHED_EIO": gpusched.IOFailure,
}

#: Integer #defines -> (module, attribute).
DEFINES = {
    "GPUSCHED_JOB_FLAG_PREEMPTIBLE": (cluster, "JOB_FLAG_PREEMPTIBLE"),
    "GPUSCHED_JOB_FLAG_MOVABLE": (cluster, "JOB_FLAG_MOVABLE"),
    "GPUSCHED_JOB_FLAG_ALL": (cluster, "JOB_FLAG_ALL"),
    "GPUSCHED_PLACE_FLAG_COMMIT": (placement, "PLACE_FLAG_COMMIT"),
    "GPUSCHED_MAX_SLICES": (placement, "MAX_SLICES"),
    "GPUSCHED_MAX_LEVELS": (topology, "MAX_LEVELS"),
    "GPUSCHED_MAX_NODE_GPUS": (topology, "MAX_NODE_GPUS"),
    "GPUSCHED_MAX_LABELS": (topology, "MAX_LABELS"),
    "GPUSCHED_MAX_CLASSES": (topology, "MAX_CLASSES"),
    "GPUSCHED_MAX_NAME": (topology, "MAX_NAME"),
    "GPUSCHED_MAX_RESOURCES": (topology, "MAX_RESOURCES"),
    "GPUSCHED_NONE": (topology, "NONE"),
    "GPUSCHED_MAX_TEXT_NODES": (topology, "MAX_TEXT_NODES"),
    "GPUSCHED_MAX_TEXT_GPUS": (topology, "MAX_TEXT_GPUS"),
    "GPUSCHED_MAX_TASK_TYPES": (fairq, "MAX_TASK_TYPES"),
    "GPUSCHED_MAX_TENANTS": (fairq, "MAX_TENANTS"),
    "GPUSCHED_FAIRQ_ALL_TYPES": (fairq, "ALL_TYPES"),
    "GPUSCHED_PREEMPT_EXACT_MAX": (preemption, "EXACT_MAX"),
    "GPUSCHED_SCHED_ROOT": (scheduler, "ROOT"),
    "GPUSCHED_SCHED_UNLIMITED": (scheduler, "UNLIMITED"),
    "GPUSCHED_SCHED_MAX_QUEUES": (scheduler, "MAX_QUEUES"),
    "GPUSCHED_SCHED_MAX_DEPTH": (scheduler, "MAX_DEPTH"),
    "GPUSCHED_SCHED_QUOTA_MAX": (scheduler, "QUOTA_MAX"),
    "GPUSCHED_SCHED_RES_GPUS": (scheduler, "RES_GPUS"),
    "GPUSCHED_SCHED_PRIORITY_MAX": (scheduler, "PRIORITY_MAX"),
    "GPUSCHED_SCHED_NAME_MAX": (scheduler, "NAME_MAX"),
}

#: Older names the binding keeps as aliases -> the header constant.
ALIASES = {
    (topology, "NAME_MAX"): "GPUSCHED_MAX_NAME",
    (fairq, "MAX_TYPES"): "GPUSCHED_MAX_TASK_TYPES",
}

#: Header constants the binding does not mirror, and why.
NOT_MIRRORED = {
    "GPUSCHED_OK": "success raises nothing",
    "GPUSCHED_MAX_PRUNE": "a bound inside the preemption search; no argument takes it",
}

#: Upper-case integer module attributes of the binding that mirror no header
#: constant: ctypes ranges and buffer sizes of its own.
BINDING_ONLY = {
    (_util, "U8_MAX"), (_util, "U32_MAX"), (_util, "U64_MAX"), (_util, "I32_MIN"),
    (_util, "I32_MAX"), (_util, "I64_MIN"), (_util, "I64_MAX"),
    (topology, "_ERRBUF"), (topology, "_PATHBUF"), (cluster, "_ERRBUF"), (fairq, "_ERRBUF"),
}

#: Each GPUSCHED_ENUM_* value and the IntEnum whose range enum_bounds() gives.
ENUM_BOUNDS = {
    "GPUSCHED_ENUM_SIMD": gpusched.Simd,
    "GPUSCHED_ENUM_NODE_HEALTH": gpusched.NodeHealth,
    "GPUSCHED_ENUM_GPU_STATE": gpusched.GpuState,
    "GPUSCHED_ENUM_SPLIT": gpusched.Split,
    "GPUSCHED_ENUM_REASON": gpusched.PlaceReason,
    "GPUSCHED_ENUM_FAIRQ_PARAM": gpusched.Param,
    "GPUSCHED_ENUM_FAIRQ_POLICY": gpusched.Policy,
    "GPUSCHED_ENUM_FAIRQ_TENANT": gpusched.TenantValue,
    "GPUSCHED_ENUM_PREEMPT_POLICY": gpusched.PreemptPolicy,
}

# ---- reading the headers ------------------------------------------------------

#: Names a header may use in a constant expression (stdint.h).
_STDINT = {"UINT8_MAX": 0xff, "UINT16_MAX": 0xffff, "UINT32_MAX": 0xffffffff,
           "UINT64_MAX": 0xffffffffffffffff, "INT32_MAX": 0x7fffffff,
           "INT64_MAX": 0x7fffffffffffffff, "INT32_MIN": -0x80000000,
           "INT64_MIN": -0x8000000000000000}

_BINOPS = {ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
           ast.BitOr: lambda a, b: a | b, ast.BitAnd: lambda a, b: a & b,
           ast.BitXor: lambda a, b: a ^ b, ast.Add: lambda a, b: a + b,
           ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b}
_UNARY = {ast.USub: lambda a: -a, ast.UAdd: lambda a: a}
# Bodies that are integer expressions: numbers, names, parentheses and the
# operators above. Anything else (`{ sizeof(...) }`, `__attribute__(...)`)
# is not a constant the binding could mirror.
_INTEGER_LIKE = re.compile(r"^[\w\s()<>|&^+\-*]+$")


def evaluate(expr, known):
    """The value of a C integer constant expression: decimal, hex and octal
    literals with u/l suffixes, names in `known` or stdint.h's limits, ( ),
    unary - and +, and the binary operators << >> | & ^ + - *. Raises
    ValueError for anything else."""
    py = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", expr.strip())
    py = re.sub(r"\b0([0-7]+)\b", r"0o\1", py)

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            if node.id in known:
                return known[node.id]
            if node.id in _STDINT:
                return _STDINT[node.id]
            raise ValueError(f"unknown name {node.id} in {expr!r}")
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](ev(node.operand))
        raise ValueError(f"cannot evaluate {expr!r}")

    try:
        tree = ast.parse(py, mode="eval")
    except SyntaxError:
        raise ValueError(f"cannot parse {expr!r}") from None
    return ev(tree)


def strip_comments(text):
    """C text without comments (each replaced by a space) and with line
    continuations joined."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return text.replace("\\\n", " ")


class Headers:
    """The constants of include/gpusched/*.h.

    Attributes:
        enums: {C enum tag (None if anonymous): [(name, value), ...]}.
        defines: {name: value} of the integer #defines.
        values: every constant, enum or #define: {name: value}.
        where: {name: header file name}.
        enum_comments: {GPUSCHED_ENUM_* name: the C enum tag its doc comment
            names}, where it names one.
    """

    def __init__(self, paths):
        self.enums, self.defines, self.values, self.where = {}, {}, {}, {}
        self.enum_comments = {}
        for path in paths:
            with open(path) as f:
                raw = f.read()
            base = os.path.basename(path)
            for m in re.finditer(r"\b(GPUSCHED_ENUM_\w+)\s*=[^,]*,\s*/\*\*<\s*#?(gpusched_\w+)",
                                 raw):
                self.enum_comments[m.group(1)] = m.group(2)
            text = strip_comments(raw)
            self._enums(text, base)
            self._defines(text, base)

    def _add(self, name, value, base):
        if name in self.values:
            raise AssertionError(f"{name} is defined twice ({self.where[name]}, {base})")
        self.values[name] = value
        self.where[name] = base

    def _enums(self, text, base):
        for m in re.finditer(r"\benum\s+(\w+)?\s*\{([^}]*)\}", text):
            tag, members, nxt = m.group(1), [], 0
            for item in m.group(2).split(","):
                item = item.strip()
                if not item:
                    continue
                name, eq, expr = item.partition("=")
                name = name.strip()
                value = evaluate(expr, self.values) if eq else nxt
                members.append((name, value))
                self._add(name, value, base)
                nxt = value + 1
            self.enums[tag] = members

    def _defines(self, text, base):
        for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(GPUSCHED_\w+)(\(?)(.*)$", text, re.M):
            name, function_like, body = m.group(1), m.group(2), m.group(3).strip()
            if function_like or not body:
                continue  # GPUSCHED_VERSION_ENCODE(...), include guards, empty GPUSCHED_API
            if not _INTEGER_LIKE.match(body) or re.search(r"\b(sizeof|__\w+)\b", body):
                continue  # GPUSCHED_API's attribute, the ..._INIT initializers
            value = evaluate(body, self.values)
            self.defines[name] = value
            self._add(name, value, base)

    def enum_of(self, name):
        """The tag of the C enum that holds constant `name`."""
        for tag, members in self.enums.items():
            if any(n == name for n, _ in members):
                return tag
        raise KeyError(name)


def prefix_of(name):
    """The longest PREFIXES key that `name` starts with, or None."""
    best = None
    for p in PREFIXES:
        if name.startswith(p) and (best is None or len(p) > len(best)):
            best = p
    return best


def mirrored_classes():
    """The IntEnum and IntFlag classes of PREFIXES."""
    return [t for t in PREFIXES.values() if inspect.isclass(t)]


def module_constants(mod):
    """Upper-case integer attributes of a module (underscore-prefixed ones
    too), without bools and enum members: {name: value}."""
    out = {}
    for name, value in vars(mod).items():
        if not re.fullmatch(r"_?[A-Z][A-Z0-9_]*", name):
            continue
        if isinstance(value, (bool, enum.Enum)) or not isinstance(value, int):
            continue
        out[name] = value
    return out


def assigned_names(mod):
    """The names a module's own top-level statements assign (not imports)."""
    with open(mod.__file__) as f:
        tree = ast.parse(f.read())
    names = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    names.add(n.id)
    return names


def header_paths():
    return sorted(glob.glob(os.path.join(gstest.source_root(), "include", "gpusched", "*.h")))


_HEADERS = None


def headers():
    global _HEADERS
    if _HEADERS is None:
        paths = header_paths()
        if not paths:
            raise AssertionError(f"no headers under {gstest.source_root()}/include/gpusched")
        _HEADERS = Headers(paths)
    return _HEADERS


# ---- the tests ----------------------------------------------------------------


class TestParser(unittest.TestCase):
    """The header reader itself, on known text."""

    def test_expressions(self):
        known = {"GPUSCHED_A": 1, "GPUSCHED_B": 2}
        for expr, want in [("64", 64), ("64u", 64), ("(1u << 24)", 1 << 24), ("0x1fULL", 31),
                           ("-43", -43), ("UINT32_MAX", 0xffffffff),
                           ("UINT64_MAX", 0xffffffffffffffff), ("010", 8),
                           ("(GPUSCHED_A | GPUSCHED_B)", 3), ("16777216u", 16777216)]:
            self.assertEqual(evaluate(expr, known), want, expr)
        for bad in ["sizeof(int)", "GPUSCHED_C", "1 / 2", "\"x\"", "{ 0 }"]:
            with self.assertRaises(ValueError, msg=bad):
                evaluate(bad, known)

    def test_enums_and_defines(self):
        import tempfile
        text = ("/** doc */\n#ifndef GPUSCHED_X_H\n#define GPUSCHED_X_H\n"
                "#define GPUSCHED_API __attribute__((visibility(\"default\")))\n"
                "typedef enum gpusched_x {\n    GPUSCHED_X_A = 1, /**< a, b = 3 */\n"
                "    GPUSCHED_X_B = 1u << 3,\n    GPUSCHED_X_C,\n} gpusched_x;\n"
                "// a comment: #define GPUSCHED_NOT 1\n"
                "#define GPUSCHED_X_LIMIT \\\n    (GPUSCHED_X_B | 1u)\n"
                "#define GPUSCHED_X_INIT { sizeof(gpusched_x), 0 }\n"
                "#define GPUSCHED_X_ENCODE(a) ((a) << 1)\n#endif\n")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.h")
            with open(path, "w") as f:
                f.write(text)
            h = Headers([path])
        self.assertEqual(h.enums, {"gpusched_x": [("GPUSCHED_X_A", 1), ("GPUSCHED_X_B", 8),
                                                  ("GPUSCHED_X_C", 9)]})
        self.assertEqual(h.defines, {"GPUSCHED_X_LIMIT": 9})

    def test_the_headers_parse_and_hold_what_this_test_expects(self):
        h = headers()
        self.assertIn("gpusched_status", h.enums)
        self.assertIn("gpusched_enum", h.enums)
        self.assertEqual(h.values["GPUSCHED_NONE"], 0xffffffff)
        self.assertGreaterEqual(len(h.defines), 10)


class TestHeaderToBinding(unittest.TestCase):
    """Every header constant is mirrored, with its value."""

    def test_tables_name_only_header_constants(self):
        h = headers()
        for table in (DEFINES, NOT_MIRRORED, ERRORS, ENUM_BOUNDS):
            for name in table:
                self.assertIn(name, h.values, f"{name} is in a table of this test, not in a header")
        for name in ALIASES.values():
            self.assertIn(name, h.values)

    def test_every_enum_has_one_prefix(self):
        h = headers()
        for tag, members in h.enums.items():
            prefixes = {prefix_of(n) for n, _ in members if n not in NOT_MIRRORED}
            self.assertEqual(len(prefixes), 1, f"enum {tag}: members have prefixes {prefixes}")
            self.assertNotIn(None, prefixes, f"enum {tag} ({members[0][0]}, ...) has a prefix "
                             "the binding does not map: add it to PREFIXES")

    def test_every_enum_constant_is_mirrored(self):
        h = headers()
        for tag, members in h.enums.items():
            for name, value in members:
                if name in NOT_MIRRORED:
                    continue
                with self.subTest(name=name):
                    target = PREFIXES[prefix_of(name)]
                    rest = name[len(prefix_of(name)):]
                    if target == "errors":
                        self.assertTrue(name in ERRORS, f"{name} has no exception class")
                        self.assertEqual(ERRORS[name].code, value)
                        self.assertIs(_errors.error_class(value), ERRORS[name])
                    elif inspect.ismodule(target):
                        attr = name[len("GPUSCHED_"):]
                        self.assertTrue(hasattr(target, attr),
                                        f"{target.__name__}.{attr} missing ({name})")
                        self.assertEqual(getattr(target, attr), value, name)
                    else:
                        self.assertTrue(rest in target.__members__,
                                        f"{target.__name__}.{rest} missing ({name} = {value})")
                        self.assertEqual(int(target[rest]), value, name)

    def test_every_define_is_mirrored(self):
        h = headers()
        for name, value in h.defines.items():
            if name in NOT_MIRRORED:
                continue
            with self.subTest(name=name):
                self.assertTrue(name in DEFINES, f"{name} = {value} ({h.where[name]}) is neither "
                                "mirrored (DEFINES) nor in NOT_MIRRORED")
                mod, attr = DEFINES[name]
                self.assertTrue(hasattr(mod, attr), f"{mod.__name__}.{attr} missing ({name})")
                self.assertEqual(getattr(mod, attr), value, name)

    def test_aliases_keep_their_values(self):
        h = headers()
        for (mod, attr), name in ALIASES.items():
            self.assertEqual(getattr(mod, attr), h.values[name], f"{mod.__name__}.{attr}")

    def test_every_enumeration_has_its_bounds_and_its_intenum(self):
        h = headers()
        enum_kinds = [n for n, _ in h.enums["gpusched_enum"]]
        self.assertEqual(sorted(enum_kinds), sorted(ENUM_BOUNDS))
        for name, cls in ENUM_BOUNDS.items():
            tag = h.enum_comments.get(name)
            if tag is not None:  # the doc comment names the C enum: the same family
                member = h.enums[tag][0][0]
                self.assertIs(PREFIXES[prefix_of(member)], cls, f"{name} documents {tag}")


class TestBindingToHeader(unittest.TestCase):
    """Every constant the binding defines mirrors a header constant."""

    def test_every_intenum_is_mapped(self):
        mapped = set(mirrored_classes())
        for mod in MODULES:
            for name, obj in vars(mod).items():
                if inspect.isclass(obj) and issubclass(obj, (enum.IntEnum, enum.IntFlag)) \
                        and obj.__module__.startswith("gpusched"):
                    self.assertIn(obj, mapped, f"{mod.__name__}.{name} is not in PREFIXES")

    def test_every_enum_member_is_in_the_header(self):
        h = headers()
        for prefix, target in PREFIXES.items():
            if not inspect.isclass(target):
                continue
            for member in target:
                name = prefix + member.name
                with self.subTest(name=name):
                    self.assertIn(name, h.values, f"{target.__name__}.{member.name} mirrors "
                                  f"nothing: no {name} in the headers")
                    self.assertEqual(int(member), h.values[name])
                    self.assertEqual(prefix_of(name), prefix)
            # Aliases (two names, one value) would hide a missing member.
            self.assertEqual(len(target.__members__), len(list(target)), target.__name__)

    def test_every_error_class_is_in_the_header(self):
        h = headers()
        classes = {cls for cls in vars(_errors).values()
                   if inspect.isclass(cls) and issubclass(cls, gpusched.Error)
                   and cls.code is not None}
        self.assertEqual(classes, set(ERRORS.values()))
        for name, cls in ERRORS.items():
            self.assertEqual(cls.code, h.values[name], name)
            self.assertTrue(cls.__doc__.startswith(name + ":"), f"{cls.__name__}'s docstring")
            self.assertEqual(gpusched.err_name(cls.code), name)  # the loaded library agrees
        self.assertEqual(set(_errors._BY_CODE), {cls.code for cls in classes})

    def test_every_module_constant_is_in_the_header(self):
        h = headers()
        known = {(mod, attr): name for name, (mod, attr) in DEFINES.items()}
        known.update(ALIASES)
        for name in h.values:
            if prefix_of(name) is not None and inspect.ismodule(PREFIXES[prefix_of(name)]):
                known[(PREFIXES[prefix_of(name)], name[len("GPUSCHED_"):])] = name
        owners = {}  # name -> the modules that assign it
        for mod in MODULES:
            for attr in assigned_names(mod):
                owners.setdefault(attr, []).append(mod)
        checked = 0
        for mod in MODULES:
            own = assigned_names(mod)
            for attr, value in module_constants(mod).items():
                with self.subTest(constant=f"{mod.__name__}.{attr}"):
                    if attr not in own:  # imported: the same as where it is assigned
                        self.assertIn(attr, owners, f"{mod.__name__}.{attr} comes from outside "
                                      "the package")
                        self.assertTrue(any(getattr(m, attr) == value for m in owners[attr]))
                        continue
                    if (mod, attr) in BINDING_ONLY:
                        continue
                    self.assertTrue((mod, attr) in known, f"{mod.__name__}.{attr} = {value} "
                                    "mirrors no header constant: map it in DEFINES or list it "
                                    "in BINDING_ONLY")
                    self.assertEqual(value, h.values[known[(mod, attr)]])
                    checked += 1
        self.assertGreaterEqual(checked, len(DEFINES))

    def test_simd_paths_are_the_librarys_names(self):
        self.assertEqual(core.SIMD_PATHS, tuple(s.name.lower() for s in gpusched.Simd))
        for s in gpusched.Simd:
            self.assertEqual(gpusched.simd_name(s), s.name.lower())


class TestEnumBounds(unittest.TestCase):
    """enum_bounds() of the loaded library against each mirrored IntEnum."""

    def test_bounds_match_each_intenum(self):
        h = headers()
        for name, cls in ENUM_BOUNDS.items():
            with self.subTest(name=name):
                which = h.values[name]
                self.assertEqual(getattr(core, name[len("GPUSCHED_"):]), which)
                values = sorted(int(m) for m in cls)
                self.assertEqual(gpusched.enum_bounds(which), (values[0], values[-1]),
                                 cls.__name__)
                # A range: no value missing in between.
                self.assertEqual(values, list(range(values[0], values[-1] + 1)), cls.__name__)

    def test_unknown_enumeration_raises(self):
        h = headers()
        past = max(v for _, v in h.enums["gpusched_enum"]) + 1
        with self.assertRaises(gpusched.Error):
            gpusched.enum_bounds(past)


if __name__ == "__main__":
    unittest.main()
