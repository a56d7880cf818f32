#include "bench/plot.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>

#include "bench/flags.h"

namespace memkv::bench {
namespace {

constexpr int kPanelWidthPx = 420;
constexpr int kPanelHeightPx = 340;

std::string Mibs(const std::optional<CellResult>& c) {
  if (!c) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", c->MiBPerSecond());
  return text;
}

// "2 MiB+1" -> "2MiB+1": one field in the data file.
std::string SizeLabel(uint64_t size_bytes) {
  std::string label = FormatValueSize(size_bytes);
  label.erase(std::remove(label.begin(), label.end(), ' '), label.end());
  return label;
}

// A gnuplot single-quoted string: a quote inside is doubled.
std::string Quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// A POSIX shell single-quoted word.
std::string ShellQuoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string Absolute(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

// "put, 1 connection", "get, 4 connections": a panel's title and its data block's heading.
std::string PanelName(const PlotPanel& p) {
  return p.op + ", " + std::to_string(p.conns) + (p.conns == 1 ? " connection" : " connections");
}

}  // namespace

std::vector<PlotPanel> PlotPanels(const std::vector<Row>& rows) {
  std::vector<std::string> ops;
  std::vector<uint32_t> conns;
  for (const Row& r : rows) {
    if (std::find(ops.begin(), ops.end(), r.op) == ops.end()) ops.push_back(r.op);
    if (std::find(conns.begin(), conns.end(), r.conns) == conns.end()) conns.push_back(r.conns);
  }
  std::vector<PlotPanel> panels;
  for (const std::string& op : ops) {
    for (uint32_t c : conns) panels.push_back({op, c});
  }
  return panels;
}

std::string PlotData(const std::vector<Row>& rows) {
  std::string out = "# memkv-bench --plot: MiB/s by value size; a block per op and connection count\n";
  bool first = true;
  for (const PlotPanel& p : PlotPanels(rows)) {
    if (!first) out += "\n\n";
    first = false;
    out += "# " + PanelName(p) + "\n# size_bytes memkv raw redis label\n";
    for (const Row& r : rows) {
      if (r.op != p.op || r.conns != p.conns) continue;
      out += std::to_string(r.size_bytes) + " " + Mibs(r.memkv) + " " + Mibs(r.raw) + " " + Mibs(r.redis) + " " +
             SizeLabel(r.size_bytes) + "\n";
    }
  }
  return out;
}

PlotFiles PlotFilesFor(const std::string& svg_path) {
  std::filesystem::path base(svg_path);
  PlotFiles f;
  f.svg_path = svg_path;
  f.data_path = std::filesystem::path(base).replace_extension(".dat").string();
  f.script_path = std::filesystem::path(base).replace_extension(".gp").string();
  return f;
}

std::string PlotScript(const std::vector<Row>& rows, const PlotFiles& files, const std::string& title, bool redis) {
  const std::vector<PlotPanel> panels = PlotPanels(rows);
  std::set<std::string> ops;
  for (const PlotPanel& p : panels) ops.insert(p.op);
  const size_t layout_rows = std::max<size_t>(ops.size(), 1);
  const size_t layout_cols = std::max<size_t>(panels.size() / layout_rows, 1);
  const std::string data = Quoted(files.data_path);
  std::string s = "# memkv-bench --plot; render with: gnuplot " + Quoted(files.script_path) + "\n";
  s += "set terminal svg size " + std::to_string(kPanelWidthPx * layout_cols) + "," +
       std::to_string(kPanelHeightPx * layout_rows + 40) + " dynamic enhanced font 'sans,10' background rgb 'white'\n";
  s += "set output " + Quoted(files.svg_path) + "\n";
  s += "set datafile missing '-'\n";
  // Room beside the first and last size, so their points and labels are not on the border.
  s += "set logscale x 2\nset xtics rotate by -30 left nomirror\nset offsets graph 0.08, graph 0.08, graph 0.05, 0\n";
  s += "set xlabel 'value size'\nset ylabel 'MiB/s'\n";
  s += "set yrange [0:*]\nset grid\nset key top left\n";
  s += "set multiplot layout " + std::to_string(layout_rows) + "," + std::to_string(layout_cols) + " title " +
       Quoted(title) + "\n";
  for (size_t i = 0; i < panels.size(); ++i) {
    const std::string index = " index " + std::to_string(i);
    const std::string lines = " with linespoints pt 7 ps 0.6 title ";
    s += "set title " + Quoted(PanelName(panels[i])) + "\n";
    s += "plot " + data + index + " using 1:2:xtic(5)" + lines + "'memkv', \\\n     " + data + index + " using 1:3" +
         lines + "'raw'";
    if (redis) s += ", \\\n     " + data + index + " using 1:4" + lines + "'redis'";
    s += "\n";
  }
  s += "unset multiplot\n";
  return s;
}

Status WritePlot(const std::vector<Row>& rows, const std::string& svg_path, const std::string& title, bool redis,
                 const std::string& gnuplot, std::string* note) {
  const PlotFiles relative = PlotFilesFor(svg_path);
  const PlotFiles files{Absolute(relative.svg_path), Absolute(relative.data_path), Absolute(relative.script_path)};
  MEMKV_RETURN_IF_ERROR(WriteTextFile(files.data_path, PlotData(rows)));
  MEMKV_RETURN_IF_ERROR(WriteTextFile(files.script_path, PlotScript(rows, files, title, redis)));
  if (gnuplot.empty()) {
    *note = "wrote " + files.data_path + " and " + files.script_path + "; render the plot with: gnuplot " +
            ShellQuoted(files.script_path);
    return Status::Ok();
  }
  const std::string command = ShellQuoted(gnuplot) + " " + ShellQuoted(files.script_path) + " 2>&1";
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return Internal("popen(" + command + ") failed");
  std::string output;
  char chunk[512];
  while (std::fgets(chunk, sizeof(chunk), pipe) != nullptr) output += chunk;
  const int status = ::pclose(pipe);
  if (status != 0) {
    return Internal(gnuplot + " " + files.script_path + " exited with status " +
                    std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ": " + output);
  }
  *note = "wrote " + files.svg_path + " (data " + files.data_path + ", script " + files.script_path + ")";
  return Status::Ok();
}

}  // namespace memkv::bench
