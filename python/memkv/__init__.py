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
    AuthFailed, Corruption, DeadlineExceeded, Error, FailedPrecondition, Internal, InvalidArgument, IoError,
    NotFound, ProtocolError, ResourceExhausted, StatusCode, TooLarge, Unavailable, UnsupportedVersion)
from ._memkv import BatchResult, Client, __version__



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

# Log levels of log_level= and of the log callback's first argument.
LOG_DEBUG = 0
LOG_INFO = 1
LOG_WARN = 2
LOG_ERROR = 3
LOG_OFF = 4

__all__ = [
    "AuthFailed", "BatchResult", "Client", "Corruption", "DeadlineExceeded", "Error", "FailedPrecondition",
    "Internal", "InvalidArgument", "IoError", "LOG_DEBUG", "LOG_ERROR", "LOG_INFO", "LOG_OFF", "LOG_WARN",
    "NotFound", "ProtocolError", "ResourceExhausted", "StatusCode", "TooLarge", "Unavailable",
    "UnsupportedVersion", "__version__",
]
