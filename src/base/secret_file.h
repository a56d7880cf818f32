// Reading a key file: the one set of checks every secret MemKV reads from a
// path gets (the data directory's auth.key, storage.encryption_key_file).
//
// The file must be a regular file (not a directory, device, FIFO or socket),
// owned by the process's effective user, with no permission bits for group
// or others (0600 or 0400), and at most `max_bytes` long. It is opened
// without blocking and read only up to that bound, so a FIFO or /dev/zero
// named by mistake is refused at once rather than read forever. Errors name
// `what` (e.g. "storage.encryption_key_file /etc/memkv/drive.key") and end
// with what is allowed; `content` says what the file holds ("32 raw bytes or
// 64 hex characters"). Pure I/O, no state; any thread.
#ifndef MEMKV_BASE_SECRET_FILE_H_
#define MEMKV_BASE_SECRET_FILE_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "memkv/status.h"

namespace memkv {

Result<std::string> ReadSecretFile(const std::string& path, std::string_view what, size_t max_bytes,
                                   std::string_view content);

}  // namespace memkv

#endif  // MEMKV_BASE_SECRET_FILE_H_
