"""Generation by vLLM's CPU backend with MemKV as its KV offloading tier.

vLLM's `LLM` (the offline engine of the released package) loads a tiny
random-weight Llama model made here (2 layers, saved with a tokenizer built
in code: nothing is downloaded) and generates greedily, with the
kv_transfer_config a user gives `vllm serve` (docs/engines/vllm.md): the
OffloadingConnector with a TieringOffloadingSpec whose secondary_tiers holds
the MemKV tier entry, pointing at a memkv server process.

vLLM's CPU backend does not run that configuration as given: its
OffloadingConnector worker, the part that copies KV blocks between the
model's KV cache and the CPU primary tier, is made by
CPUOffloadingSpec.get_worker, which refuses every platform but CUDA and XPU
("CPU Offloading is currently only supported on CUDA-alike and XPU GPUs",
vllm/v1/kv_offload/cpu/spec.py; its CPUOffloadingWorker also asserts CUDA or
XPU tensors). test_stock_configuration_on_the_cpu_backend runs the
configuration as given and records that refusal (an expected failure, with
vLLM's exact error, on the CPU platform only; anything else fails).

test_generation_restores_the_prefix_from_memkv runs everything else of
vLLM's as released: the engine, its scheduler and KV cache manager, the
OffloadingConnector (scheduler and worker sides), the TieringOffloadingSpec
and TieringOffloadingManager with vLLM's CPU primary tier (its shared-memory
region), and the tier made by vLLM's SecondaryTierFactory from the entry.
The one part that is the test's is the copy vLLM's CPU backend lacks:
HostKVTransferWorker, returned by a TieringOffloadingSpec subclass
(HostTieringSpec, loaded by vLLM from spec_module_path) in place of vLLM's
CPUOffloadingWorker, copies the blocks vLLM's connector names between the
model's KV cache tensors and the primary tier's rows (torch indexing, on the
connector's calls, completed at once).

Each engine runs in a child process (this file run as a script, the engine
core in that process: VLLM_ENABLE_V1_MULTIPROCESSING=0), so that vLLM's
process-wide settings (thread binding, torch.set_num_threads) stay out of
the pytest process; the child prints what it saw as one JSON line.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List

import pytest

import memkv
import memkv.testing

import torch
from vllm.v1.kv_offload.base import OffloadingWorker, TransferResult
from vllm.v1.kv_offload.cpu.shared_offload_region import SharedOffloadRegion
from vllm.v1.kv_offload.tiering.spec import TieringOffloadingSpec

ADAPTER = "memkv.adapters.vllm"
BLOCK = 32            # tokens per KV block (vLLM's CPU attention takes multiples of 32)
PROMPT_BLOCKS = 3     # full blocks of the prompt: the chunks offloaded
PROMPT_TOKENS = PROMPT_BLOCKS * BLOCK + 10
MAX_TOKENS = 8
VOCAB = 320
RESULT = "MEMKV-GENERATE-RESULT "
# vLLM's refusal of its OffloadingConnector worker on the CPU platform.
CPU_REFUSAL = "CPU Offloading is currently only supported on CUDA-alike and XPU GPUs"
CHILD_TIMEOUT_S = 150


# ------------------------------------------------ the copy vLLM's CPU backend lacks

class HostKVTransferWorker(OffloadingWorker):
    """vLLM's OffloadingWorker contract for KV caches in host memory: the
    stores and loads vLLM's OffloadingConnector worker submits, as copies
    between the model's KV cache tensors (CanonicalKVCaches: one int8
    (num_blocks, page bytes) tensor per KV cache tensor) and the primary
    tier's rows (this worker's view of vLLM's SharedOffloadRegion, laid out
    as CPUOffloadingWorker lays it out). Each job is done when submitted."""

    made: List["HostKVTransferWorker"] = []

    def __init__(self, kv_caches: Any, blocks_per_chunk: int, region: SharedOffloadRegion) -> None:
        assert blocks_per_chunk == 1, f"one KV block per offloaded chunk here, not {blocks_per_chunk}"
        self.region = region
        self.kv = [t.tensor for t in kv_caches.tensors]
        self.rows = [region.create_next_worker_view(t.page_size_bytes) for t in kv_caches.tensors]
        self.finished: List[TransferResult] = []
        self.stored_blocks = 0
        self.loaded_blocks = 0
        HostKVTransferWorker.made.append(self)

    def _copy(self, job_id: int, src: List[torch.Tensor], src_ids: Any, dst: List[torch.Tensor], dst_ids: Any) -> int:
        start = time.perf_counter()
        s = torch.from_numpy(src_ids.astype("int64"))
        d = torch.from_numpy(dst_ids.astype("int64"))
        assert len(s) == len(d), (len(s), len(d))
        size = 0
        for a, b in zip(src, dst):
            b[d] = a[s]
            size += a.shape[1] * len(s)
        self.finished.append(TransferResult(job_id=job_id, success=True, transfer_size=size,
                                            transfer_time=time.perf_counter() - start))
        return len(s)

    def submit_store(self, job_id: int, src_spec: Any, dst_spec: Any) -> bool:
        self.stored_blocks += self._copy(job_id, self.kv, src_spec.block_ids, self.rows, dst_spec.block_ids)
        return True

    def submit_load(self, job_id: int, src_spec: Any, dst_spec: Any) -> bool:
        self.loaded_blocks += self._copy(job_id, self.rows, src_spec.block_ids, self.kv, dst_spec.block_ids)
        return True

    def get_finished(self) -> List[TransferResult]:
        done, self.finished = self.finished, []
        return done

    def wait(self, job_ids: Any) -> None:
        return None  # every job is done when submitted

    def shutdown(self) -> None:
        self.kv = self.rows = []  # no view of the region left: it can be unmapped
        self.region.cleanup()


class HostTieringSpec(TieringOffloadingSpec):
    """vLLM's TieringOffloadingSpec (primary tier, secondary tiers, manager:
    all vLLM's) whose worker is HostKVTransferWorker rather than vLLM's
    CPUOffloadingWorker, which takes CUDA and XPU KV caches only."""

    def get_worker(self, kv_caches: Any) -> OffloadingWorker:
        if not self._worker:
            region = SharedOffloadRegion(engine_id=self._engine_id, num_chunks=self.num_chunks, rank=0,
                                         kv_bytes_per_chunk=self.kv_bytes_per_chunk,
                                         cpu_page_size=self.cpu_page_size_per_worker)
            self._worker = HostKVTransferWorker(kv_caches, self.blocks_per_chunk, region)
        return self._worker


# ------------------------------------------------------------------ the model

def make_tiny_model(directory: str) -> None:
    """A random-weight Llama (2 layers, hidden 128, 2 heads of 64: vLLM's CPU
    attention has no kernel for head size 16) and a word-level tokenizer of
    VOCAB words, built in code and saved side by side."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    while len(vocab) < VOCAB:
        vocab[f"w{len(vocab)}"] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>",
                            eos_token="</s>").save_pretrained(directory)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=512,
                         bos_token_id=1, eos_token_id=2, initializer_range=0.2)
    torch.manual_seed(0)
    LlamaForCausalLM(config).to(torch.float32).save_pretrained(directory)


