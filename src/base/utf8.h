// Printing names that are arbitrary bytes (key namespaces, keys) where the
// output must be UTF-8: Prometheus label values, JSON strings, log lines.
//
// The one rule MemKV applies everywhere it prints such a name: a byte that is
// not part of a well-formed UTF-8 sequence (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF) is written as the four ASCII characters
// `\xNN` (lower-case hex); everything else is copied. The escape is
// for reading, not reversible: a name whose bytes are literally `\xff` prints
// the same as one holding the byte 0xff. Escaping for the output format
// (JSON's `\\`, a label's `\"`) is applied on top by its writer.
//
// Pure functions; any thread.
#ifndef MEMKV_BASE_UTF8_H_
#define MEMKV_BASE_UTF8_H_

#include <string>
#include <string_view>

namespace memkv {

bool IsValidUtf8(std::string_view text);
// `text` with every byte outside a well-formed UTF-8 sequence as `\xNN`.
std::string PrintableUtf8(std::string_view text);

}  // namespace memkv

#endif  // MEMKV_BASE_UTF8_H_
