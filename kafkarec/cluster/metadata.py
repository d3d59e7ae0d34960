"""Replaying ``__cluster_metadata`` (KRaft's metadata log and its ``.checkpoint`` snapshots) into the state
the controller holds: brokers, controllers, topics and partitions, configs, features, producer-id blocks,
ACLs, client quotas, SCRAM users (names only), delegation tokens.

``ClusterState.state()`` has the shape of ``state`` in Kafka's metadata-image dumps used by the tests
(``tests/data/internal-topics/expected/cluster_metadata_state.json``), without SCRAM secrets.
"""
from __future__ import annotations

import os
import posixpath
import struct
from typing import Any, Dict, Iterator, List, Optional, Tuple

from kafkarec.internal import topics as _topics
from kafkarec.internal.schema import ZERO_UUID

__all__ = ["ClusterState", "replay",
           "MIGRATING_DIRECTORY", "CONFIG_RESOURCE_TYPES"]

MIGRATING_DIRECTORY = ZERO_UUID      # Kafka's DirectoryId.MIGRATING is Uuid(0, 0)
#: ConfigResource.Type ids -> names
CONFIG_RESOURCE_TYPES = {0: "UNKNOWN", 2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS",
                         32: "GROUP"}


def _uuid_sort_key(u: str) -> Tuple[int, int]:
    import base64
    raw = base64.urlsafe_b64decode(u + "==")
    return struct.unpack(">qq", raw)


