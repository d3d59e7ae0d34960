"""A tiny decoder with the shared decoder interface, to test the registry's dispatch alone.

Its "schemas" are texts; a payload body is UTF-8 text and decodes to ``"<writer id>:<text>"``
(so tests see which writer each row was decoded with).  A writer schema containing
``INCOMPATIBLE`` cannot be resolved; a body starting with ``!`` is a per-row decode error."""
from __future__ import annotations

import pyarrow as pa

from kafkarec.errors import KafkaRecError


class FakeResolutionError(KafkaRecError, ValueError):
    pass


class FakeDecoder:
    def __init__(self, reader_schema) -> None:
        self.reader = reader_schema
        self.arrow_type = pa.string()
        self.writers = {}

    def add_writer(self, writer_id: int, writer_schema) -> None:
        if "INCOMPATIBLE" in str(writer_schema):
            raise FakeResolutionError(f"writer {writer_id} does not resolve to {self.reader}")
        self.writers[int(writer_id)] = writer_schema

    def decode(self, values, writer_ids, body_offsets):
        out, errs = [], []
        for v, w, b in zip(values.to_pylist(), writer_ids.to_pylist(), body_offsets.to_pylist()):
            if v is None or w is None:
                out.append(None)
                errs.append(None)
            elif w not in self.writers:
                out.append(None)
                errs.append(f"unknown writer {w}")
            elif v[b:].startswith(b"!"):
                out.append(None)
                errs.append("garbage body")
            else:
                out.append(f"{w}:{v[b:].decode()}")
                errs.append(None)
        return pa.array(out, pa.string()), pa.array(errs, pa.string())


FAKE = {"AVRO": FakeDecoder, "PROTOBUF": FakeDecoder, "JSON": FakeDecoder}
