#!/usr/bin/env python3
"""Lists the tests a ctest run skipped, each with the reason the test gave.

ctest's own output only says "Skipped"; the reason is in each test's output, which
`ctest --output-junit FILE` keeps. Prints one line per skipped test, NAME<TAB>REASON, NAME
cut at its first space as ctest's summary prints it. REASON is the message of GoogleTest's
GTEST_SKIP() (the lines after "file:line: Skipped", up to "[  SKIPPED ]"), or the text
after a "SKIP:"/"SKIPPED ... :" line of the Python and shell tests; it is empty when the
test said nothing that reads as a reason.

    tests/skip_reasons.py JUNIT_XML
"""
import re
import sys
import xml.etree.ElementTree as ET

GTEST_SKIP = re.compile(r":\d+: Skipped$")
# The message ends where gtest's summary line or a SCOPED_TRACE listing begins.
GTEST_END = re.compile(r"^(\[  SKIPPED \] |Google Test trace:)")
# "[  SKIPPED ] e2e_py.case: why", "SKIP case: why", "tool: SKIP: why"
SCRIPT_SKIP = re.compile(r"\bSKIP(?:PED)?\b[^:]*:\s*(\S.*)$")


def reason(output):
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if GTEST_SKIP.search(line):
            said = []
            for text in lines[i + 1:]:
                if GTEST_END.match(text):
                    break
                if text.strip():
                    said.append(text.strip())
            return " / ".join(said)
    for line in lines:
        m = SCRIPT_SKIP.search(line)
        if m:
            return m.group(1).strip()
    return ""


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
        if case.find("skipped") is None or case.get("status") == "disabled":
            continue
        out = case.find("system-out")
        text = out.text or "" if out is not None else ""
        print("%s\t%s" % (case.get("name", "").split(" ", 1)[0], reason(text)))


if __name__ == "__main__":
    main()