class ClusterState:
    """The cluster's metadata after the records applied so far (``apply``), as plain dicts."""

    def __init__(self) -> None:
        self.features: Dict[str, int] = {}
        self.zk_migration_state = 0
        self.brokers: Dict[int, dict] = {}
        self.controllers: Dict[int, dict] = {}
        self.topics_by_id: Dict[str, dict] = {}
        self.configs: Dict[str, Dict[str, Dict[str, str]]] = {}
        self.next_producer_id = 0
        self.producer_id_blocks: List[dict] = []
        self.acls: Dict[str, dict] = {}
        self.client_quotas: Dict[str, Dict[str, float]] = {}
        self.scram_users: Dict[str, dict] = {}
        self.delegation_tokens: Dict[str, dict] = {}
        self.last_offset: Optional[int] = None
        self._pending: Optional[List[Tuple[str, dict]]] = None   # inside a metadata transaction

    # ------------------------------------------------------------------------------------------ applying
    def apply(self, record_type: str, v: dict, offset: Optional[int] = None) -> None:
        """Apply one decoded metadata record (its MetadataRecordType name and dict value)."""
        if offset is not None:
            self.last_offset = offset
        if record_type == "BEGIN_TRANSACTION_RECORD":
            self._pending = []
            return
        if record_type == "END_TRANSACTION_RECORD":
            pending, self._pending = self._pending or [], None
            for t, val in pending:
                self._apply(t, val)
            return
        if record_type == "ABORT_TRANSACTION_RECORD":
            self._pending = None
            return
        if self._pending is not None:
            self._pending.append((record_type, v))
            return
        self._apply(record_type, v)

    def _apply(self, t: str, v: dict) -> None:
        handler = getattr(self, "_" + t.lower(), None)
        if handler is not None:
            handler(v)

    def _feature_level_record(self, v):
        if v["featureLevel"] == 0 and v["name"] != "metadata.version":
            self.features.pop(v["name"], None)
        else:
            self.features[v["name"]] = v["featureLevel"]

    def _zk_migration_state_record(self, v):
        self.zk_migration_state = v["zkMigrationState"]

    def _register_broker_record(self, v):
        self.brokers[v["brokerId"]] = {
            "id": v["brokerId"], "epoch": v["brokerEpoch"], "incarnation_id": v["incarnationId"],
            "endpoints": {e["name"]: {"host": e["host"], "port": e["port"], "security_protocol": e["securityProtocol"]}
                          for e in v["endPoints"]},
            "supported_features": {f["name"]: {"min": f["minSupportedVersion"], "max": f["maxSupportedVersion"]}
                                   for f in v["features"]},
            "rack": v["rack"], "fenced": v.get("fenced", True),
            "in_controlled_shutdown": v.get("inControlledShutdown", False),
            "is_migrating_zk_broker": v.get("isMigratingZkBroker", False),
            "log_dirs": sorted(v.get("logDirs") or [], key=_uuid_sort_key),
        }

    def _unregister_broker_record(self, v):
        self.brokers.pop(v["brokerId"], None)

    def _fence_broker_record(self, v):
        b = self.brokers.get(v["id"])
        if b is not None and b["epoch"] == v["epoch"]:
            b["fenced"] = True

    def _unfence_broker_record(self, v):
        b = self.brokers.get(v["id"])
        if b is not None and b["epoch"] == v["epoch"]:
            b["fenced"] = False

    def _broker_registration_change_record(self, v):
        b = self.brokers.get(v["brokerId"])
        if b is None or b["epoch"] != v["brokerEpoch"]:
            return
        fenced = v.get("fenced", 0)
        if fenced == 1:
            b["fenced"] = True
        elif fenced == -1:
            b["fenced"] = False
        if v.get("inControlledShutdown", 0) == 1:
            b["in_controlled_shutdown"] = True
        if v.get("logDirs"):
            b["log_dirs"] = sorted(v["logDirs"], key=_uuid_sort_key)

    def _register_controller_record(self, v):
        self.controllers[v["controllerId"]] = {
            "id": v["controllerId"], "incarnation_id": v["incarnationId"],
            "zk_migration_ready": v["zkMigrationReady"],
            "endpoints": {e["name"]: {"host": e["host"], "port": e["port"], "security_protocol": e["securityProtocol"]}
                          for e in v["endPoints"]},
            "supported_features": {f["name"]: {"min": f["minSupportedVersion"], "max": f["maxSupportedVersion"]}
                                   for f in v["features"]},
        }

    def _topic_record(self, v):
        self.topics_by_id[v["topicId"]] = {"name": v["name"], "topic_id": v["topicId"], "partitions": {}}

    def _remove_topic_record(self, v):
        topic = self.topics_by_id.pop(v["topicId"], None)
        if topic is not None:
            self.configs.get("TOPIC", {}).pop(topic["name"], None)
            if not self.configs.get("TOPIC", True):
                del self.configs["TOPIC"]

    def _partition_record(self, v):
        topic = self.topics_by_id.get(v["topicId"])
        if topic is None:
            return
        dirs = v.get("directories") or [MIGRATING_DIRECTORY] * len(v["replicas"])
        topic["partitions"][v["partitionId"]] = {
            "replicas": list(v["replicas"]), "isr": list(v["isr"]),
            "removing_replicas": list(v["removingReplicas"]), "adding_replicas": list(v["addingReplicas"]),
            "leader": v["leader"], "leader_epoch": v["leaderEpoch"], "partition_epoch": v["partitionEpoch"],
            "leader_recovery_state": v.get("leaderRecoveryState", 0),
            "eligible_leader_replicas": list(v.get("eligibleLeaderReplicas") or []),
            "last_known_elr": list(v.get("lastKnownElr") or []),
            "directories": list(dirs),
        }

    def _partition_change_record(self, v):
        topic = self.topics_by_id.get(v["topicId"])
        p = None if topic is None else topic["partitions"].get(v["partitionId"])
        if p is None:
            return
        for src, dst in (("isr", "isr"), ("removingReplicas", "removing_replicas"),
                         ("addingReplicas", "adding_replicas"), ("eligibleLeaderReplicas", "eligible_leader_replicas"),
                         ("lastKnownElr", "last_known_elr")):
            if v.get(src) is not None:
                p[dst] = list(v[src])
        if v.get("replicas") is not None:
            p["replicas"] = list(v["replicas"])
            if v.get("directories") is None:
                p["directories"] = [MIGRATING_DIRECTORY] * len(v["replicas"])
        if v.get("directories") is not None:
            p["directories"] = list(v["directories"])
        leader = v.get("leader", -2)
        if leader != -2:
            p["leader"] = leader
            p["leader_epoch"] += 1
        lrs = v.get("leaderRecoveryState", -1)
        if lrs != -1:
            p["leader_recovery_state"] = lrs
        p["partition_epoch"] += 1

    def _config_record(self, v):
        rtype = CONFIG_RESOURCE_TYPES.get(v["resourceType"], str(v["resourceType"]))
        by_name = self.configs.setdefault(rtype, {})
        keys = by_name.setdefault(v["resourceName"], {})
        if v["value"] is None:
            keys.pop(v["name"], None)
        else:
            keys[v["name"]] = v["value"]
        if not keys:
            del by_name[v["resourceName"]]
        if not by_name:
            del self.configs[rtype]

    def _producer_ids_record(self, v):
        self.producer_id_blocks.append({"broker_id": v["brokerId"], "broker_epoch": v["brokerEpoch"],
                                        "first_producer_id": self.next_producer_id,
                                        "next_producer_id": v["nextProducerId"]})
        self.next_producer_id = v["nextProducerId"]

    def _access_control_entry_record(self, v):
        self.acls[v["id"]] = {"resource_type": v["resourceType"], "resource_name": v["resourceName"],
                              "pattern_type": v["patternType"], "principal": v["principal"], "host": v["host"],
                              "operation": v["operation"], "permission_type": v["permissionType"]}

    def _remove_access_control_entry_record(self, v):
        self.acls.pop(v["id"], None)

    def _client_quota_record(self, v):
        entity = ",".join(sorted(f"{e['entityType']}={'<default>' if e['entityName'] is None else e['entityName']}"
                                 for e in v["entity"]))
        keys = self.client_quotas.setdefault(entity, {})
        if v["remove"]:
            keys.pop(v["key"], None)
        else:
            keys[v["key"]] = v["value"]
        if not keys:
            del self.client_quotas[entity]

    def _user_scram_credential_record(self, v):
        # names, mechanism and iterations only: the salt and keys are secrets and are never kept
        self.scram_users[f"{v['mechanism']}:{v['name']}"] = {"name": v["name"], "mechanism": v["mechanism"],
                                                              "iterations": v["iterations"]}

    def _remove_user_scram_credential_record(self, v):
        self.scram_users.pop(f"{v['mechanism']}:{v['name']}", None)

    def _delegation_token_record(self, v):
        self.delegation_tokens[v["tokenId"]] = {
            "owner": v["owner"], "requester": v["requester"], "renewers": list(v["renewers"]),
            "issue_timestamp": v["issueTimestamp"], "max_timestamp": v["maxTimestamp"],
            "expiration_timestamp": v["expirationTimestamp"]}

    def _clear_elr_record(self, v):
        # ClearElrRecord (newer Kafka): the topic named (every topic when the name is empty) loses its
        # ELR and last known ELR, as a PartitionChangeRecord would (partition epoch + 1) where they were set
        for topic in self.topics_by_id.values():
            if v["topicName"] and topic["name"] != v["topicName"]:
                continue
            for p in topic["partitions"].values():
                if p["eligible_leader_replicas"] or p["last_known_elr"]:
                    p["eligible_leader_replicas"] = []
                    p["last_known_elr"] = []
                    p["partition_epoch"] += 1

    def _unregister_controller_record(self, v):
        self.controllers.pop(v["controllerId"], None)

    def _remove_delegation_token_record(self, v):
        self.delegation_tokens.pop(v["tokenId"], None)

    # ------------------------------------------------------------------------------------------- viewing
    def state(self) -> Dict[str, Any]:
        """The state as JSON-ready dicts (keys of ids as strings), in the fixtures' ``state`` shape."""
        topics = {}
        for t in sorted(self.topics_by_id.values(), key=lambda t: t["name"]):
            topics[t["name"]] = {"topic_id": t["topic_id"],
                                 "partitions": {str(p): dict(v) for p, v in sorted(t["partitions"].items())}}
        return {
            "features": dict(sorted(self.features.items())),
            "zk_migration_state": self.zk_migration_state,
            "brokers": {str(k): v for k, v in sorted(self.brokers.items())},
            "controllers": {str(k): v for k, v in sorted(self.controllers.items())},
            "topics": topics,
            "configs": {t: {n: dict(sorted(kv.items())) for n, kv in sorted(names.items())}
                        for t, names in sorted(self.configs.items())},
            "producer_ids": {"next_producer_id": self.next_producer_id,
                             "blocks": [dict(b) for b in self.producer_id_blocks]},
            "acls": dict(sorted(self.acls.items())),
            "client_quotas": {k: dict(sorted(v.items())) for k, v in sorted(self.client_quotas.items())},
            "scram_credentials": dict(sorted(self.scram_users.items())),
            "delegation_tokens": dict(sorted(self.delegation_tokens.items())),
        }

    def summary(self) -> str:
        """A readable multi-line summary."""
        s = self.state()
        lines = [f"Cluster metadata (last applied offset: {self.last_offset})"]
        lines.append("Features: " + ", ".join(f"{k}={v}" for k, v in s["features"].items()))
        lines.append(f"Controllers ({len(s['controllers'])}):")
        for c in s["controllers"].values():
            eps = ", ".join(f"{n}://{e['host']}:{e['port']}" for n, e in c["endpoints"].items())
            lines.append(f"  {c['id']}: {eps}")
        lines.append(f"Brokers ({len(s['brokers'])}):")
        for b in s["brokers"].values():
            eps = ", ".join(f"{n}://{e['host']}:{e['port']}" for n, e in b["endpoints"].items())
            flags = [f for f, on in (("fenced", b["fenced"]), ("in controlled shutdown", b["in_controlled_shutdown"]),
                                     ("migrating from ZooKeeper", b["is_migrating_zk_broker"])) if on]
            lines.append(f"  {b['id']} (epoch {b['epoch']}, rack {b['rack']}): {eps}"
                         + (f" [{', '.join(flags)}]" if flags else ""))
        lines.append(f"Topics ({len(s['topics'])}):")
        for name, t in s["topics"].items():
            lines.append(f"  {name} (id {t['topic_id']}, {len(t['partitions'])} partitions)")
            for pid, p in t["partitions"].items():
                lines.append(f"    {pid}: leader {p['leader']} (epoch {p['leader_epoch']}) replicas {p['replicas']} "
                             f"isr {p['isr']}" + (f" elr {p['eligible_leader_replicas']}"
                                                  if p["eligible_leader_replicas"] else ""))
        if s["configs"]:
            lines.append("Configs:")
            for rtype, names in s["configs"].items():
                for name, kv in names.items():
                    shown = name if name else "<cluster default>"
                    lines.append(f"  {rtype} {shown}: " + ", ".join(f"{k}={v}" for k, v in kv.items()))
        lines.append(f"Producer ids: next {s['producer_ids']['next_producer_id']} "
                     f"({len(s['producer_ids']['blocks'])} blocks)")
        lines.append(f"ACLs: {len(s['acls'])}; client quotas: {len(s['client_quotas'])}; "
                     f"SCRAM users: {', '.join(s['scram_credentials']) or 'none'}; "
                     f"delegation tokens: {len(s['delegation_tokens'])}")
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------- reading files

