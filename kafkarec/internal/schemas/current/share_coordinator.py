"""Schemas of __share_group_state records (ShareCoordinatorRecordSerde): share-coordinator/src/main/resources/common/message.

Written in kafkarec's compact schema format (see kafkarec/internal/schema.py) from the
message definitions of Apache Kafka at commit d79bd502ec7fa49335afa422f442af80ed0ab8f6
(trunk of 2026-08-22).
"""

TEXT = r"""
# share-coordinator/src/main/resources/common/message/ShareSnapshotKey.json
@ShareSnapshotKey versions=0 flexible=none apikey=0 kind=coordinator-key
  groupId string 0
  topicId uuid 0
  partition int32 0

# share-coordinator/src/main/resources/common/message/ShareSnapshotValue.json
@ShareSnapshotValue versions=0 flexible=0+ apikey=0 kind=coordinator-value
  snapshotEpoch int32 0+
  stateEpoch int32 0+
  leaderEpoch int32 0+
  startOffset int64 0+
  deliveryCompleteCount int32 0+ tag=0@0+ default=-1
  createTimestamp int64 0+
  writeTimestamp int64 0+
  stateBatches []StateBatch 0+
    firstOffset int64 0+
    lastOffset int64 0+
    deliveryState int8 0+
    deliveryCount int16 0+

# share-coordinator/src/main/resources/common/message/ShareUpdateKey.json
@ShareUpdateKey versions=0 flexible=none apikey=1 kind=coordinator-key
  groupId string 0
  topicId uuid 0
  partition int32 0

# share-coordinator/src/main/resources/common/message/ShareUpdateValue.json
@ShareUpdateValue versions=0 flexible=0+ apikey=1 kind=coordinator-value
  snapshotEpoch int32 0+
  leaderEpoch int32 0+
  startOffset int64 0+
  deliveryCompleteCount int32 0+ tag=0@0+ default=-1
  stateBatches []StateBatch 0+
    firstOffset int64 0+
    lastOffset int64 0+
    deliveryState int8 0+
    deliveryCount int16 0+
"""
