#!/usr/bin/env python3
"""The closing report of scripts/test.sh: where the time went and the whole count.

Reads the phases' times (a file of `name seconds status [beside]` lines that test.sh writes), the
JUnit file cargo-nextest leaves, and the doc tests' libtest output; prints a table of phases,
a table of test binaries (tests, failures, summed test time, slowest test), the slowest
tests, and last the one line `N passed, M failed, K skipped` that a reader and CI look for.
Exits 1 when a phase or a test failed.

Usage: test_report.py PHASES_FILE JUNIT_XML NEXTEST_LOG DOCTEST_LOG|-
"""
import re
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict

# nextest's closing line: "Summary [ 301.2s] 942 tests run: 940 passed, 2 failed, 5 skipped"
NEXTEST_SUMMARY = re.compile(r"Summary \[\s*([\d.]+)s\]\s+(\d+) tests? run: (.*)")
# libtest's: "test result: ok. 1 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; ..."
LIBTEST_RESULT = re.compile(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")


def read_phases(path):
    phases = []
    with open(path) as lines:
        for line in lines:
            name, seconds, status, *beside = line.split()
            phases.append((name, float(seconds), status, bool(beside)))
    return phases


def group_of(binary, name):
    """A test's group: its binary, and for the integration tests' one binary (`suite`, whose
    tests are named FILE::TEST) its file as well."""
    if "::" in name and binary.endswith("::suite"):
        return f"{binary} {name.split('::', 1)[0]}"
    return binary


def read_junit(path):
    """Per group (binary, or the suite's file): [tests, failures, summed seconds, (slowest
    seconds, its name)]; all tests."""
    binaries = defaultdict(lambda: [0, 0, 0.0, (0.0, "")])
    tests = []
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return binaries, tests
    for case in root.iter("testcase"):
        binary = case.get("classname", "?")
        seconds = float(case.get("time", "0"))
        failed = case.find("failure") is not None or case.find("error") is not None
        row = binaries[group_of(binary, case.get("name", ""))]
        row[0] += 1
        row[1] += failed
        row[2] += seconds
        row[3] = max(row[3], (seconds, case.get("name", "?")))
        tests.append((seconds, binary, case.get("name", "?"), failed))
    return binaries, tests


def read_text(path):
    """A log's text, or None when the phase that writes it never ran."""
    try:
        with open(path, errors="replace") as log:
            return log.read()
    except OSError:
        return None


def nextest_counts(path):
    """(passed, failed, skipped) from nextest's closing line, or None if it never ran."""
    text = read_text(path)
    found = NEXTEST_SUMMARY.findall(text) if text is not None else []
    if not found:
        return None
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for part in found[-1][2].split(","):
        match = re.match(r"\s*(\d+) (\w+)", part)
        if match:
            word = match.group(2)
            # "timed out", "leaky" and "exec failed" are failures too.
            key = word if word in counts else ("passed" if word == "flaky" else "failed")
            counts[key] += int(match.group(1))
    return counts["passed"], counts["failed"], counts["skipped"]


def doctest_counts(path):
    """(passed, failed, ignored) over libtest's result lines; (0, 0, 0) for `-` (not run)."""
    if path == "-":
        return 0, 0, 0
    passed = failed = ignored = 0
    text = read_text(path)
    results = LIBTEST_RESULT.findall(text) if text is not None else []
    if not results:
        return None
    for p, f, i in results:
        passed, failed, ignored = passed + int(p), failed + int(f), ignored + int(i)
    return passed, failed, ignored


def short(text, width):
    return text if len(text) <= width else text[: width - 1] + "…"


def main(phases_path, junit_path, nextest_log, doctest_log):
    phases = read_phases(phases_path)
    print("\nphase         time   status")
    for name, seconds, status, beside in phases:
        print(f"{name:<11} {seconds:>6.1f} s  {status}{'  (beside the tests)' if beside else ''}")
    # A phase beside the tests overlaps them: the time waited for it after them is its own
    # line (wait-beside).
    print(f"{'total':<11} {sum(s for _, s, _, beside in phases if not beside):>6.1f} s")

    binaries, tests = read_junit(junit_path)
    if binaries:
        print("\ntest binary (file)                   tests  failed  test time  slowest test")
        for binary, (count, failures, seconds, (slowest, name)) in sorted(
            binaries.items(), key=lambda item: -item[1][2]
        ):
            print(
                f"{short(binary, 36):<36} {count:>5}  {failures:>6}  {seconds:>7.1f} s  "
                f"{slowest:5.1f} s {short(name, 40)}"
            )
        print("(test time: the tests added up; they run side by side, so the phase is shorter)")
        print("\nslowest tests")
        for seconds, binary, name, failed in sorted(tests, reverse=True)[:10]:
            mark = "  FAILED" if failed else ""
            print(f"{seconds:>6.1f} s  {short(binary + ' ' + name, 66)}{mark}")

    passed = failed = skipped = 0
    missing = []
    for label, counts in (("nextest", nextest_counts(nextest_log)), ("doc tests", doctest_counts(doctest_log))):
        if counts is None:
            missing.append(label)
            continue
        passed, failed, skipped = passed + counts[0], failed + counts[1], skipped + counts[2]
    failed_phases = [name for name, _, status, _ in phases if status != "ok"]
    if failed_phases:
        print(f"\nfailed phases: {', '.join(failed_phases)}")
    if missing:
        print(f"no test counts from: {', '.join(missing)}")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or failed_phases else 0


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__.strip().splitlines()[-1])
    sys.exit(main(*sys.argv[1:]))
