"""What the Python benchmarks (bench/*.py) share: the description of the
machine and checkout a recorded figure came from, and size formatting."""

import os
import platform
import subprocess
from typing import Any, Dict

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNITS = {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def machine(memkv_version: str) -> Dict[str, Any]:
    """The commit (marked dirty when the tree has changes), CPU, kernel and
    Python of this run."""
    def run(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO).stdout.strip()
        except OSError:
            return "?"
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    dirty = " (dirty)" if run(["git", "status", "--porcelain"]) else ""
    return {"commit": run(["git", "rev-parse", "--short", "HEAD"]) + dirty, "cpu": f"{cpu} x {os.cpu_count()}",
            "kernel": platform.release(), "python": platform.python_version(), "memkv": memkv_version}


def human(n: int) -> str:
    """A byte count in the largest binary unit that divides it: 4 MiB, 256 KiB."""
    for unit in ("GiB", "MiB", "KiB"):
        if n % UNITS[unit] == 0:
            return f"{n // UNITS[unit]} {unit}"
    return f"{n} B"
