"""Inference-engine adapters over the memkv client (docs/engines/).

    memkv.adapters.sglang    SGLang HiCache storage backend (MemKVHiCacheStorage)
    memkv.adapters.vllm      vLLM KV offloading secondary tier (MemKVTierManager)
    memkv.adapters.lmcache   LMCache L2 native plugin and storage plugin

Each loads through its engine's own plugin mechanism. The engines are not
imported here: a module imports its engine only when it is itself imported.
"""
