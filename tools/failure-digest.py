#!/usr/bin/env python3
"""What failed, in a few lines, from CTest's Testing/Temporary/LastTest.log.

CI keeps only the head and the tail of a long run's output, and a failing multi-process test's own
output can run to hundreds of lines, so the assertion that failed may fall in the part left out.
tools/test.sh prints this digest last when CTest fails: for each failed test, the first gtest
failures (file:line, the expression, the message's first lines), the ranks that died and any
sanitizer report's first line.

    tools/failure-digest.py build/Testing/Temporary/LastTest.log [--max-lines 40]
    tools/failure-digest.py --self-test     (CTest's Tools.failureDigest)
"""
import argparse
import re
import sys

MARKERS = re.compile(r": Failure$|^\[  FAILED  \] [^ ]+ \(|killed by signal|ranks overran|"
                     r"ERROR: (AddressSanitizer|LeakSanitizer)|WARNING: ThreadSanitizer|runtime error:|"
                     r"Segmentation fault|Aborted|terminate called")


def tests(log):
    """Yields (name, output lines, passed) for each test in the log."""
    name, out, inside = None, [], False
    for line in log:
        line = line.rstrip("\n")
        m = re.match(r"^\d+/\d+ Test: (.+)$", line)
        if m:
            name, out, inside = m.group(1), [], False
        elif line == "Output:":
            inside = True
        elif line.startswith("<end of output>"):
            inside = False
        elif line in ("Test Passed.", "Test Failed.") and name is not None:
            yield name, out, line == "Test Passed."
            name = None
        elif inside and not line.startswith("-" * 20):
            out.append(line)


def digest(out, per_test):
    """The failure blocks of one test's output, each once (every rank of a multi-process test
    prints its own copy), at most per_test lines."""
    lines, seen = [], set()
    for i, line in enumerate(out):
        if len(lines) >= per_test:
            break
        if MARKERS.search(line):
            # A gtest failure: file:line, the expression, actual, expected, then the message.
            take = 5 if line.endswith(": Failure") else 1
            block = tuple(x if len(x) <= 240 else x[:240] + " ..." for x in out[i:i + take])
            if block not in seen:
                seen.add(block)
                lines.extend("    " + x for x in block)
    return lines[:per_test]


SAMPLE = """\
1/2 Test: Passing.one
Output:
----------------------------------------------------------
[       OK ] A.b (1 ms)
<end of output>
Test Passed.
2/2 Test: Failing.two
Output:
----------------------------------------------------------
[ RUN      ] MultiHostFault.LinkCut
/src/tests/multihost_test.cc:326: Failure
Value of: found
  Actual: false
Expected: true
the message of rank 0
[  FAILED  ] MultiHostFault.LinkCut (5726 ms)
/src/tests/multihost_test.cc:326: Failure
Value of: found
  Actual: false
Expected: true
the message of rank 0
/src/tests/harness.cc:216: Failure
Value of: exited
  Actual: false
Expected: true
rank 2 of 3 failed: killed by signal 11
<end of output>
Test Failed.
"""


def self_test():
    failed = [(n, digest(o, 40)) for n, o, ok in tests(SAMPLE.splitlines(keepends=True)) if not ok]
    assert [n for n, _ in failed] == ["Failing.two"], failed
    text = "\n".join(failed[0][1])
    assert text.count("the message of rank 0") == 1, text  # each rank's copy once
    assert "rank 2 of 3 failed: killed by signal 11" in text, text
    assert "[  FAILED  ] MultiHostFault.LinkCut" in text, text
    print("failure digest: self-test passed")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log", nargs="?")
    ap.add_argument("--max-lines", type=int, default=40)
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if args.log is None:
        ap.error("the log's path is missing")
    try:
        with open(args.log, errors="replace") as f:
            failed = [(n, o) for n, o, ok in tests(f) if not ok]
    except OSError as e:
        print(f"failure digest: cannot read {args.log}: {e}")
        return 0
    print(f"==== failure digest: {len(failed)} failed test(s), from {args.log} ====")
    budget = args.max_lines
    for name, out in failed:
        if budget <= 1:
            print("  (more left out)")
            break
        print(f"  {name}:")
        lines = digest(out, max(4, min(16, budget - 1))) or ["    (no gtest failure line: see the test's output above)"]
        for line in lines:
            print(line)
        budget -= 1 + len(lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
