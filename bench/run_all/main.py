"""bench/run-all: reruns the commands of docs/benchmarks.md's summary table
that it knows (registry.py) and rewrites those rows with the fresh figures."""

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import time

from . import cells, table
from .registry import NOT_RERUN, REGISTRY

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_ID_LINE = re.compile(r"^# ([A-Z][0-9]+): (.*)$")


def docs_ids(lines):
    """[(ID, words)] of the command list under the summary table, in order
    (an ID may appear twice)."""
    first, end = table.table_lines(lines)
    ids = []
    in_block = False
    for line in lines[end:]:
        if line.startswith("```"):
            if in_block:
                break
            in_block = True
            continue
        if in_block:
            m = _ID_LINE.match(line.rstrip("\n"))
            if m:
                ids.append((m.group(1), m.group(2)))
        elif line.startswith("## "):
            break
    return ids


def load_data(entry, out, failed=()):
    """{run name: JSON} of entry's runs whose JSON is under out and whose run
    did not fail."""
    data = {}
    for run in entry.runs:
        path = os.path.join(out, run.name + ".log" if run.json_lines else run.json)
        if run.name in failed or not os.path.exists(path):
            continue
        with open(path) as f:
            if run.json_lines:
                data[run.name] = [json.loads(l) for l in f if l.startswith("{")]
            else:
                data[run.name] = json.load(f)
    return data


