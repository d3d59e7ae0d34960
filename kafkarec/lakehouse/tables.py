"""Lakehouse table IO in one place: a Delta table by path (delta-rs, ``deltalake``) or an Iceberg
table through a catalog (``pyiceberg``): open, create, append, and read a table's positions
(only the position columns, never whole rows).

Targets are described, not opened, so that they cross process boundaries:
:class:`DeltaTarget` (``path``, ``storage_options`` as delta-rs takes them) and
:class:`IcebergTarget` (``catalog_properties`` as ``pyiceberg.catalog.load_catalog`` takes them,
``identifier`` ``"db.table"``, ``catalog_name``).
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Tuple, Union

from kafkarec._extras import require
from kafkarec.errors import BackfillError, UsageError
from kafkarec.lakehouse.layouts import Layout, layout, positions, positions_schema

__all__ = ["DeltaTarget", "IcebergTarget", "Target", "read_positions", "smallest_offsets",
           "load_catalog", "load_iceberg_table", "create_iceberg_table", "delta_table",
           "delta_txn_versions", "iceberg_summaries", "describe"]


class DeltaTarget(NamedTuple):
    """A Delta table at ``path`` (local or an object-store URI; ``storage_options`` as delta-rs's)."""
    path: str
    storage_options: Optional[Dict[str, str]] = None


class IcebergTarget(NamedTuple):
    """The Iceberg table ``identifier`` (``"db.table"``) of the catalog that
    ``pyiceberg.catalog.load_catalog(catalog_name, **catalog_properties)`` opens (say
    ``{"type": "sql", "uri": "sqlite:///cat.db", "warehouse": "file:///wh"}``)."""
    catalog_properties: Dict[str, str]
    identifier: str
    catalog_name: str = "default"


Target = Union[DeltaTarget, IcebergTarget]


def describe(target: Target) -> str:
    """The table's name in messages: a Delta path, or ``catalog:db.table``."""
    if isinstance(target, DeltaTarget):
        return target.path
    return f"{target.catalog_name}:{target.identifier}"


# --- Iceberg ----------------------------------------------------------------------------------

def load_catalog(target: IcebergTarget) -> Any:
    catalog = require("pyiceberg.catalog")
    return catalog.load_catalog(target.catalog_name, **{str(k): str(v) for k, v in target.catalog_properties.items()})


def load_iceberg_table(target: IcebergTarget, catalog: Any = None) -> Any:
    """The table, or None when the catalog has no such table."""
    exceptions = require("pyiceberg.exceptions")
    catalog = catalog or load_catalog(target)
    try:
        return catalog.load_table(target.identifier)
    except exceptions.NoSuchTableError:
        return None


def create_iceberg_table(target: IcebergTarget, arrow_schema: Any, lay: Layout, catalog: Any = None) -> Any:
    """A new table with the layout's schema (Arrow nullability: optional or required) and its
    partition spec; the namespace is created when missing."""
    exceptions = require("pyiceberg.exceptions")
    pio = require("pyiceberg.io.pyarrow")
    pschema = require("pyiceberg.schema")
    ppart = require("pyiceberg.partitioning")
    transforms = require("pyiceberg.transforms")
    catalog = catalog or load_catalog(target)
    namespace = target.identifier.rsplit(".", 1)[0] if "." in target.identifier else None
    if namespace:
        try:
            catalog.create_namespace(namespace)
        except exceptions.NamespaceAlreadyExistsError:
            pass
    # ids in Arrow's field order (the catalog assigns fresh ones on create, the spec follows by name)
    schema = pschema.assign_fresh_schema_ids(pio.visit_pyarrow(arrow_schema, pio._ConvertToIcebergWithoutIDs()))
    fields = []
    for i, pf in enumerate(lay.partition_spec):
        source = schema.find_field(".".join(pf.source))
        fields.append(ppart.PartitionField(source_id=source.field_id, field_id=1000 + i,
                                           transform=transforms.parse_transform(pf.transform),
                                           name=pf.name))
    spec = ppart.PartitionSpec(*fields) if fields else ppart.UNPARTITIONED_PARTITION_SPEC
    return catalog.create_table(target.identifier, schema=schema, partition_spec=spec)


def iceberg_summaries(table: Any) -> List[Dict[str, str]]:
    """Every snapshot's summary properties, oldest first."""
    out = []
    for snap in sorted(table.metadata.snapshots, key=lambda s: s.sequence_number or 0):
        summary = snap.summary
        out.append(dict(summary.additional_properties) if summary is not None else {})
    return out


def _iceberg_positions(table: Any, lay: Layout, topic: Optional[str]) -> Any:
    pa = require("pyarrow")
    names = tuple(".".join(p) for p in lay.position_columns())
    # a projection by column: the scan reads the position columns' data files' columns only
    data = table.scan(selected_fields=names).to_arrow()
    return positions(data if data.num_rows else pa.Table.from_batches([], schema=data.schema), lay, topic=topic)


# --- Delta ------------------------------------------------------------------------------------

def delta_table(target: DeltaTarget) -> Any:
    """The table, or None when there is no Delta table at the path."""
    deltalake = require("deltalake")
    exceptions = require("deltalake.exceptions")
    try:
        return deltalake.DeltaTable(target.path, storage_options=target.storage_options)
    except exceptions.TableNotFoundError:
        return None


def delta_txn_versions(table: Any, app_ids: Iterable[str]) -> Dict[str, Optional[int]]:
    """``{appId: version}`` of the table's ``txn`` actions (None: no txn for that app id), as
    kafka-delta-ingest reads them on start (``delta_helpers.rs`` last_txn_version)."""
    return {a: table.transaction_version(a) for a in app_ids}


def _delta_positions(table: Any, lay: Layout, topic: Optional[str]) -> Any:
    pc = require("pyarrow.compute")
    pa = require("pyarrow")
    dataset = table.to_pyarrow_dataset()
    columns = {".".join(p): pc.field(*p) for p in lay.position_columns()}
    data = dataset.to_table(columns=columns)
    n = data.num_rows
    t = (data.column(".".join(lay.topic)) if lay.topic is not None
         else pa.array([topic] * n, pa.string()) if topic is not None else pa.nulls(n, pa.string()))
    return pa.table([t.cast(pa.string()), data.column(".".join(lay.partition)).cast(pa.int32()),
                     data.column(".".join(lay.offset)).cast(pa.int64())], schema=positions_schema())


# --- both -------------------------------------------------------------------------------------

def read_positions(target: Target, layout_name: Union[str, Layout], *, topic: Optional[str] = None) -> Any:
    """``(topic, partition, offset)`` of every row of the table (a pyarrow Table, empty when the
    table does not exist), reading the layout's position columns only.  ``topic`` names the
    topic where the layout keeps one topic per table (Redpanda, AutoMQ); otherwise the rows do."""
    pa = require("pyarrow")
    lay = layout(layout_name)
    if isinstance(target, DeltaTarget):
        table = delta_table(target)
        if table is None:
            return pa.table([[], [], []], schema=positions_schema())
        return _delta_positions(table, lay, topic)
    if isinstance(target, IcebergTarget):
        table = load_iceberg_table(target)
        if table is None:
            return pa.table([[], [], []], schema=positions_schema())
        return _iceberg_positions(table, lay, topic)
    raise UsageError(f"a target is a DeltaTarget or an IcebergTarget, not {type(target).__name__}")


def smallest_offsets(target: Target, layout_name: Union[str, Layout], *,
                     topic: Optional[str] = None) -> Dict[Tuple[Optional[str], int], int]:
    """``{(topic, partition): smallest offset}`` of the rows of the table (fill-below's ends)."""
    lay = layout(layout_name)
    pos = read_positions(target, lay, topic=topic)
    if lay.topic is None and topic is None and pos.num_rows:
        raise BackfillError(describe(target), f"layout {lay.name} keeps one topic per table and its rows do "
                                              f"not name it: name the table's topic")
    grouped = pos.group_by(["topic", "partition"]).aggregate([("offset", "min")])
    return {(t, p): o for t, p, o in zip(grouped.column("topic").to_pylist(),
                                         grouped.column("partition").to_pylist(),
                                         grouped.column("offset_min").to_pylist())}

