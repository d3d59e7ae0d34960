"""Spark as the tests run it: the in-process session, the standalone cluster and Spark
Connect, the one spark-submit command line, the user-way applications and their jobs'
runner, the broker tests' and the lakehouse runtimes' Spark."""
