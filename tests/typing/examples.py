"""Type-checked against kafkarec's stubs by tests/core/test_typing.py (mypy --strict)."""
import kafkarec
from kafkarec import Compression, ControlRecordType, RecordBatch, Record, TimestampType


def offsets(data: bytes) -> list[int]:
    out: list[int] = []
    for batch in kafkarec.iter_batches(data, verify_crc=True, strict=False):
        b: RecordBatch = batch
        c: Compression = b.compression
        t: TimestampType = b.timestamp_type
        assert c is not None and t is not None
        for record in b:
            r: Record = record
            key: bytes | None = r.key
            headers: list[tuple[str, bytes | None]] = r.headers
            kind: ControlRecordType | None = r.control_type
            assert key is None or headers is not None or kind is None
            out.append(r.offset)
    return out


def build() -> bytes:
    b = kafkarec.RecordBatchBuilder(compression=Compression.LZ4, base_offset=5)
    offset: int = b.append(b"v", key=b"k", timestamp=1, headers=[("h", None)])
    assert offset == 5
    return b.build() + kafkarec.build_batch([b"a"], keys=None, timestamps=[1])


def errors(data: bytes) -> int:
    try:
        offsets(data)
    except kafkarec.ChecksumError as err:
        return err.expected ^ err.actual
    except kafkarec.DecodeError as err:
        return err.position
    return -1


def keyed_state() -> int:
    import kafkarec.table
    state = kafkarec.table.latest("logs", topics=["profiles"], end_offset=100, read_committed=True)
    rows: int = state.stats.rows + state.stats.null_keys
    return rows + int(state.table.num_rows)
