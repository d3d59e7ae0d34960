"""A kafkarec stream reader driven by hand, without a query: the data source's options parsed as
Spark gives them (``spark_udfs.read.spec.read_spec``), then ``initialOffset``, ``latestOffset``,
``partitions`` and ``read`` called as Spark's micro-batch loop calls them."""
from __future__ import annotations


def stream_reader(root, **options):
    """The stream reader of ``spark.readStream.format("kafkarec").options(**options).load(root)``."""
    from spark_udfs.read import schema as _schema, streaming as _streaming
    from spark_udfs.read.spec import read_spec
    spec = read_spec({"path": root, **options})
    return _streaming.stream_reader(spec, _schema.read_schema(spec))
