"""The suite's plumbing, one home each: ports, the one user-way Spark application, the real
components every test shares (one per pytest session, in the style of asyncpg's test cluster:
started on first use, bounded in time, stopped at exit), the Java oracles compiled once.

Nothing here is a test; ``tests/`` is on the import path (``pythonpath`` in pyproject.toml), so a
test imports ``support.net`` and friends directly.
"""