def prompt_text() -> str:
    """PROMPT_TOKENS words (one token each), none of them a special token."""
    return " ".join(f"w{3 + (i * 37) % (VOCAB - 3)}" for i in range(PROMPT_TOKENS))


# ------------------------------------------------------- the child (one engine)

def _tier(llm: Any) -> Any:
    """The tier vLLM built (in this process: the engine core runs in it)."""
    core = llm.llm_engine.engine_core.engine_core  # InprocClient -> EngineCore
    manager = core.scheduler.connector.connector_scheduler.manager
    [tier] = manager.secondary_tiers
    return tier


def _generate(llm: Any) -> Dict[str, Any]:
    from vllm import SamplingParams
    [out] = llm.generate([prompt_text()], SamplingParams(temperature=0, max_tokens=MAX_TOKENS, logprobs=0),
                         use_tqdm=False)
    [completion] = out.outputs
    return {"prompt_tokens": len(out.prompt_token_ids), "tokens": list(completion.token_ids),
            "logprobs": [lp[t].logprob for lp, t in zip(completion.logprobs, completion.token_ids)],
            "num_cached_tokens": out.num_cached_tokens}


def _poll(condition: Callable[[], Any], timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout_s} s")
        time.sleep(0.005)


def child(args: Dict[str, Any]) -> Dict[str, Any]:
    """One engine: `stock` runs the configuration as a user gives it; `writer`
    generates (the chunks cascade to MemKV), then resets vLLM's prefix cache
    and its connector's cache (the primary tier) and generates again;
    `reader` is a fresh engine on the same server that generates once."""
    from vllm import LLM
    from vllm.config import KVTransferConfig

    entry = {"type": "MemKVTierManager", "module_path": ADAPTER, "servers": [args["server"]],
             "auth_key": args["auth_key"], "transport": "tcp", "timeout_ms": 5000}
    extra: Dict[str, Any] = {"spec_name": "TieringOffloadingSpec", "cpu_bytes_to_use": 8 << 20,
                             "secondary_tiers": [entry]}
    if args["role"] != "stock":
        extra.update(spec_name="HostTieringSpec", spec_module_path="__main__")
    report: Dict[str, Any] = {"role": args["role"]}
    try:
        llm = LLM(model=args["model"], tokenizer=args["model"], dtype="float32", enforce_eager=True,
                  max_model_len=256, block_size=BLOCK, max_num_seqs=2, seed=0,
                  kv_transfer_config=KVTransferConfig(kv_connector="OffloadingConnector", kv_role="kv_both",
                                                      kv_connector_extra_config=extra))
    except Exception as e:
        import traceback
        frame = traceback.extract_tb(e.__traceback__)[-1]
        report["error"] = {"type": type(e).__name__, "message": str(e),
                           "raised_at": f"{frame.filename.split('site-packages/')[-1]}:{frame.lineno} "
                                        f"in {frame.name}"}
        return report
    from vllm.platforms import current_platform
    report["platform"] = "cpu" if current_platform.is_cpu() else str(current_platform.device_type)
    tier = _tier(llm)
    identity = getattr(tier, "identity", None)
    report["tier"] = {"type": type(tier).__module__ + "." + type(tier).__name__, "namespace": tier.namespace,
                      "row_bytes": tier.row_bytes, "identity": None if identity is None else identity.options()}
    report["first"] = _generate(llm)
    if args["role"] in ("writer", "stock"):
        # The cascade of the prompt's chunks ends after the request does.
        def cascaded() -> bool:
            stats = tier.stats()
            return stats["stored_chunks"] + stats["store_jobs_failed"] + stats["store_jobs_shed"] >= PROMPT_BLOCKS
        _poll(cascaded, 30, "cascade of the prompt's chunks to MemKV")
    report["first"]["tier_stats"] = tier.stats()
    if args["role"] == "writer":
        assert llm.reset_prefix_cache(reset_connector=True), "vLLM did not reset its prefix cache"
        report["after_reset"] = _generate(llm)
        report["after_reset"]["tier_stats"] = tier.stats()
    report["worker"] = [{"stored_blocks": w.stored_blocks, "loaded_blocks": w.loaded_blocks}
                        for w in HostKVTransferWorker.made]
    llm.llm_engine.engine_core.shutdown()
    return report


