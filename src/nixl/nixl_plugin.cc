// libplugin_MEMKV.so: the NIXL glue of the MEMKV backend. It translates
// NIXL's descriptor lists, handles and statuses to and from the
// project-owned TransferEngine (transfer_engine.h), which does the work;
// nothing else lives here. Built only against an installed NIXL
// (-DMEMKV_NIXL_PREFIX; docs/nixl.md).
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

// NIXL's installed headers (MEMKV_NIXL_PREFIX).
#include <backend/backend_engine.h>
#include <backend/backend_plugin.h>
#include <common/nixl_log.h>
#include <nixl_types.h>

#include "nixl/settings.h"
#include "nixl/transfer_engine.h"

namespace {

using memkv::Status;
using memkv::StatusCode;
using memkv::nixl::Direction;
using memkv::nixl::LocalSpan;
using memkv::nixl::ObjectSpan;
using memkv::nixl::TransferEngine;
using memkv::nixl::TransferState;

nixl_status_t ToNixl(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk:
      return NIXL_SUCCESS;
    case StatusCode::kNotFound:
      return NIXL_ERR_NOT_FOUND;
    case StatusCode::kInvalidArgument:
    case StatusCode::kTooLarge:
      return NIXL_ERR_INVALID_PARAM;
    case StatusCode::kFailedPrecondition:
      return NIXL_ERR_REPOST_ACTIVE;
    default:
      return NIXL_ERR_BACKEND;
  }
}

// What registerMem returned: an object (its devId) or a registered buffer.
class MemkvMetadata : public nixlBackendMD {
 public:
  MemkvMetadata(nixl_mem_t mem, uint64_t object, void* buffer)
      : nixlBackendMD(true), mem_type(mem), dev_id(object), base(buffer) {}
  nixl_mem_t mem_type;
  uint64_t dev_id;
  void* base;
};

class MemkvRequest : public nixlBackendReqH {
 public:
  explicit MemkvRequest(std::unique_ptr<memkv::nixl::Transfer> t) : transfer(std::move(t)) {}
  std::unique_ptr<memkv::nixl::Transfer> transfer;
};

class nixlMemkvEngine : public nixlBackendEngine {
 public:
  explicit nixlMemkvEngine(const nixlBackendInitParams* init_params) : nixlBackendEngine(init_params) {
    std::map<std::string, std::string> params;
    if (init_params->customParams != nullptr) {
      params.insert(init_params->customParams->begin(), init_params->customParams->end());
    }
    auto env = [](std::string_view name) -> std::optional<std::string> {
      const char* v = std::getenv(std::string(name).c_str());
      return v == nullptr ? std::nullopt : std::optional<std::string>(v);
    };
    auto settings = memkv::nixl::SettingsFrom(params, env);
    if (!settings.ok()) {
      NIXL_ERROR << "MEMKV backend: " << settings.status().message();
      initErr = true;
      return;
    }
    auto engine = TransferEngine::Create(*settings);
    if (!engine.ok()) {
      NIXL_ERROR << "MEMKV backend: " << engine.status().ToString();
      initErr = true;
      return;
    }
    engine_ = std::move(engine).value();
  }

  bool supportsRemote() const override { return false; }
  bool supportsLocal() const override { return true; }
  bool supportsNotif() const override { return false; }
  nixl_mem_list_t getSupportedMems() const override { return {DRAM_SEG, OBJ_SEG}; }

  nixl_status_t registerMem(const nixlBlobDesc& mem, const nixl_mem_t& nixl_mem, nixlBackendMD*& out) override {
    if (nixl_mem == OBJ_SEG) {
      auto key = engine_->RegisterObject(mem.devId, mem.metaInfo);
      if (!key.ok()) return Fail("registerMem(OBJ_SEG)", key.status());
      out = new MemkvMetadata(OBJ_SEG, mem.devId, nullptr);
      return NIXL_SUCCESS;
    }
    if (nixl_mem == DRAM_SEG) {
      void* base = reinterpret_cast<void*>(mem.addr);
      Status s = engine_->RegisterBuffer(std::span<uint8_t>(static_cast<uint8_t*>(base), mem.len));
      if (!s.ok()) return Fail("registerMem(DRAM_SEG)", s);
      out = new MemkvMetadata(DRAM_SEG, mem.devId, base);
      return NIXL_SUCCESS;
    }
    NIXL_ERROR << "MEMKV backend: memory type " << nixlEnumStrings::memTypeStr(nixl_mem)
               << " is not supported; it takes DRAM_SEG and OBJ_SEG";
    return NIXL_ERR_NOT_SUPPORTED;
  }

  nixl_status_t deregisterMem(nixlBackendMD* meta) override {
    std::unique_ptr<MemkvMetadata> md(static_cast<MemkvMetadata*>(meta));
    if (md == nullptr) return NIXL_SUCCESS;
    Status s = md->mem_type == OBJ_SEG ? engine_->UnregisterObject(md->dev_id) : engine_->UnregisterBuffer(md->base);
    // An object re-registered under the same devId was unmapped already.
    if (!s.ok() && s.code() != StatusCode::kNotFound) return Fail("deregisterMem", s);
    return NIXL_SUCCESS;
  }

