"""The summary table of docs/benchmarks.md: find it, parse its rows, judge a
row's target, and write fresh cells back leaving every other byte alone."""

import re

SECTION = "## Summary: every figure against its reference and target"
COLUMNS = ["area", "cell", "MemKV", "reference", "ratio", "target", "met?", "run", "command"]
# A machine line ends with MACHINE_MARK + " RUN -->": one line per run that
# rows of the table name (a line of an older format, "<!-- run-all: machine
# -->", counts as the run its text names).
MACHINE_MARK = "<!-- run-all: machine"
_MARKED = re.compile(r"<!-- run-all: machine(?: (.+?))? -->\s*$")
_RUN_IN_TEXT = re.compile(r"\*\*run\*\* is (.+?) were rerun")

_COMPARE = re.compile(r"(>=|<=|<|>)\s*([0-9]+(?:\.[0-9]+)?)")


def split_row(line):
    """The 9 cells of a table row, stripped, or None for any other line."""
    if not line.startswith("|") or not line.rstrip("\n").endswith("|"):
        return None
    cells = [c.strip() for c in line.rstrip("\n")[1:-1].split("|")]
    return cells if len(cells) == len(COLUMNS) else None


def join_row(cells):
    return "| " + " | ".join(cells) + " |\n"


def table_lines(lines):
    """(first, end): the indexes of the summary table's data rows, lines[first:end]."""
    try:
        start = next(i for i, l in enumerate(lines) if l.rstrip("\n") == SECTION)
    except StopIteration:
        raise ValueError("no section '%s'" % SECTION)
    i = start + 1
    while i < len(lines) and not lines[i].startswith("| area |"):
        if lines[i].startswith("## "):
            raise ValueError("no table under '%s'" % SECTION)
        i += 1
    first = i + 2  # the header and the |---| line
    end = first
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return first, end


def rows_of(lines):
    """{(area, cell): index into lines} of the summary table."""
    first, end = table_lines(lines)
    found = {}
    for i in range(first, end):
        cells = split_row(lines[i])
        if cells is not None:
            found.setdefault((cells[0], cells[1]), i)
    return found


def parse_target(text):
    """(op, threshold) of a target with exactly one comparison (">= 0.9x raw",
    "p99.99 <= 3x p50", "<= 1.25"); None for any other ("none (reported)",
    "-", two comparisons, "~1.0"): its met? is left as it is."""
    found = _COMPARE.findall(text)
    if len(found) != 1:
        return None
    return found[0][0], float(found[0][1])


def meets(target, value):
    """Whether value meets target, compared as the program's JSON gives it
    (memkv-bench's ratios are already rounded to two decimals there;
    memkv-drive-bench's are not, and it counts them unrounded too)."""
    op, threshold = target
    return {">=": value >= threshold, "<=": value <= threshold,
            ">": value > threshold, "<": value < threshold}[op]


class Fresh:
    """What a run says of one row. values: the figures its target judges
    (ratios, or p99.99/p50 for the tail row); misses: optional words naming
    the cells that miss, for the met? cell and the summary."""

    def __init__(self, memkv, reference, ratio, values, misses=None, judged=None, met_suffix="", verdict=None,
                 met_text=None):
        self.memkv = memkv
        self.reference = reference
        self.ratio = ratio
        self.values = values
        self.misses = misses  # callable(target) -> list of "name value" strings, or None
        self.judged = judged  # words after "met"/"not met", e.g. "(4 of 5)"
        self.met_suffix = met_suffix
        # For a target with no single comparison ("every cell"): whether the
        # row judged itself met, or None to leave met? as it is.
        self.verdict = verdict
        # The met? words for such a row, when "met" / "**not met**" says too
        # little ("fraction met; **reachable not met** (1.28)").
        self.met_text = met_text


def met_cell(target_text, fresh, old):
    """The met? cell for fresh figures under target_text; old when the target
    is not one this parser reads or the run gave nothing to judge."""
    target = parse_target(target_text)
    if target is None and fresh.verdict is not None:
        words = fresh.met_text or ("met" if fresh.verdict else "**not met**")
        return words + fresh.met_suffix, fresh.verdict
    if target is None or not fresh.values:
        return old, None
    ok = [meets(target, v) for v in fresh.values]
    n_ok = sum(ok)
    count = " (%d of %d)" % (n_ok, len(ok)) if len(ok) > 1 else ""
    if all(ok):
        return "met" + count + fresh.met_suffix, True
    misses = fresh.misses(target) if fresh.misses else []
    words = "**not met**" + count
    if misses:
        words += ": " + ", ".join(misses)
    return words + fresh.met_suffix, False


def rewrite(lines, makers, run):
    """Rewrites the rows of makers {(area, cell): function(target) -> Fresh or
    None} in lines (a list of lines with their newlines) and returns (new
    lines, outcomes), outcomes being [(area, cell, met: True, False or None,
    the ratio cell (the MemKV cell where the ratio is "-"), target, met text)]. Rows a maker gives None for, rows not in
    makers, and every line outside the table stay as they were."""
    out = list(lines)
    index = rows_of(lines)
    outcomes = []
    for key, make in makers.items():
        i = index.get(key)
        if i is None:
            continue
        cells = split_row(lines[i])
        fresh = make(parse_target(cells[5]))
        if fresh is None:
            continue
        met, ok = met_cell(cells[5], fresh, cells[6])
        cells[2], cells[3], cells[4], cells[6], cells[7] = fresh.memkv, fresh.reference, fresh.ratio, met, run
        out[i] = join_row(cells)
        figure = fresh.ratio if fresh.ratio != "-" else fresh.memkv
        outcomes.append((key[0], key[1], ok, figure, cells[5], met))
    return out, outcomes


def machine_mark(run):
    return "%s %s -->" % (MACHINE_MARK, run)


def _line_run(line):
    """The run a machine line describes; None for a line that is not one."""
    m = _MARKED.search(line)
    if m is None:
        return None
    if m.group(1):
        return m.group(1)
    named = _RUN_IN_TEXT.search(line)
    return named.group(1) if named else ""


def set_machine_lines(lines, machines):
    """One line below the summary table per run of `machines` {run: text}:
    a run's line is replaced, a new run's added after the other machine lines
    (after the blank line that ends the table when there are none). Then the
    lines of runs that no row's run cell names any more go."""
    out = list(lines)
    for run, text in machines.items():
        line = text + " " + machine_mark(run) + "\n"
        marked = [i for i, l in enumerate(out) if _line_run(l) is not None]
        same = [i for i in marked if _line_run(out[i]) == run]
        if same:
            out[same[0]] = line
        elif marked:
            out.insert(marked[-1] + 1, line)
        else:
            _, end = table_lines(out)
            if end < len(out) and out[end].strip() == "":
                out[end + 1:end + 1] = [line, "\n"]
            else:
                out[end:end] = ["\n", line, "\n"]
    keep = {None} | {r.strip() for i in rows_of(out).values() for r in split_row(out[i])[7].split(",")}
    return [l for l in out if _line_run(l) in keep]  # None: not a machine line
