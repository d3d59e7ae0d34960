"""kafkarec on Spark's executors and a Connect server: what is shipped and checked (``shipping``),
the data source class a Connect session registers (``connect``), and kafkarec inside Spark's
Python workers (``runtime``).  No pyspark is imported here."""
