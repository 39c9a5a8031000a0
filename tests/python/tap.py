#!/usr/bin/env python3
"""Runs one unittest file and reports each test case as TAP, so that
`meson test` (protocol 'tap') and tools/test-summary count the Python cases
like the C ones. Usage: tap.py tests/python/test_x.py"""
import importlib.util
import os
import sys
import unittest


class TapResult(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.n = 0

    def _line(self, ok, test, extra=""):
        self.n += 1
        print(f"{'ok' if ok else 'not ok'} {self.n} - {test.id()}{extra}", flush=True)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._line(True, test)

    def _fail(self, test, err, kind):
        text = self._exc_info_to_string(err, test)
        self._line(False, test)
        print("\n".join("# " + s for s in f"{kind}:\n{text}".splitlines()), flush=True)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._fail(test, err, "FAIL")

    def addError(self, test, err):
        super().addError(test, err)
        self._fail(test, err, "ERROR")

    def addSubTest(self, test, subtest, err):
        # A failed subtest is its own "not ok" line; passing ones stay quiet.
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._fail(subtest, err, "FAIL" if issubclass(err[0], test.failureException)
                       else "ERROR")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._line(True, test, f" # SKIP {reason}")

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._line(True, test, " # TODO expected failure")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._line(False, test, " # unexpected success")


def main(path):
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    print("TAP version 13", flush=True)
    spec.loader.exec_module(module)
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    result = TapResult()
    suite.run(result)
    # The plan goes last: failed subtests add lines beyond the test count.
    print(f"1..{result.n}", flush=True)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