# ------------------------------------------------------------------- the tests

@pytest.fixture
def server():
    """A server per test: each test's chunks are its own."""
    s = memkv.testing.LocalServer(memory="256 MiB", workers=1).start()
    yield s
    assert s.stop() == 0, s.stderr()


@pytest.fixture(scope="module")
def model_dir():
    with tempfile.TemporaryDirectory(prefix="memkv-tiny-llama-") as d:
        make_tiny_model(d)
        yield d


def run_engine(role: str, model: str, server: Any) -> Dict[str, Any]:
    """Runs child(role) in a fresh interpreter; its report."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_ENABLE_V1_MULTIPROCESSING="0",
               VLLM_CPU_KVCACHE_SPACE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1")
    args = json.dumps({"role": role, "model": model, "server": server.address, "auth_key": server.auth_key})
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), args], env=env, capture_output=True,
                          text=True, timeout=CHILD_TIMEOUT_S)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT)]
    if proc.returncode != 0 or len(lines) != 1:
        tail = (proc.stdout + proc.stderr)[-6000:]
        raise AssertionError(f"the {role} engine exited {proc.returncode} without its report:\n{tail}")
    return json.loads(lines[0][len(RESULT):])


def keys_under(server: Any, tier: Dict[str, Any]) -> List[bytes]:
    """The keys under the tier's namespace, as its cache identity sees them."""
    with server.client(**(tier.get("identity") or {})) as client:
        return list(client.iter_keys(prefix=tier["namespace"] + "/"))


def test_stock_configuration_on_the_cpu_backend(server, model_dir):
    """The kv_transfer_config of docs/engines/vllm.md as given (the
    OffloadingConnector, TieringOffloadingSpec, the MemKV tier in
    secondary_tiers) on vLLM's CPU backend: vLLM refuses its own
    OffloadingConnector worker on the CPU platform (an expected failure with
    vLLM's exact error); where vLLM runs it, one generation cascades the
    prompt's chunks to MemKV."""
    report = run_engine("stock", model_dir, server)
    error = report.get("error")
    if error is not None:
        text = f"{error['type']}: {error['message']} (raised at {error['raised_at']})"
        print(f"vLLM's CPU backend with the OffloadingConnector: {text}")
        if CPU_REFUSAL in error["message"] and "kv_offload/cpu/spec.py" in error["raised_at"]:
            pytest.xfail(f"vLLM refuses its OffloadingConnector worker on the CPU platform: {text}")
        raise AssertionError(f"vLLM did not start with the MemKV tier: {text}")
    first = report["first"]
    assert report["tier"]["type"] == f"{ADAPTER}.MemKVTierManager"
    assert len(first["tokens"]) == MAX_TOKENS
    assert first["tier_stats"]["stored_chunks"] == PROMPT_BLOCKS, first["tier_stats"]
    assert len(keys_under(server, report["tier"])) >= PROMPT_BLOCKS


