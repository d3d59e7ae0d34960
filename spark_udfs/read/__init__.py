"""The data source's read path: options (``options``: the Kafka source's, translated; ``spec``: the
one read specification), planning, pushdown, the batch reader (``datasource``), the stream, the
typed reads and the stream's progress.  No pyspark is imported here."""
