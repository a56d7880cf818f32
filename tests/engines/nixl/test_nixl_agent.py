"""The `nixl` package from PyPI as MemKV's NIXL partner, on a CPU-only
machine: its agent starts, and the backend plugins it ships answer the plugin
API version MemKV's plugin (src/nixl, libplugin_MEMKV.so) is written to.

The wheel carries NIXL's libraries and plugins but not its headers, which a
plugin is compiled against: MemKV's plugin is built with the headers of a
NIXL source tree (scripts/nixl-check.sh NIXL_PREFIX, docs/nixl.md). So this
test checks what a user's installed NIXL will ask of the plugin: that it
loads plugins through `nixl_plugin_init` and the API version it expects."""

import ctypes
import glob
import importlib.metadata
import os

import pytest

from nixl._api import nixl_agent, nixl_agent_config

# NIXL_PLUGIN_API_VERSION of the NIXL sources MemKV's plugin is built and
# verified with (1.4.0; the backend interface, NIXL's backend headers, is
# unchanged from there to the sources of 2026-08).
MEMKV_PLUGIN_API_VERSION = 1
# Plugins the CPU-only machine cannot load (their libraries come with CUDA or
# a fabric's own packages), by the library the loader names.
NEEDS_ELSEWHERE = ("libcuda", "libcudart", "libfabric", "libred_client")


def nixl_libs():
    """The directory of libnixl.so and plugins/ in the installed variant."""
    variant = importlib.import_module("nixl_cu12")
    found = glob.glob(os.path.join(os.path.dirname(os.path.dirname(variant.__file__)), ".nixl_cu12*.libs"))
    assert found, f"no NIXL library directory beside {variant.__file__}"
    return found[0]


def test_the_agent_starts_and_lists_its_plugins():
    """nixl_agent of the released package starts without a GPU and lists the backend plugins it found."""
    agent = nixl_agent("memkv-partner", nixl_agent_config(backends=[]))
    plugins = agent.get_plugin_list()
    print(f"nixl {importlib.metadata.version('nixl')} (nixl-cu12 {importlib.metadata.version('nixl-cu12')}): "
          f"plugins {plugins}")
    assert "POSIX" in plugins and "OBJ" in plugins, plugins
    assert "MEMKV" not in plugins  # not shipped: built from MemKV's sources (docs/nixl.md)


def test_released_plugins_speak_the_plugin_api_memkv_is_built_for():
    """Every plugin of the released package that loads here reports NIXL_PLUGIN_API_VERSION equal to MemKV's."""
    libs = nixl_libs()
    for name in ("libnixl_common.so", "libnixl.so"):
        ctypes.CDLL(os.path.join(libs, name), mode=ctypes.RTLD_GLOBAL)
    versions, unloadable = {}, {}
    for path in sorted(glob.glob(os.path.join(libs, "plugins", "libplugin_*.so"))):
        name = os.path.basename(path)[len("libplugin_"):-len(".so")]
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            unloadable[name] = str(e)
            continue
        init = lib.nixl_plugin_init
        init.restype = ctypes.POINTER(ctypes.c_int)  # nixlBackendPlugin starts with int api_version
        versions[name] = init()[0]
    print(f"plugin API versions: {versions}; not loadable here: {sorted(unloadable)}")
    for name, error in unloadable.items():
        assert any(lib in error for lib in NEEDS_ELSEWHERE), f"plugin {name}: {error}"
    assert versions.keys() >= {"POSIX", "OBJ"}, versions
    assert set(versions.values()) == {MEMKV_PLUGIN_API_VERSION}, versions
