"""Spark functions over Kafka record batches, built on kafkarec.

pyspark is imported only when a function here is called.
"""
