#include "verbs/ibverbs_api.h"

#include <dlfcn.h>

#include <cstring>


namespace memkv::verbs {
namespace {

struct Loaded {
  IbverbsApi api{};
  bool ok = false;
  std::string why;
};

// Resolves `name` into `*slot`; false (with loaded->why) when it is missing.
template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* slot, Loaded* loaded) {
  dlerror();
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    const char* err = dlerror();
    loaded->why = std::string(kIbverbsLibrary) + " lacks " + name + " (" + (err ? err : "no such symbol") +
                  "); rdma-core 22 or newer is needed for RDMA";
    return false;
  }
  *slot = reinterpret_cast<Fn>(symbol);
  return true;
}

Loaded Load() {
  Loaded loaded;
  // RTLD_NODELETE: providers (librxe, libmlx5) and every verbs object keep
  // pointers into the library; it must stay mapped for the whole process.
  void* handle = dlopen(kIbverbsLibrary, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) {
    const char* err = dlerror();
    loaded.why = std::string(kIbverbsLibrary) + " could not be loaded (" + (err ? err : "unknown error") +
                 "); RDMA needs rdma-core's libibverbs (Debian/Ubuntu: apt install libibverbs1 "
                 "ibverbs-providers; RHEL: dnf install libibverbs)";
    return loaded;
  }
  IbverbsApi& a = loaded.api;
  bool ok = Resolve(handle, "ibv_get_device_list", &a.get_device_list, &loaded) &&
            Resolve(handle, "ibv_free_device_list", &a.free_device_list, &loaded) &&
            Resolve(handle, "ibv_get_device_name", &a.get_device_name, &loaded) &&
            Resolve(handle, "ibv_open_device", &a.open_device, &loaded) &&
            Resolve(handle, "ibv_close_device", &a.close_device, &loaded) &&
            Resolve(handle, "ibv_query_device", &a.query_device, &loaded) &&
            Resolve(handle, "ibv_query_port", &a.query_port, &loaded) &&
            Resolve(handle, "_ibv_query_gid_ex", &a.query_gid_ex, &loaded) &&
            Resolve(handle, "ibv_alloc_pd", &a.alloc_pd, &loaded) &&
            Resolve(handle, "ibv_dealloc_pd", &a.dealloc_pd, &loaded) &&
            Resolve(handle, "ibv_reg_mr", &a.reg_mr, &loaded) &&
            Resolve(handle, "ibv_dereg_mr", &a.dereg_mr, &loaded) &&
            Resolve(handle, "ibv_create_comp_channel", &a.create_comp_channel, &loaded) &&
            Resolve(handle, "ibv_destroy_comp_channel", &a.destroy_comp_channel, &loaded) &&
            Resolve(handle, "ibv_create_cq", &a.create_cq, &loaded) &&
            Resolve(handle, "ibv_destroy_cq", &a.destroy_cq, &loaded) &&
            Resolve(handle, "ibv_get_cq_event", &a.get_cq_event, &loaded) &&
            Resolve(handle, "ibv_ack_cq_events", &a.ack_cq_events, &loaded) &&
            Resolve(handle, "ibv_create_qp", &a.create_qp, &loaded) &&
            Resolve(handle, "ibv_modify_qp", &a.modify_qp, &loaded) &&
            Resolve(handle, "ibv_destroy_qp", &a.destroy_qp, &loaded);
  loaded.ok = ok;
  return loaded;
}

}  // namespace

const IbverbsApi* LoadIbverbs(std::string* why) {
  static const Loaded* loaded = new Loaded(Load());  // once; never destroyed
  if (!loaded->ok) {
    if (why != nullptr) *why = loaded->why;
    return nullptr;
  }
  return &loaded->api;
}

int QueryPort(const IbverbsApi& api, ibv_context* ctx, uint8_t port, ibv_port_attr* attr) {
  verbs_context* vctx = verbs_get_ctx_op(ctx, query_port);
  if (vctx != nullptr) return vctx->query_port(ctx, port, attr, sizeof(*attr));
  std::memset(attr, 0, sizeof(*attr));
  return api.query_port(ctx, port, reinterpret_cast<_compat_ibv_port_attr*>(attr));
}

}  // namespace memkv::verbs
