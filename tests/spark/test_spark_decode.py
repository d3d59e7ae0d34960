"""The data source's decode option: __consumer_offsets written by Kafka's own code
(tests/data/internal-topics) read as typed columns, equal to kafkarec.internal's."""
import os
import shutil

import pytest

from support.paths import TESTS

pytestmark = [pytest.mark.spark]

LOGS = os.path.join(TESTS, "data", "internal-topics", "logs")


def _decodes(folder: str) -> bool:
    """Whether kafkarec.internal decodes every record of a partition folder with the current
    schemas (a few records of the fixtures, written by an older Kafka, do not: a preview-era
    share-group value, a record type 16 that is not today's ConsumerGroupRegularExpressionKey)."""
    from kafkarec.errors import InternalRecordError
    from kafkarec.internal import columns
    try:
        for seg in sorted(os.listdir(folder)):
            columns.to_arrow(open(os.path.join(folder, seg), "rb").read(), decode="consumer_offsets")
    except InternalRecordError:
        return False
    return True


@pytest.fixture(scope="module")
def offsets_dirs(tmp_path_factory):
    """(partitions every record of which decodes, partitions holding one that does not)."""
    good, bad = tmp_path_factory.mktemp("offsets"), tmp_path_factory.mktemp("offsets-undecodable")
    for name in sorted(os.listdir(LOGS)):
        if name.startswith("__consumer_offsets-"):
            src = os.path.join(LOGS, name)
            shutil.copytree(src, (good if _decodes(src) else bad) / name)
    assert os.listdir(good) and os.listdir(bad)
    return str(good), str(bad)


@pytest.fixture(scope="module")
def offsets_dir(offsets_dirs):
    return offsets_dirs[0]


def test_decode_consumer_offsets_columns(spark, offsets_dir):
    import pyarrow as pa
    from kafkarec.internal import columns
    import kafkarec

    df = (spark.read.format("kafkarec").option("decode", "consumer_offsets")
          .option("mode", "FAILFAST").load(offsets_dir))
    names = columns.decoded_schema("consumer_offsets").names
    assert set(names) <= set(df.columns)
    cols = ["topic", "partition", "offset"] + names
    got = sorted(tuple(r) for r in df.select(*cols).collect())

    want = []
    for part in sorted(os.listdir(offsets_dir)):
        for seg in sorted(os.listdir(os.path.join(offsets_dir, part))):
            data = open(os.path.join(offsets_dir, part, seg), "rb").read()
            t = columns.to_arrow(data, decode="consumer_offsets", topic="__consumer_offsets",
                                 partition=int(part.rsplit("-", 1)[1]))
            t = t.select(cols)
            for row in t.to_pylist():
                want.append(tuple(row[c] for c in cols))
    assert len(got) == len(want) > 50
    assert got == sorted(want)
    assert {r[names.index("recordTypeName") + 3] for r in got} >= {"OffsetCommit", "GroupMetadata"}


def test_decode_failfast_names_a_record_the_schemas_cannot_decode(spark, offsets_dirs):
    """What kafkarec.internal refuses, the data source's decode refuses too (FAILFAST: the task fails
    naming the topic's record offset and the reason)."""
    df = (spark.read.format("kafkarec").option("decode", "consumer_offsets")
          .option("mode", "FAILFAST").load(offsets_dirs[1]))
    with pytest.raises(Exception, match=r"__consumer_offsets record at offset \d+: \w+: "):
        df.collect()


def test_decode_is_refused_with_selection(spark, offsets_dir):
    df = (spark.read.format("kafkarec").option("decode", "consumer_offsets")
          .option("topics", "__consumer_offsets").load(offsets_dir))
    with pytest.raises(Exception, match="decode works on local log directories"):
        df.collect()
