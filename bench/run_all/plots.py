"""Plots of throughput against value size, MemKV beside its reference, for
the runs whose program draws none itself: file mode against Redis (S1) and
the drive tier against fio (D1). Each writes a .dat and a gnuplot script
under the output directory and renders an SVG when gnuplot is installed."""

import os
import shutil
import subprocess


def _render(out, name, title, panels, columns, layout):
    """panels: [(panel title, [(size_bytes, value, ...)])]; columns: the
    curve names of the values. Returns [(path, note)]."""
    dat = os.path.join(out, name + ".dat")
    gp = os.path.join(out, name + ".gp")
    svg = os.path.join(out, name + ".svg")
    with open(dat, "w") as f:
        f.write("# size_bytes " + " ".join(c.replace(" ", "_") for c in columns) + "\n")
        for i, (_, points) in enumerate(panels):
            if i:
                f.write("\n\n")
            for p in sorted(points):
                f.write("%d " % p[0] + " ".join("%.1f" % v if v is not None else "NaN" for v in p[1:]) + "\n")
    rows, cols = layout
    with open(gp, "w") as f:
        f.write("set terminal svg size %d,%d dynamic background rgb 'white'\n" % (420 * cols, 320 * rows))
        f.write("set output '%s'\n" % svg)
        f.write("set logscale x 2\nset format x '%.0b%B'\nset xlabel 'value size (bytes)'\n")
        f.write("set ylabel 'MiB/s'\nset yrange [0:*]\nset key top left\nset grid\n")
        f.write("set multiplot layout %d,%d title '%s'\n" % (rows, cols, title.replace("'", "")))
        for i, (panel, _) in enumerate(panels):
            f.write("set title '%s'\n" % panel)
            curves = ["'%s' index %d using 1:%d with linespoints title '%s'" % (dat, i, j + 2, c)
                      for j, c in enumerate(columns)]
            f.write("plot " + ", ".join(curves) + "\n")
        f.write("unset multiplot\n")
    gnuplot = shutil.which("gnuplot")
    if gnuplot is None:
        return [(dat, "gnuplot is not installed: apt-get install gnuplot-nox, then cd %s && gnuplot %s"
                 % (out, os.path.basename(gp)))]
    done = subprocess.run([gnuplot, os.path.basename(gp)], cwd=out, capture_output=True, text=True)
    if done.returncode != 0:
        return [(gp, "gnuplot failed: " + done.stderr.strip()[-300:])]
    return [(svg, title)]


def file_mode_plot(data, out):
    panels = []
    for policy, redis in (("interval", "everysec"), ("always", "always")):
        js = data.get(policy)
        if js is None:
            continue
        for conns in (1, 4, 16):
            points = [(c["size_bytes"], (c.get("memkv") or {}).get("mib_per_s"), (c.get("redis") or {}).get("mib_per_s"))
                      for c in js.get("cells", []) if c.get("op") == "put" and c.get("conns") == conns]
            if points:
                panels.append(("put, sync %s vs appendfsync %s, x%d" % (policy, redis, conns), points))
    if not panels:
        return []
    return _render(out, "s1-file-mode", "memkv file mode against Redis AOF, put", panels, ["memkv", "Redis AOF"],
                   ((len(panels) + 2) // 3, 3))


def drive_plot(data, out):
    js = data.get("d1")
    if js is None:
        return []
    panels = []
    for op in ("put", "get"):
        for qd in (1, 4, 16):
            points = []
            for c in js.get("cells", []):
                if c.get("op") != op or c.get("queue_depth") != qd:
                    continue
                fio = (c.get("fio") or {}).get("mib_per_s")
                row = [c["size_bytes"], (c.get("memkv") or {}).get("mib_per_s"), fio]
                if op == "put":
                    row += [(c.get(k) or {}).get("mib_per_s") for k in ("fio_fdatasync", "each_sync", "each_sync_record")]
                points.append(tuple(row))
            if points:
                panels.append(("%s, queue depth %d" % (op, qd), points))
    if not panels:
        return []
    # Gets have no fdatasync or per-put durable curves (nor puts of a run
    # without --each-sync): their columns are NaN there.
    panels = [(t, [p + (None,) * (6 - len(p)) for p in pts]) for t, pts in panels]
    return _render(out, "d1-drive-tier", "memkv drive tier against fio and puts durable when counted", panels,
                   ["memkv", "fio", "fio --fdatasync=1", "each-sync", "each-sync +record"],
                   ((len(panels) + 2) // 3, 3))