def test_generation_restores_the_prefix_from_memkv(server, model_dir):
    """vLLM's CPU backend generates greedily with MemKV as its KV tier
    (vLLM's engine, OffloadingConnector, TieringOffloadingManager and CPU
    primary tier; the tier from the entry; the test's host-memory block copy
    as the connector's worker): the prompt's full chunks cascade to MemKV;
    after vLLM resets its prefix cache and primary tier, and in a fresh
    engine, the prefix is promoted from MemKV and loaded rather than
    recomputed, and greedy decoding gives the same tokens and logprobs."""
    writer = run_engine("writer", model_dir, server)
    assert "error" not in writer, writer["error"]
    assert writer["platform"] == "cpu"
    tier = writer["tier"]
    assert tier["type"] == f"{ADAPTER}.MemKVTierManager"
    first, again = writer["first"], writer["after_reset"]
    assert first["prompt_tokens"] == PROMPT_TOKENS and len(first["tokens"]) == MAX_TOKENS
    assert first["num_cached_tokens"] == 0

    # The first generation stored the prompt's full blocks in MemKV (the
    # partial last block and the generated tokens are not offloaded).
    stats = first["tier_stats"]
    assert stats["store_jobs"] >= 1 and stats["store_jobs_failed"] == 0 and stats["store_jobs_shed"] == 0
    assert stats["stored_chunks"] == PROMPT_BLOCKS and stats["loaded_chunks"] == 0
    assert stats["io"]["put_ok"] == PROMPT_BLOCKS and stats["io"]["errors"] == 0
    assert stats["io"]["put_bytes"] == PROMPT_BLOCKS * tier["row_bytes"]
    keys = keys_under(server, tier)
    assert len(keys) == PROMPT_BLOCKS, keys
    with server.client(**(tier["identity"] or {})) as client:
        assert all(len(client.get(k)) == tier["row_bytes"] for k in keys)
    if tier["identity"] is not None:
        # The tier's cache identity is the engine's own configuration.
        assert tier["identity"]["identity_model"] == model_dir
        assert tier["identity"]["identity_kv_dtype"] == "float32"
        assert tier["identity"]["identity_block_tokens"] == BLOCK
        assert (tier["identity"]["identity_tp_rank"], tier["identity"]["identity_tp_size"]) == (0, 1)
        assert tier["identity"]["identity_engine"] == "vllm" and tier["identity"]["identity_engine_version"]
        with server.client() as plain:  # another identity (none): the server keeps the tier's keys apart
            assert not list(plain.iter_keys(prefix=tier["namespace"] + "/"))

    # Prefix cache and primary tier reset: the prefix comes back from MemKV.
    stats = again["tier_stats"]
    assert stats["lookup_hits"] >= PROMPT_BLOCKS
    assert stats["load_jobs"] >= 1 and stats["load_jobs_failed"] == 0
    assert stats["loaded_chunks"] == PROMPT_BLOCKS and stats["io"]["get_hits"] == PROMPT_BLOCKS
    assert stats["stored_chunks"] == PROMPT_BLOCKS  # nothing computed again to store
    # vLLM waited for the promotions: every chunk came in time.
    assert (stats["io"]["restored_in_time"], stats["io"]["restored_late"]) == (PROMPT_BLOCKS, 0)
    assert again["num_cached_tokens"] == PROMPT_BLOCKS * BLOCK
    [worker] = writer["worker"]
    assert worker["stored_blocks"] == PROMPT_BLOCKS and worker["loaded_blocks"] == PROMPT_BLOCKS
    assert again["tokens"] == first["tokens"]
    assert again["logprobs"] == pytest.approx(first["logprobs"], abs=1e-4)

    # A fresh engine (another process) on the same server.
    reader = run_engine("reader", model_dir, server)
    assert "error" not in reader, reader["error"]
    assert reader["tier"]["namespace"] == tier["namespace"] and reader["tier"]["identity"] == tier["identity"]
    fresh = reader["first"]
    stats = fresh["tier_stats"]
    assert stats["lookup_hits"] >= PROMPT_BLOCKS and stats["load_jobs_failed"] == 0
    assert stats["loaded_chunks"] == PROMPT_BLOCKS and stats["io"]["get_hits"] == PROMPT_BLOCKS
    assert stats["stored_chunks"] == 0
    assert fresh["num_cached_tokens"] == PROMPT_BLOCKS * BLOCK
    assert reader["worker"] == [{"stored_blocks": 0, "loaded_blocks": PROMPT_BLOCKS}]
    assert fresh["tokens"] == first["tokens"]
    assert fresh["logprobs"] == pytest.approx(first["logprobs"], abs=1e-4)
    assert len(keys_under(server, tier)) == PROMPT_BLOCKS


if __name__ == "__main__":
    print(RESULT + json.dumps(child(json.loads(sys.argv[1]))), flush=True)
