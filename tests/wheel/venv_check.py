"""Run inside a virtual environment the memkv wheel was installed into
(wheel_test.sh): the package imports from the venv, values go and come back
through a real server, vLLM's plugin loader finds the entry point, and the
verbs library is loaded at run time or not at all.

    python venv_check.py MEMKV_BINARY {with-verbs|without-verbs}
"""

import importlib.metadata
import os
import sys


def loaded_libraries():
    with open("/proc/self/maps") as f:
        return {line.split()[-1] for line in f if "/" in line}


def verbs_loaded():
    return any(os.path.basename(p).startswith("libibverbs.so") for p in loaded_libraries())


def main():
    binary, mode = sys.argv[1], sys.argv[2]
    import memkv
    import memkv.testing

    where = os.path.dirname(memkv.__file__)
    assert where.startswith(sys.prefix), f"memkv imported from {where}, not from the venv {sys.prefix}"
    assert not verbs_loaded(), "importing memkv loaded libibverbs; it must be loaded only when RDMA is tried"

    # vLLM's plugin loader: entry_points(group=...) then ep.load() (Python
    # 3.9's importlib.metadata has only the dict form).
    if sys.version_info >= (3, 10):
        group = importlib.metadata.entry_points(group="vllm.general_plugins")
    else:
        group = importlib.metadata.entry_points().get("vllm.general_plugins", [])
    found = [ep for ep in group if ep.name == "memkv"]
    assert len(found) == 1, f"vllm.general_plugins entry point 'memkv': found {found}"
    register = found[0].load()
    assert register.__module__ == "memkv.adapters.vllm" and callable(register), register
    register()  # without vLLM: a no-op, as the adapter promises
    assert importlib.metadata.version("memkv") == memkv.__version__, (
        importlib.metadata.version("memkv"), memkv.__version__)

    with memkv.testing.LocalServer(binary) as server:
        client = server.client(transport="auto")
        values = {f"wheel-{i}": os.urandom(1 + i * 40_000) for i in range(8)}
        for key, value in values.items():
            client.put(key, value)
        for key, value in values.items():
            assert client.get(key) == value, f"{key}: wrong bytes"
        buf = bytearray(len(values["wheel-7"]))
        assert client.get_into("wheel-7", buf) == len(buf) and bytes(buf) == values["wheel-7"]
        stats = client.stats()
        # This host has no RDMA device (or no libibverbs): auto runs on TCP.
        assert stats["rdma_state"] == "no_device", stats
        if mode == "with-verbs":
            assert verbs_loaded(), "transport auto did not load libibverbs.so.1 although it is installed"
        else:
            assert not verbs_loaded(), "libibverbs was loaded although it is hidden"
            try:
                server.client(transport="rdma").put("rdma-key", b"x")
            except memkv.Error as e:
                assert "libibverbs.so.1" in str(e), f"transport rdma without libibverbs: {e}"
            else:
                raise AssertionError("transport rdma succeeded without libibverbs")
        client.close()
    print(f"venv check ({mode}): import from {where}, {len(values)} values round-tripped, entry point found")


if __name__ == "__main__":
    main()