def venv_python(name):
    """The python of engine venv `name` (scripts/engine-venv.sh builds it when
    this machine has none), or raises OSError saying why not."""
    done = subprocess.run(["bash", os.path.join(ROOT, "scripts", "engine-venv.sh"), name], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise OSError("scripts/engine-venv.sh %s: exit %d: %s" % (name, done.returncode,
                                                                  " / ".join(done.stderr.splitlines()[-3:])))
    return os.path.join(done.stdout.strip().splitlines()[-1], "bin", "python")


def makers_for(ids, data_by_id):
    """{(area, cell): function(target)} for the rows of ids, bound to their data."""
    makers = {}
    for i in ids:
        data = data_by_id.get(i) or {}
        for key, row in REGISTRY[i].rows.items():
            makers[key] = (lambda row, data: lambda target: row(data, target))(row, data)
    return makers


def apply(text, ids, data_by_id, run, machine=None):
    """text with the rows of ids rewritten from data_by_id {ID: {run: JSON}};
    returns (new text, {ID: outcomes}). An ID without data leaves its rows.
    run, machine: the run cell's words and the machine line, or {ID: ...}
    (--reuse: each ID's own run and machine)."""
    lines = text.splitlines(True)
    outcomes = {}
    machines = {}
    for i in ids:
        words = run[i] if isinstance(run, dict) else run
        lines, got = table.rewrite(lines, makers_for([i], data_by_id), words)
        outcomes[i] = got
        line = machine[i] if isinstance(machine, dict) else machine
        if got and line:
            machines[words] = line
    if machines:
        lines = table.set_machine_lines(lines, machines)
    return "".join(lines), outcomes


def commit_of(root, docs=None):
    """The short commit of root, +dirty when a tracked file differs; the
    docs page run-all rewrites does not count (an earlier ID's rows)."""
    def git(*args):
        done = subprocess.run(["git", "-C", root] + list(args), capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    spare = [":(exclude)" + os.path.relpath(os.path.abspath(docs), root)] if docs else []
    if git("status", "--porcelain", "--untracked-files=no", "--", ".", *spare):
        commit += "+dirty"
    return commit


def baseline_words(path):
    """The --baseline server as U1's row names it, found when it runs (a later
    --reuse may not find the binary's checkout): the commit of the checkout
    the binary lies in, else its path."""
    path = os.path.abspath(path)
    done = subprocess.run(["git", "-C", os.path.dirname(path), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True) if os.path.isdir(os.path.dirname(path)) else None
    if done is not None and done.returncode == 0 and done.stdout.strip():
        return "the server built in a checkout of %s" % done.stdout.strip()
    return "the server of %s" % path


def machine_words(run):
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    u = os.uname()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return ("The rows whose **run** is %s were rerun by `bench/run-all` on %s (as `/proc/cpuinfo` names it), "
            "%d cores, %s %s %s, %s." % (run, cpu, os.cpu_count() or 0, u.sysname, u.release, u.machine, now))


def summary(outcomes, missing):
    """The closing text: per ID rows met / judged, and the misses."""
    out = []
    for i, rows in outcomes.items():
        judged = [r for r in rows if r[2] is not None]
        met = [r for r in judged if r[2]]
        out.append("%s: %d of %d rows met (%d rewritten)" % (i, len(met), len(judged), len(rows)))
        for area, cell, ok, ratio, target, _ in rows:
            if ok is False:
                out.append("  miss: %s | %s: %s (target %s)" % (area, cell, ratio, target))
        if i in missing:
            out.append("  failed, its rows left as they were: " + missing[i])
    return "\n".join(out)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/run-all", description=__doc__)
    p.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build directory (default: build)")
    p.add_argument("--only", default="", help="comma-separated command IDs (default: every ID run-all reruns)")
    p.add_argument("--quick", action="store_true", help="short cells, one repetition: minutes, noisier figures")
    p.add_argument("--dry-run", action="store_true", help="print what would run and the rows each ID feeds")
    p.add_argument("--docs", default=os.path.join(ROOT, "docs", "benchmarks.md"), help="the page to rewrite")
    p.add_argument("--out", default="/tmp/memkv-run-all", help="JSON, logs and plots (default /tmp/memkv-run-all)")
    p.add_argument("--no-rewrite", action="store_true", help="run and summarize, but leave the docs as they are")
    p.add_argument("--baseline", help="an older memkv server binary: U1 compares this build's with it")
    p.add_argument("--reuse", action="store_true",
                   help="run nothing: rewrite the rows from the JSON an earlier run left in --out (its commit, "
                        "machine and failures as that run recorded them in OUT/run-all.json)")
    return p.parse_args(argv)


RECORD = "run-all.json"  # under --out: per ID, the run cell's words, the machine line and the failed runs


def read_record(out):
    try:
        with open(os.path.join(out, RECORD)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def write_record(out, i, run, machine, failed, baseline=None):
    """Notes ID i's run in OUT/run-all.json, beside the IDs other runs left
    there; `baseline`: how its rows name the --baseline server."""
    record = read_record(out)
    record[i] = {"run": run, "machine": machine, "failed": failed}
    if baseline:
        record[i]["baseline"] = baseline
    with open(os.path.join(out, RECORD), "w") as f:
        json.dump(record, f, indent=1)


def selected(args, doc_ids):
    known = [i for i, _ in doc_ids]
    wanted = [w.strip() for w in args.only.split(",") if w.strip()] if args.only else list(REGISTRY)
    for w in wanted:
        if w not in known and w not in REGISTRY:
            raise SystemExit("bench/run-all: --only %s: no such command ID in %s" % (w, args.docs))
    return wanted


def shell_words(run, argv, build, out):
    """The command as a shell would take it, its added variables first."""
    env = ["%s=%s" % kv for kv in run.environment(build, out).items()]
    return " ".join(env + [shlex.join(argv)])


def dry_run(args, doc_ids, wanted, lines):
    """Prints, in the order of the docs' list, what each wanted ID would run
    and the rows it feeds, or why run-all does not rerun it."""
    index = table.rows_of(lines)
    build, out = os.path.abspath(args.build), os.path.abspath(args.out)
    order = [i for i, _ in doc_ids] + [i for i in REGISTRY if i not in dict(doc_ids)]
    words = {}
    for i, w in doc_ids:
        words.setdefault(i, []).append(w)
    shown = set()
    for i in order:
        if i in shown or i not in wanted and (args.only or i in REGISTRY):
            continue
        shown.add(i)
        if i not in REGISTRY:
            print("%s: not rerun by run-all (%s) [%s]" % (i, NOT_RERUN.get(i, "not in its registry"),
                                                       "; ".join(words.get(i, []))))
            continue
        e = REGISTRY[i]
        print("%s: %s" % (i, e.what))
        for run in e.runs:
            print("  run:  " + shell_words(run, run.command(build, out, args.quick, baseline=args.baseline), build,
                                           out))
            print("  json: " + os.path.join(out, run.name + ".log (its JSON lines)" if run.json_lines else run.json))
        for area, cell in e.rows:
            print("  row:  %s | %s%s" % (area, cell, "" if (area, cell) in index else "  (NOT IN THE TABLE)"))


def run_id(i, args, out):
    """Runs ID i's commands; returns ({run name: why} of the runs that
    failed, [(plot path, note)] of the plots they drew)."""
    failed, plots = {}, []
    build = os.path.abspath(args.build)
    for run in REGISTRY[i].runs:
        json_path = os.path.join(out, run.json)
        if os.path.exists(json_path):
            os.remove(json_path)  # a failed run must not leave an older JSON to be read
        os.makedirs(os.path.join(out, "db"), exist_ok=True)
        log = os.path.join(out, run.name + ".log")
        try:
            if run.needs_baseline() and not args.baseline:
                raise OSError("needs --baseline PATH: an older memkv server binary to compare with")
            python = venv_python(run.venv) if run.venv else None
        except OSError as e:
            failed[run.name] = str(e)
            print("%s: %s failed, %s" % (i, run.name, e), flush=True)
            continue
        argv = run.command(build, out, args.quick, python, args.baseline and os.path.abspath(args.baseline))
        print("%s: %s  (log %s)" % (i, shell_words(run, argv, build, out), log), flush=True)
        start = time.time()
        with open(log, "w") as f:
            try:
                env = dict(os.environ, **run.environment(build, out))
                rc = subprocess.run(argv, cwd=out, stdout=f, stderr=subprocess.STDOUT, env=env).returncode
            except OSError as e:
                rc, why = -1, str(e)
        if rc != 0:
            with open(log) as f:
                tail = [l.rstrip() for l in f.readlines()[-3:]]
            failed[run.name] = "exit %d: %s" % (rc, " / ".join(tail)) if rc != -1 else why
            print("%s: %s failed, %s" % (i, run.name, failed[run.name]), flush=True)
        else:
            print("%s: %s done in %.0f s" % (i, run.name, time.time() - start), flush=True)
        if run.plot:
            svg = os.path.join(out, run.plot)
            gp = os.path.splitext(svg)[0] + ".gp"
            if os.path.exists(svg):
                plots.append((svg, "drawn by " + os.path.basename(argv[0])))
            elif os.path.exists(gp):
                plots.append((gp, "gnuplot is not installed: apt-get install gnuplot-nox, then gnuplot " + gp))
    return failed, plots


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    with open(args.docs) as f:
        text = f.read()
    lines = text.splitlines(True)
    doc_ids = docs_ids(lines)
    wanted = selected(args, doc_ids)
    if args.dry_run:
        dry_run(args, doc_ids, wanted, lines)
        return 0
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    data_by_id, missing, plots = {}, {}, []
    run = commit_of(ROOT, args.docs) + (" (--quick)" if args.quick else "")
    machine = machine_words(run)
    runs, machines, record = {}, {}, read_record(out) if args.reuse else {}
    for i in wanted:
        if i not in REGISTRY:
            print("%s: not rerun by run-all (%s)" % (i, NOT_RERUN.get(i, "not in its registry")))
            continue
        if args.reuse:
            if i not in record:
                missing[i] = "no earlier run of %s in %s" % (i, out)
                continue
            failed, runs[i], machines[i] = record[i]["failed"], record[i]["run"], record[i]["machine"]
            baseline = record[i].get("baseline")
        else:
            failed, drawn = run_id(i, args, out)
            plots += drawn
            runs[i], machines[i] = run, machine
            needs = args.baseline and any(r.needs_baseline() for r in REGISTRY[i].runs)
            baseline = baseline_words(args.baseline) if needs else None
            write_record(out, i, run, machine, failed, baseline)
        data_by_id[i] = load_data(REGISTRY[i], out, failed)
        if baseline:
            data_by_id[i][cells.BASELINE] = baseline
        if failed:
            missing[i] = "; ".join("%s %s" % kv for kv in failed.items())
        for plot in REGISTRY[i].plots:
            plots += plot(data_by_id[i], out)
    ids = [i for i in wanted if i in runs]
    # The page as it is now, not as it was before the runs: edits made to it
    # while the benchmarks ran (minutes) stay.
    with open(args.docs) as f:
        text = f.read()
    new_text, outcomes = apply(text, ids, data_by_id, runs, machines)
    if not args.no_rewrite and new_text != text:
        with open(args.docs, "w") as f:
            f.write(new_text)
        print("rewrote %d rows of %s" % (sum(len(v) for v in outcomes.values()), args.docs))
    for path, note in plots:
        print("plot: %s  (%s)" % (path, note))
    print()
    print(summary(outcomes, missing))
    return 1 if missing else 0
