"""memkv: the Python client of MemKV, a store for LLM KV-cache blocks.

    import memkv, numpy as np
    with memkv.Client(servers=["10.0.0.5:9900"], auth_key=KEY) as client:
        client.put("block-42", page)                 # any buffer: bytes, numpy, mmap ...
        buf = np.empty(2 << 20, dtype=np.uint8)
        size = client.get_into("block-42", buf)      # straight into buf; None on a miss

A thin binding of the C++ client (libmemkv.so): same options, same status
codes, same behaviour. See docs/client-library.md, "Python".
"""

from ._errors import (
    AuthFailed, Busy, Corruption, DeadlineExceeded, Draining, Error, FailedPrecondition, Internal, InvalidArgument,
    IoError, NotFound, PermissionDenied, ProtocolError, ResourceExhausted, StatusCode, TooLarge, Unavailable, UnsupportedVersion)


def _extension_error(error: ImportError) -> ImportError:
    """The ImportError for a package whose extension this interpreter cannot
    load: which Python is running and which the extension was built for."""
    import glob
    import os
    import sys
    import sysconfig
    here = os.path.dirname(os.path.abspath(__file__))
    built = sorted(os.path.basename(p) for p in glob.glob(os.path.join(here, "_memkv*.so")))
    running = f"Python {sys.version_info.major}.{sys.version_info.minor} ({sys.executable})"
    wanted = "_memkv" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")
    if wanted in built:
        return error  # it is there and failed to load: the loader's own words say why
    if built:
        why = (f"memkv's extension was built for another Python: {here} holds {', '.join(built)}, while "
               f"{running} needs {wanted}. Install memkv into this Python "
               f"({sys.executable} -m pip install <memkv wheel or source tree>) or use the Python it was built for")
    else:
        why = (f"memkv's extension is missing from {here}: {running} needs {wanted}. Install the package with pip "
               f"(docs/client-library.md, 'Installing into a virtual environment')")
    return ImportError(why, name="memkv._memkv")


try:
    from ._memkv import BatchResult, Client, Completion, PutOptions, __version__, client_options
except ImportError as _error:
    raise _extension_error(_error) from None

from ._identity import CacheIdentity  # noqa: E402



def _iter_keys(self: Client, prefix: "str | bytes" = "", page_size: int = 1000):
    """iter_keys(prefix='', page_size=1000) -> Iterator[bytes]

    Every key that starts with prefix, in bytewise order, a list_keys page at
    a time."""
    cursor = None
    while True:
        keys, cursor = self.list_keys(prefix, cursor, page_size)
        yield from keys
        if cursor is None:
            return


Client.iter_keys = _iter_keys

from . import _aio  # noqa: E402  (needs Client)

_aio.install()  # Client.aput, aget_into, aexists, adelete

# Log levels of log_level= and of the log callback's first argument.
LOG_DEBUG = 0
LOG_INFO = 1
LOG_WARN = 2
LOG_ERROR = 3
LOG_OFF = 4

__all__ = [
    "AuthFailed", "BatchResult", "Busy", "CacheIdentity", "Client", "Completion", "Corruption", "DeadlineExceeded", "Draining", "Error",
    "FailedPrecondition",
    "Internal", "InvalidArgument", "IoError", "LOG_DEBUG", "LOG_ERROR", "LOG_INFO", "LOG_OFF", "LOG_WARN",
    "NotFound", "PermissionDenied", "ProtocolError", "PutOptions", "ResourceExhausted", "StatusCode", "TooLarge", "Unavailable",
    "UnsupportedVersion", "__version__", "client_options",
]
