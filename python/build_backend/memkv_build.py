"""The PEP 517 build backend of the `memkv` Python package (pyproject.toml).

It has no Python dependencies, so `pip install .`, `pip wheel .` and an sdist
build work without a package index. It drives the project's own CMake build
with MEMKV_CLIENT_ONLY=ON (libmemkv and the extension, nothing else) for the
interpreter that runs it, then packs python/memkv as the build tree holds it:
the pure-Python files, the extension `_memkv` and `libmemkv.so.0` beside it
(the extension finds it through RUNPATH $ORIGIN). libibverbs is not linked
but loaded at run time, yaml-cpp is not used by the client, and xxhash is
linked in, so the wheel needs only glibc, libstdc++, libgcc and libcrypto 3
(docs/client-library.md, "Installing into a virtual environment").

Build tools the host must have: CMake >= 3.25, a C++20 compiler, Ninja or
make, pybind11's CMake files, the interpreter's headers, and the headers of
OpenSSL, xxhash and rdma-core (Debian: scripts/install-deps.sh --wheel).

config_settings (pip: --config-settings KEY=VALUE):
  build-dir  a CMake build directory to use and keep (default: a temporary
             one, removed afterwards); also MEMKV_WHEEL_BUILD_DIR
  jobs       parallel build jobs (default: the CPU count)
  strip      "0" keeps debug symbols in the shared objects (default: strip)
"""

import base64
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import zipfile

NAME = "memkv"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUMMARY = ("Python client of MemKV, a store for LLM KV-cache blocks, with engine adapters "
           "(SGLang, vLLM, LMCache)")
# Files of the package directory that go into the wheel.
PACKAGE_FILE = re.compile(r".*\.(py|pyi)$|^py\.typed$|^_memkv\..*\.so$|^libmemkv\.so\.0$")


