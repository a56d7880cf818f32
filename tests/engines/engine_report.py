"""A pytest plugin for the engine partner tests: at the end of a run it
writes what ran against which releases to $MEMKV_ENGINE_REPORTS/<engine>.json
($MEMKV_ENGINE_NAME, else the folder's name), from which scripts/engine-compat.py writes
docs/engines/compatibility.md. Each test's docstring (its first paragraph) says
what it exercised. Loaded with `-p engine_report` from tests/engines (see CMakeLists.txt)."""

import json
import os
import platform
import time
from importlib import metadata

_results = {}


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        doc = ""
        item = _items.get(report.nodeid)
        if item is not None and item.function.__doc__:
            doc = " ".join(item.function.__doc__.strip().split("\n\n")[0].split())
        previous = _results.get(report.nodeid, {})
        if previous.get("outcome") in ("failed", "error") and report.outcome == "passed":
            return
        outcome = report.outcome
        if hasattr(report, "wasxfail"):  # an expected failure: a known limit of the package, with its reason
            outcome = "xfailed"
            doc = f"{doc} Expected failure: {report.wasxfail}".strip()
        _results[report.nodeid] = {"test": report.nodeid.split("::")[-1], "outcome": outcome,
                                   "exercised": doc}


_items = {}


def pytest_collection_modifyitems(items):
    for item in items:
        _items[item.nodeid] = item


def pytest_sessionfinish(session):
    where = os.environ.get("MEMKV_ENGINE_REPORTS")
    if not where or not _results:
        return
    folder = str(session.config.args[0]) if session.config.args else "."
    engine = os.environ.get("MEMKV_ENGINE_NAME") or os.path.basename(os.path.normpath(folder))
    packages = {}
    for name in os.environ.get("MEMKV_ENGINE_PACKAGES", engine).split(","):
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = "not installed"
    os.makedirs(where, exist_ok=True)
    with open(os.path.join(where, f"{engine}.json"), "w") as f:
        json.dump({"engine": engine, "packages": packages, "python": platform.python_version(),
                   "date": time.strftime("%Y-%m-%d", time.gmtime()), "tests": list(_results.values())}, f, indent=1)
