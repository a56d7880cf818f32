// memkv-bench --plot: an SVG of the sweep's throughput (MiB/s) against value
// size (log2 axis), a panel per op and connection count, with a line each
// for memkv, the raw stream and Redis.
//
// The data and the gnuplot script are text made by pure functions (tested
// without gnuplot); WritePlot writes both beside the SVG's path (.dat, .gp)
// and runs gnuplot on the script when there is one. Called from main's
// thread after the sweep.
#ifndef MEMKV_BENCH_PLOT_H_
#define MEMKV_BENCH_PLOT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bench/report.h"
#include "memkv/status.h"

namespace memkv::bench {

// One panel: an op at one connection count; its data block has the same
// index (gnuplot's `index`).
struct PlotPanel {
  std::string op;
  uint32_t conns = 0;
};

// The panels of `rows`: ops in the order they first appear, each with the
// connection counts in the order they first appear.
std::vector<PlotPanel> PlotPanels(const std::vector<Row>& rows);

// A block per panel, blocks separated by two blank lines; a line per size:
// size in bytes, memkv, raw and redis MiB/s ('-' where absent), the size's
// label ("2MiB+1").
std::string PlotData(const std::vector<Row>& rows);

struct PlotFiles {
  std::string svg_path;
  std::string data_path;
  std::string script_path;
};

// PATH's siblings: "out/bench-plot.svg" -> "out/bench-plot.dat" and
// "out/bench-plot.gp" (the extension, if any, replaced).
PlotFiles PlotFilesFor(const std::string& svg_path);

// The gnuplot script that draws `files.data_path` into `files.svg_path`;
// `title` heads the page; `redis` adds Redis's lines.
std::string PlotScript(const std::vector<Row>& rows, const PlotFiles& files, const std::string& title, bool redis);

// Writes the data and the script, then runs `gnuplot` (a path; empty when
// there is none) on the script. *note says what was written and, without
// gnuplot, how to render it. An error when a file cannot be written or
// gnuplot fails.
Status WritePlot(const std::vector<Row>& rows, const std::string& svg_path, const std::string& title, bool redis,
                 const std::string& gnuplot, std::string* note);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_PLOT_H_