def _version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(memkv\s+VERSION\s+([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("memkv build: no 'project(memkv VERSION x.y.z)' in CMakeLists.txt")
    return m.group(1)


def _read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def _metadata():
    description = _read("python/README.md")
    return "".join([
        "Metadata-Version: 2.1\n",
        f"Name: {NAME}\n",
        f"Version: {_version()}\n",
        f"Summary: {SUMMARY}\n",
        "License: Apache-2.0\n",
        "Requires-Python: >=3.9\n",
        "Classifier: Programming Language :: Python :: 3\n",
        "Classifier: Programming Language :: C++\n",
        "Classifier: Operating System :: POSIX :: Linux\n",
        "Description-Content-Type: text/markdown\n",
        "\n",
        description,
    ])


def _dist_info_name():
    return f"{NAME}-{_version()}.dist-info"


def _tag():
    """cpXY-cpXY[t]-linux_<arch>: the interpreter the extension was built for,
    and a plain linux platform tag: the wheel links the build host's libcrypto
    3 and libstdc++, which the manylinux policies do not allow."""
    soabi = sysconfig.get_config_var("SOABI") or ""
    m = re.match(r"cpython-(\d)(\d+)(t?)", soabi)
    if sys.implementation.name != "cpython" or not m:
        raise RuntimeError(f"memkv build: CPython is needed (this is {sys.implementation.name}, SOABI {soabi!r})")
    abi = f"cp{m.group(1)}{m.group(2)}{m.group(3)}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"cp{m.group(1)}{m.group(2)}-{abi}-{platform}"


def _setting(config_settings, key, env=None, default=None):
    value = (config_settings or {}).get(key)
    if value is None and env:
        value = os.environ.get(env) or None
    return default if value is None else value


def _run(cmd):
    print("memkv build:", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=sys.stderr)


def _cmake_build(build_dir, jobs):
    if shutil.which("cmake") is None:
        raise RuntimeError("memkv build: cmake not found; install CMake >= 3.25 (Debian: apt install cmake)")
    configure = ["cmake", "-S", ROOT, "-B", build_dir, "-DMEMKV_CLIENT_ONLY=ON", "-DCMAKE_BUILD_TYPE=Release",
                 f"-DMEMKV_PYTHON={sys.executable}", f"-DPython3_EXECUTABLE={sys.executable}"]
    if shutil.which("ninja") and not os.path.exists(os.path.join(build_dir, "Makefile")):
        configure += ["-G", "Ninja"]
    try:  # pybind11 installed in this interpreter (pip) takes precedence over the system's
        import pybind11  # noqa: PLC0415
        configure.append(f"-Dpybind11_DIR={pybind11.get_cmake_dir()}")
    except ImportError:
        pass
    _run(configure)
    _run(["cmake", "--build", build_dir, "-j", str(jobs), "--target", "memkv_python", "memkv_shared"])


def _strip(path):
    if shutil.which("strip"):
        subprocess.run(["strip", "--strip-unneeded", path], check=True)


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}\n"


def _write_wheel(wheel_directory, files):
    """files: (arcname, bytes, executable) in order; returns the wheel's name."""
    tag = _tag()
    name = f"{NAME}-{_version()}-{tag}.whl"
    dist_info = _dist_info_name()
    wheel_meta = ("Wheel-Version: 1.0\nGenerator: memkv_build\nRoot-Is-Purelib: false\n"
                  f"Tag: {tag}\n")
    files = list(files) + [
        (f"{dist_info}/METADATA", _metadata().encode(), False),
        (f"{dist_info}/WHEEL", wheel_meta.encode(), False),
        (f"{dist_info}/entry_points.txt", _read("python/dist-info/entry_points.txt").encode(), False),
    ]
    record = "".join(_record_line(arc, data) for arc, data, _ in files) + f"{dist_info}/RECORD,,\n"
    files.append((f"{dist_info}/RECORD", record.encode(), False))
    path = os.path.join(wheel_directory, name)
    stamp = time.localtime(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")))[:6]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as whl:
        for arcname, data, executable in files:
            info = zipfile.ZipInfo(arcname, date_time=stamp)
            info.external_attr = (0o755 if executable else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(info, data)
    return name


def _package_files(package_dir, strip):
    out = []
    scratch = tempfile.mkdtemp(prefix="memkv-strip-")
    try:
        for dirpath, dirnames, filenames in os.walk(package_dir):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for filename in sorted(filenames):
                if not PACKAGE_FILE.match(filename):
                    continue
                src = os.path.join(dirpath, filename)
                rel = os.path.relpath(src, os.path.dirname(package_dir)).replace(os.sep, "/")
                shared = filename.endswith(".so") or filename.endswith(".so.0")
                if shared and strip:
                    copy = os.path.join(scratch, filename)
                    shutil.copyfile(src, copy)  # follows libmemkv.so.0's symlink
                    _strip(copy)
                    src = copy
                with open(src, "rb") as f:
                    out.append((rel, f.read(), shared))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    names = {os.path.basename(arc) for arc, _, _ in out}
    if "libmemkv.so.0" not in names or not any(n.startswith("_memkv.") for n in names):
        raise RuntimeError(f"memkv build: {package_dir} lacks the extension or libmemkv.so.0 after the build")
    return out


# --- PEP 517 hooks -----------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info = os.path.join(metadata_directory, _dist_info_name())
    os.makedirs(dist_info, exist_ok=True)
    with open(os.path.join(dist_info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    shutil.copyfile(os.path.join(ROOT, "python/dist-info/entry_points.txt"),
                    os.path.join(dist_info, "entry_points.txt"))
    return _dist_info_name()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    kept = _setting(config_settings, "build-dir", env="MEMKV_WHEEL_BUILD_DIR")
    build_dir = os.path.abspath(kept) if kept else tempfile.mkdtemp(prefix="memkv-wheel-build-")
    jobs = int(_setting(config_settings, "jobs", default=os.cpu_count() or 1))
    strip = _setting(config_settings, "strip", default="1") != "0"
    try:
        _cmake_build(build_dir, jobs)
        files = _package_files(os.path.join(build_dir, "python", NAME), strip)
        os.makedirs(wheel_directory, exist_ok=True)
        return _write_wheel(wheel_directory, files)
    finally:
        if not kept:
            shutil.rmtree(build_dir, ignore_errors=True)


def _source_files():
    """What the sdist carries: git's tracked files where this is a checkout,
    else every file but build trees and caches."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True, capture_output=True).stdout
        files = [f for f in out.decode().split("\0") if f]
        if files:
            return sorted(f for f in files if os.path.isfile(os.path.join(ROOT, f)))
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        rel_dir = os.path.relpath(dirpath, ROOT)
        dirnames[:] = sorted(d for d in dirnames
                             if not (rel_dir == "." and (d.startswith("build") or d.startswith(".")))
                             and d != "__pycache__")
        files += [os.path.normpath(os.path.join(rel_dir, f)) for f in sorted(filenames)]
    return files


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{_version()}"
    path = os.path.join(sdist_directory, f"{base}.tar.gz")
    os.makedirs(sdist_directory, exist_ok=True)
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in _source_files():
            tar.add(os.path.join(ROOT, rel), arcname=f"{base}/{rel}", recursive=False)
        pkg_info = _metadata().encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg_info)
        info.mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
        tar.addfile(info, io.BytesIO(pkg_info))
    return os.path.basename(path)
