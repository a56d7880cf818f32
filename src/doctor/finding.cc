#include "doctor/finding.h"

namespace memkv::doctor {

const char* LayerName(Layer layer) {
  switch (layer) {
    case Layer::kSwitch: return "switch hints";
    case Layer::kHostNic: return "host NIC";
    case Layer::kMemkv: return "MemKV";
  }
  return "?";
}

const char* LayerKey(Layer layer) {
  switch (layer) {
    case Layer::kSwitch: return "switch";
    case Layer::kHostNic: return "host_nic";
    case Layer::kMemkv: return "memkv";
  }
  return "?";
}

const char* SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kOk: return "ok";
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kError: return "error";
  }
  return "?";
}

Finding& Report::Add(Finding finding) {
  findings.push_back(std::move(finding));
  return findings.back();
}

int Report::Count(Severity severity) const {
  int n = 0;
  for (const Finding& f : findings) n += f.severity == severity ? 1 : 0;
  return n;
}

const Finding* Report::Find(std::string_view id) const {
  for (const Finding& f : findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

int ExitCode(const Report& report) {
  if (report.errors() > 0) return 2;
  if (report.warnings() > 0) return 1;
  return 0;
}

}  // namespace memkv::doctor
