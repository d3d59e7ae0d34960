"""Helpers: ``_schemas`` records in the shapes Confluent, Karapace and Redpanda write, and log
directories holding them (written with kafkarec's builder, one segment per partition)."""
from __future__ import annotations

import json
import os
from typing import Iterable, List, Optional, Tuple

import kafkarec


def confluent_key(keytype: str, subject: Optional[str] = None, version: Optional[int] = None,
                  magic: Optional[int] = None) -> bytes:
    """Confluent's Jackson output: fields in @JsonPropertyOrder, no spaces."""
    if keytype == "SCHEMA":
        return (f'{{"keytype":"SCHEMA","subject":{json.dumps(subject)},"version":{version},'
                f'"magic":{1 if magic is None else magic}}}').encode()
    if keytype == "NOOP":
        return b'{"keytype":"NOOP","magic":0}'
    return (f'{{"keytype":"{keytype}","subject":{json.dumps(subject)},'
            f'"magic":{0 if magic is None else magic}}}').encode()


def karapace_key(keytype: str, subject: Optional[str] = None, version: Optional[int] = None) -> bytes:
    """Another field order and spacing for the same logical key (Karapace's key_format)."""
    if keytype == "SCHEMA":
        return json.dumps({"subject": subject, "version": version, "magic": 1, "keytype": keytype}).encode()
    return json.dumps({"subject": subject, "magic": 0, "keytype": keytype}).encode()


def schema_value(subject: str, version: int, sid: int, schema: str, *, schema_type: Optional[str] = None,
                 deleted: bool = False, references: Optional[list] = None) -> bytes:
    """Confluent's SchemaValue JSON (NON_EMPTY: no schemaType for Avro, no empty references)."""
    obj = {"subject": subject, "version": version, "id": sid}
    if schema_type and schema_type != "AVRO":
        obj["schemaType"] = schema_type
    if references:
        obj["references"] = references
    obj["schema"] = schema
    obj["deleted"] = deleted
    return json.dumps(obj, separators=(",", ":")).encode()


def write_partition(folder: str, records: List[Tuple[Optional[bytes], Optional[bytes]]],
                    offsets: Optional[Iterable[int]] = None, *, split_every: int = 0,
                    headers=None) -> None:
    """One segment ``00000000000000000000.log`` of v2 batches holding (key, value) records at
    ``offsets`` (default 0..n-1; gaps as compaction leaves them)."""
    os.makedirs(folder, exist_ok=True)
    offs = list(offsets) if offsets is not None else list(range(len(records)))
    step = split_every or len(records) or 1
    out = b""
    for i in range(0, len(records), step):
        chunk = records[i:i + step]
        out += kafkarec.build_batch([v for _, v in chunk], [k for k, _ in chunk],
                                    offsets=offs[i:i + step],
                                    headers=None if headers is None else headers[i:i + step])
    with open(os.path.join(folder, "00000000000000000000.log"), "wb") as f:
        f.write(out)
