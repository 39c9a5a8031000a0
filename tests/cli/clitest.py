"""Shared pieces of the gpusched command-line tool's tests (tests/cli).

GPUSCHED_CLI names the tool (meson passes the one just built). Each test
works in a temporary directory of its own."""
import json
import os
import subprocess
import tempfile
import unittest

CLI = os.environ.get("GPUSCHED_CLI", "gpusched")

# Two blocks of two racks, mixed classes and labels: small enough to reason
# about, varied enough for --class, --label and uneven domains.
MIXED = """\
# a test cluster
levels block rack
classes h100 a100
labels ib nvme
node b0/r0 n0 gpus=8 class=h100 labels=ib,nvme
node b0/r0 n1 gpus=8 class=h100 labels=ib
node b0/r0 n2 gpus=8 class=h100 labels=ib
node b0/r1 n3 gpus=8 class=h100 labels=ib
node b0/r1 n4 gpus=8 class=h100
node b1/r0 n5 gpus=4 class=a100 labels=nvme
node b1/r0 n6 gpus=4 class=a100
"""


class CliTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="gpusched-cli-")
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, text):
        p = self.path(name)
        mode = "wb" if isinstance(text, bytes) else "w"
        with open(p, mode) as f:
            f.write(text)
        return p

    def run_cli(self, *args, stdin=None, binary=False):
        """Runs the tool; returns (exit status, stdout, stderr)."""
        p = subprocess.run([CLI, *map(str, args)], input=stdin, capture_output=True,
                           text=not binary, cwd=self.dir, timeout=120)
        return p.returncode, p.stdout, p.stderr

    def ok(self, *args, **kw):
        rc, out, err = self.run_cli(*args, **kw)
        self.assertEqual(rc, 0, f"gpusched {' '.join(map(str, args))} exited {rc}: {err}")
        return out

    def json(self, *args, rc=0):
        code, out, err = self.run_cli(*args, "--json")
        self.assertEqual(code, rc, f"gpusched {' '.join(map(str, args))} --json exited {code}: {err}")
        return json.loads(out)

    def fails(self, *args, rc=1, stderr_has=None):
        code, out, err = self.run_cli(*args)
        self.assertEqual(code, rc, f"gpusched {' '.join(map(str, args))}: expected exit {rc}, "
                                   f"got {code}; stdout {out!r} stderr {err!r}")
        if stderr_has is not None:
            self.assertIn(stderr_has, err)
        return err

    def mixed(self):
        return self.write("mixed.txt", MIXED)

    def scenario(self):
        """A snapshot of preset:tiny with three jobs: 16 GPUs in pods of 8 in
        one rack (job 1, preemptible, priority 1), 12 GPUs (job 2, movable)
        and 4 GPUs in pods of 2 (job 3). Returns its path."""
        self.ok("place", "preset:tiny", "--gpus", 16, "--pod-gpus", 8, "--required", "rack",
                "--job", 1, "--priority", 1, "--preemptible", "-o", "s1.snap")
        self.ok("place", "s1.snap", "--gpus", 12, "--job", 2, "--movable", "-o", "s2.snap")
        self.ok("place", "s2.snap", "--gpus", 4, "--pod-gpus", 2, "--job", 3, "-o", "s3.snap")
        return self.path("s3.snap")
