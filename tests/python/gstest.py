"""Shared helpers of the binding's tests."""
import os
import subprocess
import unittest

import gpusched
from gpusched._lib import lib


def needs(*functions):
    """Skips a test class when the library does not export these functions
    (a module that has not landed in this build)."""
    missing = sorted(f for f in functions if f in lib.missing)
    return unittest.skipIf(bool(missing), f"not in this build: {', '.join(missing)}")


def pyhelper(*args, stdin=None):
    """Runs the C cross-check helper (GPUSCHED_PYHELPER) and returns stdout."""
    exe = os.environ.get("GPUSCHED_PYHELPER")
    if not exe:
        raise unittest.SkipTest("GPUSCHED_PYHELPER is not set (run through meson test)")
    out = subprocess.run([exe, *args], input=stdin, capture_output=True, text=True, check=True)
    return out.stdout


def source_root():
    """The repository root (GPUSCHED_SOURCE_ROOT, else relative to this file)."""
    return os.environ.get("GPUSCHED_SOURCE_ROOT") or \
        os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def data_dir():
    """The tests' data directory (GPUSCHED_DATA_DIR, else the repository's
    tests/data). Data in it is required: a test that needs a file there
    fails when it is missing (doc/testing.md)."""
    return os.environ.get("GPUSCHED_DATA_DIR") or os.path.join(source_root(), "tests", "data")


def tiny():
    """The 'tiny' preset: 2 blocks x 2 racks x 4 nodes x 8 GPUs."""
    return gpusched.Topology.preset("tiny")


class TinyClusterCase(unittest.TestCase):
    """A test case with ``self.t`` (the tiny preset) and ``self.c`` (an
    empty cluster on it), both freed after each test."""

    def setUp(self):
        self.t = tiny()
        self.c = gpusched.Cluster(self.t)

    def tearDown(self):
        self.c.close()
        self.t.close()
