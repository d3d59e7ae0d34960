"""Schemas of __share_group_state records (ShareCoordinatorRecordSerde): share-coordinator/src/main/resources/common/message.

Written in kafkarec's compact schema format (see kafkarec/internal/schema.py) from the
message definitions of Apache Kafka at commit 1eb7644349cb07139d6a3c1ad1986979647cac99
(trunk of 2024-10-25, 4.0.0-SNAPSHOT).
"""

TEXT = r"""
# share-coordinator/src/main/resources/common/message/ShareSnapshotKey.json
@ShareSnapshotKey versions=0 flexible=none
  groupId string 0
  topicId uuid 0
  partition int32 0

# share-coordinator/src/main/resources/common/message/ShareSnapshotValue.json
@ShareSnapshotValue versions=0 flexible=0+
  snapshotEpoch uint16 0
  stateEpoch int32 0+
  leaderEpoch int32 0+
  startOffset int64 0
  stateBatches []StateBatch 0
    firstOffset int64 0
    lastOffset int64 0
    deliveryState int8 0
    deliveryCount int16 0

# share-coordinator/src/main/resources/common/message/ShareUpdateKey.json
@ShareUpdateKey versions=1 flexible=none
  groupId string 1
  topicId uuid 1
  partition int32 1

# share-coordinator/src/main/resources/common/message/ShareUpdateValue.json
@ShareUpdateValue versions=0 flexible=0+
  snapshotEpoch uint16 0
  leaderEpoch int32 0+
  startOffset int64 0
  stateBatches []StateBatch 0
    firstOffset int64 0
    lastOffset int64 0
    deliveryState int8 0
    deliveryCount int16 0
"""
