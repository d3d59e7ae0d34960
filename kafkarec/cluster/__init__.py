"""A cluster's state as its internal topics record it, read from a broker's log directory (local, a
URI, or stitched with its tiered copies): ``__cluster_metadata`` replayed into the controller's
metadata (:mod:`kafkarec.cluster.metadata`), and what the coordinators keep -- transactions,
consumer groups' committed offsets and lag, share groups (:mod:`kafkarec.cluster.coordinators`).

A room of its own above the codec (kafkarec.internal decodes the records; this room reads the log
through kafkarec.scan's one walk and replays them), so that the codec imports nothing of the reader.
"""
from kafkarec.cluster.metadata import ClusterState, replay
from kafkarec.cluster.coordinators import (committed_offsets, consumer_lag, log_end_offsets, open_transactions,
                                           share_group_states, transaction_states)

__all__ = ["ClusterState", "replay", "transaction_states", "open_transactions", "committed_offsets",
           "consumer_lag", "log_end_offsets", "share_group_states"]
