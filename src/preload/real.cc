#include "preload/real.h"

#include <dlfcn.h>

namespace memkv::preload {
namespace {

RealLibc Resolve() {
  RealLibc real{};
#define MEMKV_PRELOAD_RESOLVE(name, type) real.name = reinterpret_cast<type>(dlsym(RTLD_NEXT, #name));
  MEMKV_PRELOAD_REAL_FUNCTIONS(MEMKV_PRELOAD_RESOLVE)
#undef MEMKV_PRELOAD_RESOLVE
  return real;
}

}  // namespace

const RealLibc& Real() {
  static const RealLibc real = Resolve();
  return real;
}

}  // namespace memkv::preload
