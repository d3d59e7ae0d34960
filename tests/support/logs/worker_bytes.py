"""Bytes read by other processes (Ray's workers): what they counted into a folder through the storage
layer (:data:`kafkarec.log.storage.BYTES_READ_ENV`, set in their environment before they start),
in the shape of :func:`support.logs.engine_logs.segment_bytes_read`, which counts this process's reads."""
from __future__ import annotations

import os
from typing import Callable


def segment_bytes_read_by_workers(counts: str, folder: str, call: Callable[[], object]):
    """``(result of call, .log bytes under folder the workers counting into counts read during it,
    .log bytes under folder)``."""
    from kafkarec.log.storage import bytes_read
    from support.logs.engine_logs import _log_files
    folder = os.path.realpath(folder)

    def logs(by_path):
        return sum(n for path, n in by_path.items()
                   if path.endswith(".log") and os.path.realpath(path).startswith(folder + os.sep))
    before = bytes_read(counts)
    result = call()
    read = logs(bytes_read(counts)) - logs(before)
    total = sum(os.path.getsize(path) for path in _log_files(folder))
    return result, read, total