def _metadata_log(path, storage_options: Optional[dict] = None, listing=None):
    """The ``__cluster_metadata`` partition of a log directory (or that folder itself) wherever it is
    (a URI, ``storage_options`` as every reader takes them), listed by the one reader: its
    :class:`kafkarec.scan.PartitionWalk` (segments in offset order, ``part.snapshots`` the KRaft
    snapshots beside them, by end offset).  ``listing``: the caller's listing of ``path`` (a
    :class:`kafkarec.scan.LogScan` listing), not listed again."""
    from kafkarec.scan import LogScan, ScanConfig
    source = os.fspath(path)
    scan = LogScan(ScanConfig.of(source, storage_options=storage_options, topics=["__cluster_metadata"], threads=1))
    found = scan.partition_walks() if listing is None else scan.partition_walks([listing])
    walks = [w for w in found if w.part.partition is not None]
    if not walks:
        raise FileNotFoundError(f"no __cluster_metadata-<n> folder with a log in {source} (no .log segment or "
                                ".checkpoint snapshot)")
    return walks[0]


def _records(walk, *, strict: bool, schemas: str, snapshot=None) -> Iterator[Tuple[int, str, dict]]:
    for r in walk.records(snapshot=snapshot):
        rec = _topics.decode("__cluster_metadata", r.key, r.value, strict=strict, schemas=schemas)
        if not rec.unknown:
            yield r.offset, rec.record_type, rec.value


