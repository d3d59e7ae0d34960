"""The internal-topic decoders (__consumer_offsets, __transaction_state, __share_group_state,
__cluster_metadata, __remote_log_metadata) on arbitrary keys and values, lenient and strict,
plain and as Kafka's JSON: a record or kafkarec's typed error."""
import atheris

from _harness import EXPECTED, run

from kafkarec import internal

TOPICS = sorted(internal.TOPICS)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    topic = TOPICS[fdp.ConsumeIntInRange(0, len(TOPICS) - 1)]
    strict, as_json = fdp.ConsumeBool(), fdp.ConsumeBool()
    key = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 64)) if fdp.ConsumeBool() else None
    value = fdp.ConsumeBytes(fdp.remaining_bytes()) if fdp.ConsumeBool() else None
    try:
        internal.decode(topic, key, value, strict=strict, json=as_json)
    except EXPECTED:
        pass


if __name__ == "__main__":
    run(test_one_input)
