#include "base/text_file.h"

#include <fstream>

namespace memkv {

Status WriteTextFile(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return IoError("cannot open '" + path + "' for writing");
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return IoError("writing '" + path + "' failed");
  return Status::Ok();
}

}  // namespace memkv
