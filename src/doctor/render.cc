#include "doctor/render.h"

#include "base/json.h"

#include <algorithm>
#include <cstdio>

namespace memkv::doctor {
namespace {

constexpr Layer kLayers[] = {Layer::kSwitch, Layer::kHostNic, Layer::kMemkv};

// Fixed-width markers so the ids line up; errors and warnings in capitals
// so they stand out in a long table.
const char* Marker(Severity s) {
  switch (s) {
    case Severity::kOk: return "ok   ";
    case Severity::kInfo: return "info ";
    case Severity::kWarning: return "WARN ";
    case Severity::kError: return "ERROR";
  }
  return "?    ";
}

std::string Plural(int n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string Pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

}  // namespace

std::string RenderTable(const Report& report) {
  std::string out = "memkv doctor on " + (report.host.empty() ? std::string("this host") : report.host);
  if (!report.device.empty()) {
    out += ": " + report.device + " port " + std::to_string(report.port);
    if (!report.netdev.empty()) out += " (netdev " + report.netdev + ")";
  }
  out += "\nsettings: " + report.config;
  if (!report.device.empty()) out += "; counters watched for " + std::to_string(report.interval_ms) + " ms";
  out += "\n";

  size_t id_width = 0;
  for (const Finding& f : report.findings) id_width = std::max(id_width, f.id.size());
  const std::string indent(2 + 5 + 2 + id_width + 2, ' ');

  for (Layer layer : kLayers) {
    bool any = false;
    for (const Finding& f : report.findings) {
      if (f.layer != layer) continue;
      if (!any) {
        out += std::string("\n") + LayerName(layer);
        // doctor cannot see switches: those findings say what they must match.
        if (layer == Layer::kSwitch) out += " (what every switch on the path must match; Cumulus Linux syntax)";
        out += "\n";
      }
      any = true;
      out += "  " + std::string(Marker(f.severity)) + "  " + Pad(f.id, id_width) + "  " + f.check;
      if (!f.observed.empty()) out += ": " + f.observed;
      out += "\n";
      if (f.severity == Severity::kOk) continue;
      if (!f.expected.empty()) out += indent + "expected: " + f.expected + "\n";
      if (!f.message.empty()) out += indent + f.message + "\n";
      for (size_t i = 0; i < f.fix.size(); ++i) out += indent + (i == 0 ? "fix: " : "     ") + f.fix[i] + "\n";
    }
  }

  const int errors = report.errors();
  const int warnings = report.warnings();
  out += "\n" + Plural(errors, "error", "errors") + ", " + Plural(warnings, "warning", "warnings");
  out += errors > 0 ? ": fix the errors above (each names its fix)\n"
         : warnings > 0 ? ": MemKV works, but not as the RoCEv2 runbook intends\n"
                        : ": the host matches the RoCEv2 runbook\n";
  return out;
}

std::string RenderJson(const Report& report) {
  auto str_or_null = [](const std::string& s) { return s.empty() ? std::string("null") : JsonQuote(s); };
  const bool has_device = !report.device.empty();
  std::string out = "{\n";
  out += "  \"host\": " + JsonQuote(report.host) + ",\n";
  out += "  \"device\": " + str_or_null(report.device) + ",\n";
  out += "  \"port\": " + (has_device ? std::to_string(report.port) : std::string("null")) + ",\n";
  out += "  \"netdev\": " + str_or_null(report.netdev) + ",\n";
  out += "  \"config\": " + JsonQuote(report.config) + ",\n";
  out += "  \"interval_ms\": " + std::to_string(report.interval_ms) + ",\n";
  out += "  \"findings\": [";
  for (size_t i = 0; i < report.findings.size(); ++i) {
    const Finding& f = report.findings[i];
    out += i == 0 ? "\n" : ",\n";
    out += "    {\"id\": " + JsonQuote(f.id) + ", \"layer\": " + JsonQuote(LayerKey(f.layer)) +
           ", \"severity\": " + JsonQuote(SeverityName(f.severity)) + ", \"check\": " + JsonQuote(f.check) +
           ", \"observed\": " + JsonQuote(f.observed) + ", \"expected\": " + JsonQuote(f.expected) +
           ", \"message\": " + JsonQuote(f.message) + ", \"fix\": [";
    for (size_t k = 0; k < f.fix.size(); ++k) out += (k == 0 ? "" : ", ") + JsonQuote(f.fix[k]);
    out += "]}";
  }
  out += report.findings.empty() ? "],\n" : "\n  ],\n";
  out += "  \"summary\": {\"errors\": " + std::to_string(report.errors()) +
         ", \"warnings\": " + std::to_string(report.warnings()) +
         ", \"info\": " + std::to_string(report.Count(Severity::kInfo)) +
         ", \"ok\": " + std::to_string(report.Count(Severity::kOk)) +
         ", \"exit_code\": " + std::to_string(ExitCode(report)) + "}\n";
  out += "}\n";
  return out;
}

}  // namespace memkv::doctor
