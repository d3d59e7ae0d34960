"""The command line's lakehouse table flags, for the commands that read or write a table:

    --delta PATH                     a Delta table (a path or a URI)
    --delta-storage-option K=V       delta-rs storage options for it (AWS_ENDPOINT_URL=..., ...)
    --iceberg-catalog NAME           an Iceberg catalog, as pyiceberg's load_catalog(NAME, ...) opens it
    --catalog-property K=V           its properties (type=sql, uri=..., warehouse=...)
    --table DB.TABLE                 the Iceberg table
    --layout NAME                    the live writer's row layout (kafkarec.lakehouse.layouts)
"""
from __future__ import annotations

import argparse
from typing import Dict, List, Tuple

from kafkarec.errors import UsageError

__all__ = ["add_target_arguments", "target_from_args"]

def add_target_arguments(parser: argparse.ArgumentParser) -> None:
    from kafkarec.lakehouse.layouts import LAYOUTS
    g = parser.add_argument_group("table (a Delta path, or an Iceberg table through a catalog)")
    g.add_argument("--delta", metavar="PATH", help="the Delta table at PATH (local or s3://...)")
    g.add_argument("--delta-storage-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a delta-rs storage option for --delta (AWS_ENDPOINT_URL=..., AWS_REGION=...)")
    g.add_argument("--iceberg-catalog", metavar="NAME",
                   help="the Iceberg catalog NAME (pyiceberg's load_catalog: its .pyiceberg.yaml entry or "
                        "PYICEBERG_CATALOG__NAME__* variables, and --catalog-property)")
    g.add_argument("--catalog-property", action="append", default=[], metavar="KEY=VALUE",
                   help="a property of the catalog (type=sql, uri=sqlite:///cat.db, warehouse=file:///wh, ...)")
    g.add_argument("--table", metavar="DB.TABLE", help="the Iceberg table in --iceberg-catalog")
    g.add_argument("--layout", required=True, choices=tuple(LAYOUTS),
                   help="where the live writer keeps topic, partition and offset: iceberg-kafka-connect "
                        "(_kafka_metadata_*), kafka-delta-ingest (meta.kafka.*), redpanda (redpanda.*), "
                        "automq (_kafka_metadata.*)")


def _pairs(items: List[str], flag: str) -> Dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} {item!r}: expected KEY=VALUE")
        out[key.strip()] = value
    return out


def target_from_args(args: argparse.Namespace) -> Tuple[object, str]:
    """``(DeltaTarget or IcebergTarget, layout name)`` of the flags."""
    from kafkarec.lakehouse.tables import DeltaTarget, IcebergTarget
    iceberg = args.iceberg_catalog is not None or args.table is not None or args.catalog_property
    if (args.delta is None) == (not iceberg):
        raise UsageError("name one table: --delta PATH, or --iceberg-catalog NAME --table DB.TABLE")
    if args.delta is not None:
        return DeltaTarget(args.delta, _pairs(args.delta_storage_option, "--delta-storage-option") or None), args.layout
    if args.iceberg_catalog is None or args.table is None:
        raise UsageError("an Iceberg table needs --iceberg-catalog NAME and --table DB.TABLE")
    return (IcebergTarget(_pairs(args.catalog_property, "--catalog-property"), args.table, args.iceberg_catalog),
            args.layout)
