"""Checks the builder test files share (RecordBatchBuilder, LegacyBatchBuilder and
control records): the writer rules raise EncodeError with Java's message."""
from __future__ import annotations

import pytest

from kafkarec import EncodeError


def append_after_build(builder, timestamp: int) -> None:
    """Append, build, then append again (the second append is what must raise)."""
    builder.append(b"v", timestamp=timestamp)
    builder.build()
    builder.append(b"w", timestamp=timestamp)


def assert_encode_error(cases: dict, case: str) -> None:
    """``cases[case]`` is (call, message): the call raises EncodeError matching message."""
    call, message = cases[case]
    with pytest.raises(EncodeError, match=message):
        call()
