"""Schemas of __remote_log_metadata records: storage/src/main/resources/message.

Written in kafkarec's compact schema format (see kafkarec/internal/schema.py) from the
message definitions of Apache Kafka at commit d79bd502ec7fa49335afa422f442af80ed0ab8f6
(trunk of 2026-08-22).
"""

TEXT = r"""
# storage/src/main/resources/message/RemoteLogSegmentMetadataRecord.json
@RemoteLogSegmentMetadataRecord versions=0 flexible=0+ apikey=0
  remoteLogSegmentId RemoteLogSegmentIdEntry 0+
    topicIdPartition TopicIdPartitionEntry 0+
      name string 0+
      id uuid 0+
      partition int32 0+
    id uuid 0+
  startOffset int64 0+
  endOffset int64 0+
  brokerId int32 0+
  maxTimestampMs int64 0+
  eventTimestampMs int64 0+
  segmentLeaderEpochs []SegmentLeaderEpochEntry 0+
    leaderEpoch int32 0+
    offset int64 0+
  segmentSizeInBytes int32 0+
  customMetadata bytes 0+ null=0+ default=null
  remoteLogSegmentState int8 0+
  txnIndexEmpty bool 0+ tag=0@0+

# storage/src/main/resources/message/RemoteLogSegmentMetadataSnapshotRecord.json
@RemoteLogSegmentMetadataSnapshotRecord versions=0 flexible=0+ apikey=3
  segmentId uuid 0+
  startOffset int64 0+
  endOffset int64 0+
  brokerId int32 0+
  maxTimestampMs int64 0+
  eventTimestampMs int64 0+
  segmentLeaderEpochs []SegmentLeaderEpochEntry 0+
    leaderEpoch int32 0+
    offset int64 0+
  segmentSizeInBytes int32 0+
  customMetadata bytes 0+ null=0+ default=null
  remoteLogSegmentState int8 0+
  txnIndexEmpty bool 0+ tag=0@0+

# storage/src/main/resources/message/RemoteLogSegmentMetadataUpdateRecord.json
@RemoteLogSegmentMetadataUpdateRecord versions=0 flexible=0+ apikey=1
  remoteLogSegmentId RemoteLogSegmentIdEntry 0+
    topicIdPartition TopicIdPartitionEntry 0+
      name string 0+
      id uuid 0+
      partition int32 0+
    id uuid 0+
  brokerId int32 0+
  eventTimestampMs int64 0+
  customMetadata bytes 0+ null=0+ default=null
  remoteLogSegmentState int8 0+

# storage/src/main/resources/message/RemotePartitionDeleteMetadataRecord.json
@RemotePartitionDeleteMetadataRecord versions=0 flexible=0+ apikey=2
  topicIdPartition TopicIdPartitionEntry 0+
    name string 0+
    id uuid 0+
    partition int32 0+
  brokerId int32 0+
  eventTimestampMs int64 0+
  remotePartitionDeleteState int8 0+
"""