  nixl_status_t connect(const std::string&) override { return NIXL_SUCCESS; }
  nixl_status_t disconnect(const std::string&) override { return NIXL_SUCCESS; }
  nixl_status_t unloadMD(nixlBackendMD*) override { return NIXL_SUCCESS; }

  nixl_status_t loadLocalMD(nixlBackendMD* input, nixlBackendMD*& output) override {
    output = input;
    return NIXL_SUCCESS;
  }

  nixl_status_t prepXfer(const nixl_xfer_op_t& operation, const nixl_meta_dlist_t& local,
                         const nixl_meta_dlist_t& remote, const std::string&, nixlBackendReqH*& handle,
                         const nixl_opt_b_args_t*) const override {
    if (operation != NIXL_WRITE && operation != NIXL_READ) {
      NIXL_ERROR << "MEMKV backend: operation " << operation << " is neither NIXL_WRITE nor NIXL_READ";
      return NIXL_ERR_INVALID_PARAM;
    }
    if (local.getType() != DRAM_SEG || remote.getType() != OBJ_SEG) {
      NIXL_ERROR << "MEMKV backend: a transfer moves DRAM_SEG (local) to or from OBJ_SEG (remote); got "
                 << nixlEnumStrings::memTypeStr(local.getType()) << " and "
                 << nixlEnumStrings::memTypeStr(remote.getType());
      return NIXL_ERR_INVALID_PARAM;
    }
    std::vector<LocalSpan> local_spans(static_cast<size_t>(local.descCount()));
    std::vector<ObjectSpan> object_spans(static_cast<size_t>(remote.descCount()));
    for (int i = 0; i < local.descCount(); ++i) local_spans[i] = {local[i].addr, local[i].len};
    for (int i = 0; i < remote.descCount(); ++i) object_spans[i] = {remote[i].devId, remote[i].addr, remote[i].len};
    auto transfer = engine_->Prepare(operation == NIXL_WRITE ? Direction::kWrite : Direction::kRead, local_spans,
                                     object_spans);
    if (!transfer.ok()) return Fail("prepXfer", transfer.status());
    handle = new MemkvRequest(std::move(transfer).value());
    return NIXL_SUCCESS;
  }

  nixl_status_t postXfer(const nixl_xfer_op_t&, const nixl_meta_dlist_t&, const nixl_meta_dlist_t&,
                         const std::string&, nixlBackendReqH*& handle, const nixl_opt_b_args_t*) const override {
    auto* request = static_cast<MemkvRequest*>(handle);
    if (request == nullptr) return NIXL_ERR_INVALID_PARAM;
    Status s = engine_->Post(*request->transfer);
    if (!s.ok()) return Fail("postXfer", s);
    return engine_->Poll(*request->transfer).state == TransferState::kDone ? NIXL_SUCCESS : NIXL_IN_PROG;
  }

  nixl_status_t checkXfer(nixlBackendReqH* handle) const override {
    auto* request = static_cast<MemkvRequest*>(handle);
    if (request == nullptr) return NIXL_ERR_INVALID_PARAM;
    memkv::nixl::TransferStatus st = engine_->Poll(*request->transfer);
    switch (st.state) {
      case TransferState::kInProgress:
        return NIXL_IN_PROG;
      case TransferState::kDone:
        return NIXL_SUCCESS;
      case TransferState::kIdle:
        return NIXL_ERR_NOT_POSTED;
      case TransferState::kFailed:
        break;
    }
    return Fail("transfer", st.error);
  }

  nixl_status_t releaseReqH(nixlBackendReqH* handle) const override {
    delete static_cast<MemkvRequest*>(handle);  // cancels what has not started; never blocks
    return NIXL_SUCCESS;
  }

  nixl_status_t queryMem(const nixl_reg_dlist_t& descs, std::vector<nixl_query_resp_t>& resp) const override {
    std::vector<std::string> keys;
    for (int i = 0; i < descs.descCount(); ++i) {
      keys.push_back(TransferEngine::ValueKey(engine_->ObjectKey(descs[i].devId, descs[i].metaInfo), descs[i].addr));
    }
    auto present = engine_->Exists(keys);
    if (!present.ok()) return Fail("queryMem", present.status());
    resp.assign(keys.size(), std::nullopt);
    for (size_t i = 0; i < keys.size(); ++i) {
      if ((*present)[i]) resp[i] = nixl_b_params_t{};
    }
    return NIXL_SUCCESS;
  }

 private:
  static nixl_status_t Fail(const char* what, const Status& s) {
    NIXL_ERROR << "MEMKV backend: " << what << ": " << s.ToString();
    return ToNixl(s);
  }

  std::unique_ptr<TransferEngine> engine_;
};

nixl_b_params_t BackendOptions() {
  nixl_b_params_t options;
  for (const memkv::nixl::Parameter& p : memkv::nixl::Parameters()) options[std::string(p.name)] = "";
  return options;
}

using MemkvPlugin = nixlBackendPluginCreator<nixlMemkvEngine>;

}  // namespace

extern "C" NIXL_PLUGIN_EXPORT nixlBackendPlugin* nixl_plugin_init() {
  return MemkvPlugin::create(NIXL_PLUGIN_API_VERSION, "MEMKV", MEMKV_VERSION_STRING, BackendOptions(),
                             {DRAM_SEG, OBJ_SEG});
}

extern "C" NIXL_PLUGIN_EXPORT void nixl_plugin_fini() {}
