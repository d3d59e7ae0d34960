"""Every side-file parser on arbitrary bytes: a result or a SideFileError."""
import atheris

from _harness import run

from kafkarec.log import sidefiles as sf

PARSERS = [
    lambda d: list(sf.OffsetIndex("00000000000000000100.index", 100, data=d).entries()),
    lambda d: list(sf.TimeIndex("00000000000000000100.timeindex", 100, data=d).entries()),
    lambda d: list(sf.TransactionIndex("00000000000000000100.txnindex", 100, data=d).entries()),
    lambda d: sf.read_producer_snapshot("00000000000000000100.snapshot", data=d),
    lambda d: sf.read_leader_epoch_checkpoint("leader-epoch-checkpoint", data=d),
    lambda d: sf.read_offset_checkpoint("recovery-point-offset-checkpoint", data=d),
    lambda d: sf.read_partition_metadata("partition.metadata", data=d),
]


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    parse = PARSERS[fdp.ConsumeIntInRange(0, len(PARSERS) - 1)]
    try:
        parse(fdp.ConsumeBytes(fdp.remaining_bytes()))
    except sf.SideFileError:
        pass


if __name__ == "__main__":
    run(test_one_input)
