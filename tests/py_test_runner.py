# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The runner of the plain Python test scripts (test_soworld.py,
test_evaluate_measures.py): every ``test_*`` function of the script, or
the ones named on the command line, each reported as ok or FAIL with its
traceback, then a closing line; exit status 1 when any failed."""

import traceback


def run_tests(namespace, argv):
    """Runs the test_* callables of ``namespace`` (a script's globals());
    returns the exit status."""
    tests = {k: v for k, v in namespace.items() if k.startswith("test_") and callable(v)}
    names = argv or list(tests)
    passed = failed = 0
    for name in names:
        try:
            tests[name]()
        except Exception:
            failed += 1
            print(f"FAIL {name}")
            traceback.print_exc()
        else:
            passed += 1
            print(f"ok   {name}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0
