"""Schema Registry payloads, offline: one :class:`Registry` from any source, wire formats, and
typed Arrow columns.

    >>> import kafkarec, kafkarec.registry as kr
    >>> reg = kr.load("/var/lib/kafka/data")            # replays _schemas-0 found there
    >>> table = kafkarec.to_arrow(segment_bytes, topic="orders")
    >>> typed = kr.decode_table(table, reg)              # value typed by orders-value

Sources (:func:`load`): a log directory holding ``_schemas-0`` (or that partition folder),
local or remote (``s3://``...), replayed as Confluent's registry replays it; a folder of schema
files; a live registry URL (fetched once).  The :class:`Registry` is plain data: it pickles
and is what Spark ships to executors.  See ``docs/typed-values.md``.
"""
from __future__ import annotations

import os
import posixpath
from typing import Any, Optional

from kafkarec.registry._model import (Reference, Registry, RegistryError, SchemaEntry,
                                      schema_guid, split_context)
from kafkarec.registry._topic import read_schemas_log, replay
from kafkarec.registry._sources import read_folder, read_http
from kafkarec.registry.typed import TypedColumn, decode_table, subject_name

__all__ = ["Registry", "RegistryError", "SchemaEntry", "Reference", "load", "replay",
           "read_schemas_log", "read_folder", "read_http", "TypedColumn", "decode_table",
           "subject_name", "schema_guid", "split_context"]


def _holds_topic(uri: str, topic: str, storage_options) -> Optional[bool]:
    """Whether ``uri`` is (or holds) a ``<topic>-N`` partition folder."""
    from kafkarec.log import layout, storage
    stg, root = storage.resolve(uri, storage_options)
    if posixpath.basename(root.rstrip("/")).startswith(topic + "-"):
        return True
    if stg.is_local:
        return os.path.isdir(os.path.join(root, f"{topic}-0"))
    try:
        lay = layout.scan(stg, root)
    except FileNotFoundError:
        return False
    return any(p.topic == topic for p in lay.partitions)


def load(source: Any, *, topic: str = "_schemas", as_of_offset: Optional[int] = None,
         storage_options: Optional[dict] = None, bearer_token: Optional[str] = None,
         cache_dir: Optional[str] = None, refresh: bool = False) -> Registry:
    """A :class:`Registry` from ``source``:

    * a :class:`Registry` (returned as is);
    * ``http://`` / ``https://`` (``user:pass@`` for basic auth, or ``bearer_token``): a live
      registry, read once through its REST API (cached per process, and in ``cache_dir``);
    * a log directory (local path or URI) holding ``<topic>-0`` (``_schemas`` by default), or
      that partition folder itself: the topic replayed record by record (``as_of_offset``:
      the registry once the record at that offset was applied); ``problems`` lists what was skipped;
    * any other folder: schema files (see :func:`read_folder`)."""
    if isinstance(source, Registry):
        return source
    src = os.fspath(source)
    if src.lower().startswith(("http://", "https://")):
        return read_http(src, bearer_token=bearer_token, cache_dir=cache_dir, refresh=refresh)
    if _holds_topic(src, topic, storage_options):
        return read_schemas_log(src, topic=topic, as_of_offset=as_of_offset,
                                storage_options=storage_options)
    return read_folder(src, storage_options=storage_options)
