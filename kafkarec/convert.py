"""Converting between message formats, as a broker does for old clients.

* Up-conversion (v0/v1 → v2, v0 → v1): every record is kept with its offset,
  key and value; v0's missing timestamps stay -1 (CreateTime in v1/v2, as Kafka
  up-converts); a LogAppendTime batch stays LogAppendTime.
* Down-conversion (v2 → v0/v1, v1 → v0), like Kafka's RecordsUtil.downConvert:
  control batches and empty batches are dropped, headers are dropped, producer
  id/epoch/sequence and the transactional flag are lost, and v0 loses
  timestamps.  zstd batches cannot be down-converted (Kafka refuses too).

Each source batch becomes one target batch; ``compression`` re-compresses,
otherwise each batch keeps its codec.  What was lost is counted in the result.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafkarec._core import LegacyBatchBuilder, RecordBatchBuilder, iter_batches
from kafkarec.enums import Compression, TimestampType
from kafkarec.errors import EncodeError

__all__ = ["convert", "ConversionResult"]


@dataclass
class ConversionResult:
    data: bytes
    batches: int = 0
    records: int = 0
    lost: dict = field(default_factory=lambda: {
        "headers": 0, "control_batches": 0, "empty_batches": 0,
        "producer_state_batches": 0, "timestamps": 0})


def convert(data, magic: int, *, compression: Compression | int | None = None,
            verify_crc: bool = True) -> ConversionResult:
    """Rewrite every batch in ``data`` as message format ``magic`` (0, 1 or 2)."""
    if magic not in (0, 1, 2):
        raise EncodeError(f"Invalid magic value {magic}")
    result = ConversionResult(b"")
    out = []
    for batch in iter_batches(data, verify_crc=verify_crc):
        codec = batch.compression if compression is None else Compression(compression)
        if magic < 2 and batch.magic == 2:
            if batch.compression is Compression.ZSTD:
                raise EncodeError("Down-conversion of zstandard-compressed batches is not supported")
            if batch.is_control:
                result.lost["control_batches"] += 1
                continue
            if batch.producer_id >= 0 or batch.is_transactional:
                result.lost["producer_state_batches"] += 1
        if magic < 2 and codec is Compression.ZSTD:
            raise EncodeError(f"ZStandard compression is not supported for magic {magic}")
        records = list(batch)
        if not records:
            result.lost["empty_batches"] += 1
            continue
        log_append = batch.timestamp_type is TimestampType.LOG_APPEND_TIME
        if magic == 2:
            builder = RecordBatchBuilder(
                compression=codec, base_offset=records[0].offset,
                timestamp_type=TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME,
                log_append_time=batch.max_timestamp if log_append else None,
                producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                base_sequence=batch.base_sequence, is_transactional=batch.is_transactional,
                is_control=batch.is_control,
                partition_leader_epoch=batch.partition_leader_epoch,
                delete_horizon_ms=batch.delete_horizon_ms)
        else:
            ts_type = (TimestampType.NO_TIMESTAMP_TYPE if magic == 0 else
                       TimestampType.LOG_APPEND_TIME if log_append and magic == 1 else
                       TimestampType.CREATE_TIME)
            builder = LegacyBatchBuilder(
                magic=magic, compression=codec, base_offset=records[0].offset,
                timestamp_type=ts_type, log_append_time=batch.max_timestamp if log_append else None)
        for r in records:
            headers = r.headers
            if magic < 2 and headers:
                result.lost["headers"] += len(headers)
                headers = ()
            ts = r.timestamp
            if magic == 0:
                if ts != -1:
                    result.lost["timestamps"] += 1
                ts = None
            if batch.is_control and magic == 2:
                builder._append(r.value, r.key, ts, r.headers, r.offset)   # control records as they are
            else:
                builder.append(r.value, r.key, timestamp=ts, headers=headers, offset=r.offset)
        out.append(builder.build())
        result.batches += 1
        result.records += len(records)
    result.data = b"".join(out)
    return result
