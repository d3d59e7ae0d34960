"""iter_batches in default and strict mode, every header and record field read."""
from _harness import EXPECTED, run

import kafkarec


def read_all(data: bytes, strict: bool) -> None:
    it = kafkarec.iter_batches(data, strict=strict)
    for b in it:
        (b.base_offset, b.last_offset, b.next_offset, b.record_count, b.crc, b.crc_valid, b.attributes,
         b.compression, b.timestamp_type, b.is_transactional, b.is_control, b.delete_horizon_ms,
         b.producer_id, b.producer_epoch, b.base_sequence, b.last_sequence, b.max_timestamp,
         b.partition_leader_epoch, bytes(b.raw()), bytes(b.payload()))
        for r in b:
            (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers, r.sequence,
             r.key_size, r.value_size)
            if b.magic >= 2 and b.is_control:
                try:
                    r.control_type, r.control_value
                except EXPECTED:
                    pass
        kafkarec.scan_records(b)
    it.trailing_bytes


def test_one_input(data: bytes) -> None:
    for strict in (False, True):
        try:
            read_all(data, strict)
        except EXPECTED:
            pass


if __name__ == "__main__":
    run(test_one_input)
