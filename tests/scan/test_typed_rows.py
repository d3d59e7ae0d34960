"""kafkarec.scan.typed.TypedRows: the one rule of what a typed row that does not decode becomes, in
Spark's parse modes (issue 70: Spark's typed reads had a second TypedRows with its own modes).  The
quarantine keeps a failed record first, whatever the mode; FAILFAST raises at the first, in Spark's
wording unless the reader gives its own error (the backfill's); DROPMALFORMED leaves it out;
PERMISSIVE keeps every row.  Spark's typed reads through it are tests/spark/test_typed.py's."""
import pytest

pa = pytest.importorskip("pyarrow")

from kafkarec.errors import MalformedBatchError, UsageError  # noqa: E402
from kafkarec.scan.typed import TypedRows

ROWS = pa.record_batch({"topic": ["t"] * 3, "partition": [2] * 3, "offset": [10, 11, 12]})
REASONS = pa.array([None, "value: bad", None], pa.string())


class _Quarantine:
    def __init__(self):
        self.kept = []

    def add_table(self, table, reasons, ids=None):
        self.kept.append((table.column("offset").to_pylist(), reasons.to_pylist()))


def test_each_mode_settles_the_failed_rows_and_the_quarantine_keeps_them_first():
    assert TypedRows(mode="permissive").settle(ROWS, REASONS) is None
    assert TypedRows(mode="DROPMALFORMED").settle(ROWS, REASONS).to_pylist() == [True, False, True]
    assert TypedRows(mode="DROPMALFORMED").settle(ROWS, pa.nulls(3, pa.string())) is None
    q = _Quarantine()
    with pytest.raises(MalformedBatchError) as info:
        TypedRows(mode="FAILFAST", quarantine=q, corrupt_column="bad").settle(ROWS, REASONS)
    assert str(info.value) == ("topic t partition 2 offset 11: value: bad (mode FAILFAST; PERMISSIVE gives a "
                               "null value and the reason in bad)")
    assert q.kept == [([10, 11, 12], [None, "value: bad", None])]


def test_failfast_raises_the_readers_own_error_and_an_unknown_mode_is_refused():
    def refuse(topic, partition, offset, reason):
        return ValueError(f"{topic}-{partition}@{offset}: {reason}")
    with pytest.raises(ValueError, match=r"^t-2@11: value: bad$"):
        TypedRows(mode="FAILFAST", refuse=refuse).settle(ROWS, REASONS)
    with pytest.raises(UsageError):
        TypedRows(mode="refuse")
