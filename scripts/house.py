#!/usr/bin/env python3
"""Draws the source tree as rooms and arrows, in text.

A room is a folder of src/ (a layer), or include/, python/, bench/, fuzz/,
tests/, scripts/; its line gives the source files (.cc .h .c .py .sh .inc),
their lines, the median file and the largest. An arrow A -> B (n) says that n
files of room A include headers of layer B. The tail lists every file over the
size limit (800 lines) and the median over the whole tree.

    python3 scripts/house.py            # the working tree
    python3 scripts/house.py --rev REV  # the tree of a commit (git show)

docs/organization.md ("The house") keeps two drawings side by side.
"""

import argparse
import collections
import re
import statistics
import subprocess
import sys
from pathlib import Path

SOURCE = re.compile(r"\.(cc|h|c|py|sh|inc)$")
INCLUDE = re.compile(r'^#include "([a-z_]+)/', re.M)
LIMIT = 800


def tree_files(rev):
    args = ["git", "ls-files"] if rev is None else ["git", "ls-tree", "-r", "--name-only", rev]
    names = subprocess.run(args, check=True, capture_output=True, text=True).stdout.split()
    return [n for n in names if SOURCE.search(n)]


def read(rev, name):
    if rev is None:
        return Path(name).read_text(errors="replace")
    return subprocess.run(["git", "show", f"{rev}:{name}"], check=True, capture_output=True,
                          text=True, errors="replace").stdout


def room_of(name):
    parts = name.split("/")
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    return parts[0] if len(parts) > 1 else "(top)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", help="a commit to draw instead of the working tree")
    args = parser.parse_args()

    lines = {}
    rooms = collections.defaultdict(list)
    arrows = collections.Counter()
    for name in tree_files(args.rev):
        text = read(args.rev, name)
        lines[name] = text.count("\n")
        room = room_of(name)
        rooms[room].append(name)
        for dep in set(INCLUDE.findall(text)):
            if dep != room and dep != "memkv":
                arrows[(room, dep)] += 1

    print(f"{'room':10} {'files':>5} {'lines':>7} {'median':>6}  largest")
    for room in sorted(rooms, key=lambda r: -sum(lines[n] for n in rooms[r])):
        sizes = [lines[n] for n in rooms[room]]
        big = max(rooms[room], key=lambda n: lines[n])
        print(f"{room:10} {len(sizes):5} {sum(sizes):7} {int(statistics.median(sizes)):6}  "
              f"{big} {lines[big]}")
    print()
    print("arrows (files of the room that include the layer):")
    by_room = collections.defaultdict(list)
    for (room, dep), n in sorted(arrows.items()):
        by_room[room].append(f"{dep} {n}")
    for room in sorted(by_room):
        print(f"  {room:10} -> {', '.join(by_room[room])}")
    print()
    over = sorted((n for n in lines if lines[n] > LIMIT), key=lambda n: -lines[n])
    print(f"files over {LIMIT} lines: {len(over)}" + "".join(f"\n  {n} {lines[n]}" for n in over))
    print(f"source files: {len(lines)}, median {int(statistics.median(lines.values()))} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