def replay(path: str, *, at_offset: Optional[int] = None, use_snapshot: Optional[bool] = None,
           strict: bool = False, schemas: str = _topics.DEFAULT_SCHEMAS,
           storage_options: Optional[dict] = None, listing=None) -> ClusterState:
    """Replay ``__cluster_metadata`` at `path` into a :class:`ClusterState`.

    ``at_offset``: the state after every record with offset <= at_offset (default: the whole log).
    ``use_snapshot``: start from the latest snapshot (``.checkpoint``) whose end offset is not beyond the
    target, then apply the log records from its end offset on. By default a snapshot is used only when the
    log no longer starts at offset 0 (it was cleaned): the whole log gives the same state plus the history
    a snapshot cannot hold (a snapshot keeps only the last producer-id block, so ``producer_ids.blocks``
    then starts with that one record).

    ``path`` may be a URI (``s3://bucket/logs``, with ``storage_options`` as every reader takes them):
    wherever it is, the log is listed and walked by the one reader
    (:meth:`kafkarec.scan.PartitionWalk.records`); ``listing``: a listing of ``path`` the caller
    made already (:meth:`kafkarec.scan.LogScan.listing`), replayed over, not listed again."""
    walk = _metadata_log(path, storage_options, listing)
    logs = walk.part.segments
    state = ClusterState()
    start = 0
    if use_snapshot is None:
        use_snapshot = not logs or logs[0].base_offset != 0
    if use_snapshot:
        snaps = [(int(posixpath.basename(e.path)[:20]), e) for e in walk.part.snapshots]
        usable = [(end, e) for end, e in snaps if at_offset is None or end <= at_offset + 1]
        if usable:
            end_offset, snapshot = usable[-1]
            for offset, t, v in _records(walk, strict=strict, schemas=schemas, snapshot=snapshot):
                state.apply(t, v)
            state.last_offset = end_offset - 1
            start = end_offset
    for offset, t, v in _records(walk, strict=strict, schemas=schemas):
        if offset < start:
            continue
        if at_offset is not None and offset > at_offset:
            return state
        state.apply(t, v, offset)
    return state
