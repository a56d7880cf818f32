// The libibverbs entry points MemKV calls, resolved at run time.
//
// libmemkv, the Python extension and the server do not link libibverbs: they
// dlopen("libibverbs.so.1") on first use, so a host without rdma-core (a GPU
// node image, a laptop, a CI container) loads MemKV and serves over TCP,
// and a host with it uses RDMA. Only the non-inline functions are here; the
// data-path calls (ibv_post_send, ibv_poll_cq, ibv_req_notify_cq) are inline
// in <infiniband/verbs.h> and go through the provider's ops table.
//
// Thread safety: LoadIbverbs may be called from any thread; it loads once
// and the table it returns is immutable and lives for the process.
#ifndef MEMKV_VERBS_IBVERBS_API_H_
#define MEMKV_VERBS_IBVERBS_API_H_

#include <infiniband/verbs.h>

#include <string>

namespace memkv::verbs {

struct IbverbsApi {
  ibv_device** (*get_device_list)(int*);
  void (*free_device_list)(ibv_device**);
  const char* (*get_device_name)(ibv_device*);
  ibv_context* (*open_device)(ibv_device*);
  int (*close_device)(ibv_context*);
  int (*query_device)(ibv_context*, ibv_device_attr*);
  int (*query_port)(ibv_context*, uint8_t, _compat_ibv_port_attr*);
  int (*query_gid_ex)(ibv_context*, uint32_t, uint32_t, ibv_gid_entry*, uint32_t, size_t);
  ibv_pd* (*alloc_pd)(ibv_context*);
  int (*dealloc_pd)(ibv_pd*);
  ibv_mr* (*reg_mr)(ibv_pd*, void*, size_t, int);
  int (*dereg_mr)(ibv_mr*);
  ibv_comp_channel* (*create_comp_channel)(ibv_context*);
  int (*destroy_comp_channel)(ibv_comp_channel*);
  ibv_cq* (*create_cq)(ibv_context*, int, void*, ibv_comp_channel*, int);
  int (*destroy_cq)(ibv_cq*);
  int (*get_cq_event)(ibv_comp_channel*, ibv_cq**, void**);
  void (*ack_cq_events)(ibv_cq*, unsigned int);
  ibv_qp* (*create_qp)(ibv_pd*, ibv_qp_init_attr*);
  int (*modify_qp)(ibv_qp*, ibv_qp_attr*, int);
  int (*destroy_qp)(ibv_qp*);
};

// The library MemKV loads: "libibverbs.so.1", found the way the dynamic
// loader finds any library (LD_LIBRARY_PATH, ld.so.cache, /usr/lib...).
inline constexpr const char* kIbverbsLibrary = "libibverbs.so.1";

// The table, or nullptr when libibverbs cannot be loaded or lacks one of the
// entry points above; then *why (if given) says which and how to fix it.
// The outcome of the first call is kept: later calls return the same.
const IbverbsApi* LoadIbverbs(std::string* why = nullptr);

// ibv_query_port as <infiniband/verbs.h> defines it (an inline that asks the
// provider first and falls back to the library's compat entry point), over
// the loaded table.
int QueryPort(const IbverbsApi& api, ibv_context* ctx, uint8_t port, ibv_port_attr* attr);

}  // namespace memkv::verbs

#endif  // MEMKV_VERBS_IBVERBS_API_H_
