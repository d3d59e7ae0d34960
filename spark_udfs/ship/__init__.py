"""kafkarec on Spark's executors and a Connect server: what is shipped and checked (``shipping``),
the data source class a Connect session registers (``connect``), and kafkarec inside Spark's
Python workers (``runtime``).  No pyspark is imported here.

The room shares its name with the public function ``spark_udfs.ship`` (:func:`shipping.ship`):
the room's ``ship`` is that function, which ``spark_udfs`` binds in the room's place when the
room is first imported (``spark_udfs._Package``)."""
from __future__ import annotations

__all__ = ["ship"]


def __getattr__(name: str):
    if name == "ship":
        from spark_udfs.ship.shipping import ship
        return ship
    raise AttributeError(f"module 'spark_udfs.ship' has no attribute {name!r}")
