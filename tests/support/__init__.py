"""The suite's plumbing, one home each, in rooms by what they hold: ``brokers`` (the session's
Kafka broker and what is written through it), ``spark`` (the session's Sparks and the user-way
applications), ``logs`` (log directories written as a broker writes them), ``oracles`` (independent
answers kafkarec is compared with), ``registry`` (the Schema Registry's side), ``servers`` (S3,
databases and Debezium, Kafka Connect).  The real components every test shares run one per pytest
session, in the style of asyncpg's test cluster: started on first use, bounded in time, stopped at
exit.  Flat beside the rooms only what every room uses: ``paths``, ``net``, ``procs``, ``lanes``,
``java``, ``jvm``, ``versions`` (tests/test_layout.py checks it).

Nothing here is a test; ``tests/`` is on the import path (``pythonpath`` in pyproject.toml), so a
test imports ``support.net`` or ``support.logs.logdir`` directly.
"""
