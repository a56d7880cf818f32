#!/usr/bin/env python3
"""Writes docs/engines/compatibility.md from the engine partner tests' last
run (the JSON reports tests/engines/engine_report.py writes under
build/engine-reports): per engine, the releases tested, each test, what it
exercised and its result.

    python3 scripts/engine-compat.py build/engine-reports > docs/engines/compatibility.md
"""

import json
import pathlib
import sys


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    reports = sorted(pathlib.Path(argv[1]).glob("*.json"))
    if not reports:
        print(f"engine-compat: no reports in {argv[1]}: run the engine tests first (ctest -L engine)", file=sys.stderr)
        return 1
    out = ["# Engines' released packages: what was tested",
           "",
           "Written by `scripts/engine-compat.py build/engine-reports` from the last run of the",
           "engine partner tests (`ctest -L engine`, tests/engines); do not edit by hand.",
           "Each test drives MemKV's adapter through the engine's own classes, installed",
           "from PyPI at the versions named (tests/engines/NAME/requirements.lock).",
           ""]
    loaded = [json.loads(path.read_text()) for path in reports]
    out += ["| partner | releases | tests | result |", "|---|---|---|---|"]
    for report in loaded:
        outcomes = [t["outcome"] for t in report["tests"]]
        counts = ", ".join(f"{outcomes.count(o)} {o}" for o in sorted(set(outcomes)))
        versions = ", ".join(f"{k} {v}" for k, v in report["packages"].items())
        if set(outcomes) <= {"passed"}:
            verdict = "pass"
        elif set(outcomes) <= {"passed", "xfailed"}:
            verdict = "pass; known limits of the package (xfailed) below"
        else:
            verdict = "**" + counts + "**"
        out.append(f"| [{report['engine']}](#{report['engine']}) | {versions} | {counts} | {verdict} |")
    out.append("")
    for report in loaded:
        versions = ", ".join(f"{k} {v}" for k, v in report["packages"].items())
        out += [f"## {report['engine']}", "",
                f"{versions}; Python {report['python']}; run {report['date']}.", "",
                "| test | what it exercised | result |", "|---|---|---|"]
        for t in report["tests"]:
            exercised = " ".join((t["exercised"] or "-").split()).replace("|", "\\|")
            out.append(f"| `{t['test']}` | {exercised} | {t['outcome']} |")
        out.append("")
    sys.stdout.write("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
