"""``dump``'s internal-topic decoder options (kafka-dump-log's, plus ``--decode``) and the per-file choice."""
from __future__ import annotations

import argparse
import os
from typing import Dict, Optional

from kafkarec.internal import dumplog, topics
from kafkarec.internal.schemas import DEFAULT as DEFAULT_SCHEMAS, PROFILES

__all__ = ["add_decoder_arguments", "add_schemas_argument", "decoder_from_args", "schemas_from_args",
           "kafka_version_from_args", "decoder_for_path", "DECODE_CHOICES",
           "dead_letters_for_path", "dead_letter_json"]

#: share groups' dead letters (KIP-1191): not an internal topic; their provenance headers as named
#: fields beside the record as usual (kafkarec.dlq)
DEAD_LETTERS = "dead_letters"
#: the DLQ topics' default name prefix (the brokers' errors.deadletterqueue.topic.name.prefix),
#: by which ``auto`` decodes a folder's dead letters
DLQ_PREFIX = "dlq."
DECODE_CHOICES = ("auto", "none", "consumer_offsets", "transaction_state", "share_group_state",
                  "cluster_metadata", "remote_log_metadata", DEAD_LETTERS)


def add_decoder_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("internal topics (each implies --print-data-log)")
    g.add_argument("--offsets-decoder", dest="decode", action="store_const", const="consumer_offsets",
                   help="decode __consumer_offsets records (group metadata, offset commits, consumer and "
                        "share groups), as kafka-dump-log does")
    g.add_argument("--transaction-log-decoder", dest="decode", action="store_const",
                   const="transaction_state", help="decode __transaction_state records")
    g.add_argument("--share-group-state-decoder", dest="decode", action="store_const",
                   const="share_group_state", help="decode __share_group_state records")
    g.add_argument("--cluster-metadata-decoder", dest="decode", action="store_const",
                   const="cluster_metadata", help="decode __cluster_metadata records (and .checkpoint files)")
    g.add_argument("--remote-log-metadata-decoder", dest="decode", action="store_const",
                   const="remote_log_metadata", help="decode __remote_log_metadata records")
    g.add_argument("--decode", dest="decode", choices=DECODE_CHOICES, default=None,
                   help="auto: choose the decoder from each file's <topic>-<partition> folder name "
                        f"(a {DLQ_PREFIX}* folder's records as dead letters; files of other topics are printed "
                        "as usual); or name the decoder (dead_letters: a share group's DLQ records' provenance "
                        "headers as named fields, KIP-1191)")
    add_schemas_argument(g)
    g.add_argument("--kafka-version", choices=dumplog.KAFKA_VERSIONS, default=dumplog.DEFAULT_KAFKA_VERSION,
                   help="print decoded records as this Kafka's kafka-dump-log does (default "
                        f"{dumplog.DEFAULT_KAFKA_VERSION}; 4.3 prints __transaction_state's transactionStatus "
                        "as a number, 4.4 by name)")


def add_schemas_argument(p) -> None:
    p.add_argument("--schemas", choices=tuple(PROFILES), default=DEFAULT_SCHEMAS,
                   help="which Kafka's message schemas to read internal records with: current (Apache Kafka "
                        "trunk of 2026-08-22, the default) or 1eb7644 (4.0.0-SNAPSHOT of 2024-10-25, whose "
                        "share-group records differ)")


def schemas_from_args(args) -> str:
    return getattr(args, "schemas", DEFAULT_SCHEMAS) or DEFAULT_SCHEMAS


def kafka_version_from_args(args) -> str:
    """The Kafka whose kafka-dump-log the decoded records print as (--kafka-version)."""
    return getattr(args, "kafka_version", None) or dumplog.DEFAULT_KAFKA_VERSION


def decoder_from_args(args) -> Optional[str]:
    choice = getattr(args, "decode", None)
    return None if choice in (None, "none") else choice


_CACHE: Dict[str, Optional[str]] = {}


def decoder_for_path(choice: Optional[str], path: str) -> Optional[str]:
    """The internal topic whose decoder applies to `path` (None: print the bytes as usual)."""
    if choice is None or choice == DEAD_LETTERS:
        return None
    if choice != "auto":
        return topics.decoder_for(choice)
    folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
    try:
        return topics.decoder_for(folder)
    except ValueError:
        return None


def dead_letters_for_path(choice: Optional[str], path: str) -> bool:
    """Whether `path`'s records are read as share groups' dead letters: ``--decode dead_letters``,
    or ``auto`` in a folder of a topic named with Kafka's default DLQ prefix."""
    if choice == DEAD_LETTERS:
        return True
    return choice == "auto" and os.path.basename(os.path.dirname(os.path.abspath(path))).startswith(DLQ_PREFIX)


def dead_letter_json(r) -> Optional[dict]:
    """The record's dead-letter fields (:class:`kafkarec.dlq.DeadLetter`), or None."""
    from kafkarec.dlq import dead_letter
    letter = dead_letter(r.headers)
    return None if letter is None else letter.as_dict()


def record_text(topic: str, r, offset: int, schemas: str = DEFAULT_SCHEMAS,
                kafka_version: str = dumplog.DEFAULT_KAFKA_VERSION):
    """(key text, payload text) kafka-dump-log (of `kafka_version`) prints for a data record with the
    decoder of `topic`."""
    return dumplog.format_parts(topic, r.key, r.value, offset, schemas, kafka_version)


def control_text(r, schemas: str = DEFAULT_SCHEMAS) -> str:
    """What kafka-dump-log (of the schema set's Kafka) prints for a control record."""
    return dumplog.format_control(r.control_type_id, r.value, r.coordinator_epoch, schemas)


def record_json(topic: str, r, schemas: str = DEFAULT_SCHEMAS) -> dict:
    """The decoded record for --json: Kafka's JSON view of the key and value, or the error."""
    from kafkarec.errors import InternalRecordError
    try:
        rec = topics.decode(topic, r.key, r.value, json=True, schemas=schemas)
    except InternalRecordError as e:
        return {"error": str(e), "position": e.position}
    out = {"record_type": rec.record_type, "key_version": rec.key_version, "value_version": rec.value_version,
           "key": rec.key, "value": rec.value, "tombstone": rec.tombstone, "unknown": rec.unknown}
    if rec.api_key is not None:
        out["api_key"] = rec.api_key
    return out
