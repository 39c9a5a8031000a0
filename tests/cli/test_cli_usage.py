"""gpusched --help, version and command-line errors"""
import unittest

from clitest import CliTest


class Usage(CliTest):
    def test_help_documents_every_command(self):
        out = self.ok("--help")
        for cmd in ("topo show", "topo check", "topo convert", "place", "snapshot info",
                    "snapshot check", "frag", "draw", "--json", "Exit status"):
            self.assertIn(cmd, out)

    def test_subcommand_help(self):
        for args in (["topo", "--help"], ["place", "--help"], ["snapshot", "--help"],
                     ["frag", "--help"], ["draw", "--help"]):
            with self.subTest(args=args):
                out = self.ok(*args)
                self.assertTrue(out.startswith("usage: gpusched"))
        out = self.ok("place", "--help")
        for opt in ("--gpus", "--pod-gpus", "--required", "--slices", "--preempt", "--defrag", "-o"):
            self.assertIn(opt, out)

    def test_version(self):
        self.assertIn("libgpusched", self.ok("version"))
        j = self.json("version")
        self.assertEqual(j["library"], j["headers"])

    def test_errors(self):
        self.fails(rc=2)
        self.fails("frobnicate", rc=2, stderr_has="unknown command")
        self.fails("topo", "show", rc=2)
        self.fails("topo", "list", "preset:tiny", rc=2, stderr_has="show, check or convert")
        self.fails("topo", "show", "preset:tiny", "--bogus", rc=2)


if __name__ == "__main__":
    unittest.main()
