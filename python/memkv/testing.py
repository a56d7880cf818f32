"""A memkv server process on loopback, for tests and benchmarks.

    with memkv.testing.LocalServer("build/memkv") as server:
        client = server.client()

LocalServer runs the real `memkv start` on 127.0.0.1 port 0 in memory mode,
with a fresh auth key and a temporary data directory, learns its port from
the "ready HOST:PORT" line it prints, and stops it with SIGTERM. With
drive_size it runs in file mode, one drive file of that size in its
directory; with directory= (and a fixed port in extra_args) a second
LocalServer on the same directory is the first one restarted.
"""

import os
import random
import secrets
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from typing import Any, Dict, List, Optional

from ._memkv import Client


def _default_binary() -> str:
    found = os.environ.get("MEMKV_BINARY") or shutil.which("memkv")
    if not found:
        raise FileNotFoundError("memkv binary not found: pass binary=, set MEMKV_BINARY or put memkv on PATH")
    return found


def restartable_port(host: str = "127.0.0.1") -> int:
    """A port P free now, with P + 1 (the admin endpoint), below the kernel's
    ephemeral range: no client connection, nor one in TIME_WAIT afterwards,
    takes either, so a server there can stop and come back at the same
    address (pass it as extra_args=["--port", str(P)])."""
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    rng = random.Random()
    for _ in range(100):
        port = rng.randrange(max(1024, low - 12000), low - 2)
        try:
            for p in (port, port + 1):
                with socket.socket() as probe:
                    probe.bind((host, p))
        except OSError:
            continue
        return port
    raise RuntimeError(f"no free port pair on {host} below the ephemeral range (which starts at {low})")


class LocalServer:
    """One `memkv start` process; not thread-safe (start and stop from one thread)."""

    def __init__(self, binary: Optional[str] = None, memory: str = "512 MiB", block_size: str = "2 MiB",
                 workers: Optional[int] = None, auth_key: Optional[str] = None,
                 extra_args: Optional[List[str]] = None, memory_settings: Optional[Dict[str, str]] = None,
                 extra_config: str = "", drive_size: Optional[str] = None,
                 directory: Optional[str] = None) -> None:
        self.binary = binary or _default_binary()
        self.memory = memory
        self.block_size = block_size
        self.workers = workers
        self.extra_args = list(extra_args or [])
        # More fields of the config's memory section ({"pin_ttl": "30m"}).
        self.memory_settings = dict(memory_settings or {})
        # More sections of the config, as YAML text ("events:\n  publish: ...\n").
        self.extra_config = extra_config
        # File mode with one drive of this size ("1 GiB"), or memory mode when None.
        self.drive_size = drive_size
        # Where config, data and drive live, kept after stop(); a fresh temporary one when None.
        self.directory = directory
        self.auth_key = auth_key or secrets.token_hex(32)
        self.address = ""
        self._dir: Optional[str] = None
        self._process: Optional[subprocess.Popen] = None

    def start(self, timeout_s: float = 20.0) -> "LocalServer":
        """Starts the server and returns once it accepts clients; RuntimeError naming its stderr if not."""
        if self.directory:
            os.makedirs(self.directory, exist_ok=True)
            self._dir = self.directory
        else:
            self._dir = tempfile.mkdtemp(prefix="memkv-py-")
        config = os.path.join(self._dir, "config.yaml")
        storage = "storage:\n  mode: memory\n"
        if self.drive_size:
            drive = os.path.join(self._dir, "drive0.memkv")
            storage = f"storage:\n  mode: file\n  drives:\n    - {{media: {drive}, size: {self.drive_size}}}\n"
        with open(config, "w") as f:
            f.write(f"network:\n  address: 127.0.0.1:0\n  auth_key: {self.auth_key}\n"
                    f"memory:\n  max_size: {self.memory}\n  block_size: {self.block_size}\n"
                    + "".join(f"  {k}: {v}\n" for k, v in self.memory_settings.items())
                    + storage + self.extra_config)
        args = [self.binary, "start", "--config", config, "--data-dir", os.path.join(self._dir, "data")]
        if self.workers:
            args += ["--workers", str(self.workers)]
        with open(self._stderr_path(), "wb") as err:
            self._process = subprocess.Popen(args + self.extra_args, stdout=subprocess.PIPE, stderr=err)
        line = self._read_line(timeout_s)
        if not line.startswith("ready "):
            stderr = self.stderr()
            self.stop()
            raise RuntimeError(f"memkv did not become ready: stdout {line!r}, stderr:\n{stderr}")
        self.address = line.split()[1]
        return self

    def _read_line(self, timeout_s: float) -> str:
        # The first stdout line, read as it comes, against a deadline.
        assert self._process is not None and self._process.stdout is not None
        fd = self._process.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        data = b""
        while b"\n" not in data:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                break
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
        return data.decode(errors="replace").split("\n")[0]

    def _stderr_path(self) -> str:
        assert self._dir is not None
        return os.path.join(self._dir, "stderr.log")

    def stderr(self) -> str:
        """What the server wrote to stderr so far."""
        try:
            with open(self._stderr_path(), errors="replace") as f:
                return f.read()
        except (OSError, AssertionError):
            return ""

    def client(self, **options: Any) -> Client:
        """A TCP client of this server; options override the defaults."""
        options.setdefault("transport", "tcp")
        return Client(servers=[self.address], auth_key=self.auth_key, **options)

    def stop(self, timeout_s: float = 20.0) -> Optional[int]:
        """SIGTERM, then SIGKILL if it has not exited in timeout_s. Returns the exit status."""
        return self._end(signal.SIGTERM, timeout_s)

    def kill(self) -> Optional[int]:
        """SIGKILL at once, as a crash would end it. Returns the exit status."""
        return self._end(signal.SIGKILL, 20.0)

    def _end(self, sig: int, timeout_s: float) -> Optional[int]:
        status = None
        if self._process is not None:
            self._process.send_signal(sig)
            try:
                status = self._process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self._process.kill()
                status = self._process.wait()
            if self._process.stdout is not None:
                self._process.stdout.close()
            self._process = None
        if self._dir is not None:
            if not self.directory:
                shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        return status

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
