"""Schemas of __consumer_offsets records (GroupCoordinatorRecordSerde): group-coordinator/src/main/resources/common/message.

Written in kafkarec's compact schema format (see kafkarec/internal/schema.py) from the
message definitions of Apache Kafka at commit 1eb7644349cb07139d6a3c1ad1986979647cac99
(trunk of 2024-10-25, 4.0.0-SNAPSHOT).
"""

TEXT = r"""
# group-coordinator/src/main/resources/common/message/ConsumerGroupCurrentMemberAssignmentKey.json
@ConsumerGroupCurrentMemberAssignmentKey versions=8 flexible=none
  groupId string 8
  memberId string 8

# group-coordinator/src/main/resources/common/message/ConsumerGroupCurrentMemberAssignmentValue.json
@ConsumerGroupCurrentMemberAssignmentValue versions=0 flexible=0+
  memberEpoch int32 0+
  previousMemberEpoch int32 0+
  state int8 0+
  assignedPartitions []TopicPartitions 0+
    topicId uuid 0+
    partitions []int32 0+
  partitionsPendingRevocation []TopicPartitions 0+
    topicId uuid 0+
    partitions []int32 0+

# group-coordinator/src/main/resources/common/message/ConsumerGroupMemberMetadataKey.json
@ConsumerGroupMemberMetadataKey versions=5 flexible=none
  groupId string 5
  memberId string 5

# group-coordinator/src/main/resources/common/message/ConsumerGroupMemberMetadataValue.json
@ConsumerGroupMemberMetadataValue versions=0 flexible=0+
  instanceId string 0+ null=0+
  rackId string 0+ null=0+
  clientId string 0+
  clientHost string 0+
  subscribedTopicNames []string 0+
  subscribedTopicRegex string 0+ null=0+
  rebalanceTimeoutMs int32 0+ default=-1
  serverAssignor string 0+ null=0+
  classicMemberMetadata ClassicMemberMetadata 0+ null=0+ tag=0@0+
    sessionTimeoutMs int32 0+
    supportedProtocols []ClassicProtocol 0+
      name string 0+
      metadata bytes 0+

# group-coordinator/src/main/resources/common/message/ConsumerGroupMetadataKey.json
@ConsumerGroupMetadataKey versions=3 flexible=none
  groupId string 3

# group-coordinator/src/main/resources/common/message/ConsumerGroupMetadataValue.json
@ConsumerGroupMetadataValue versions=0 flexible=0+
  epoch int32 0+

# group-coordinator/src/main/resources/common/message/ConsumerGroupPartitionMetadataKey.json
@ConsumerGroupPartitionMetadataKey versions=4 flexible=none
  groupId string 4

# group-coordinator/src/main/resources/common/message/ConsumerGroupPartitionMetadataValue.json
@ConsumerGroupPartitionMetadataValue versions=0 flexible=0+
  topics []TopicMetadata 0+
    topicId uuid 0+
    topicName string 0+
    numPartitions int32 0+
    partitionMetadata []PartitionMetadata 0+
      partition int32 0+
      racks []string 0+

# group-coordinator/src/main/resources/common/message/ConsumerGroupTargetAssignmentMemberKey.json
@ConsumerGroupTargetAssignmentMemberKey versions=7 flexible=none
  groupId string 7
  memberId string 7

# group-coordinator/src/main/resources/common/message/ConsumerGroupTargetAssignmentMemberValue.json
@ConsumerGroupTargetAssignmentMemberValue versions=0 flexible=0+
  topicPartitions []TopicPartition 0+
    topicId uuid 0+
    partitions []int32 0+

# group-coordinator/src/main/resources/common/message/ConsumerGroupTargetAssignmentMetadataKey.json
@ConsumerGroupTargetAssignmentMetadataKey versions=6 flexible=none
  groupId string 6

# group-coordinator/src/main/resources/common/message/ConsumerGroupTargetAssignmentMetadataValue.json
@ConsumerGroupTargetAssignmentMetadataValue versions=0 flexible=0+
  assignmentEpoch int32 0+

# group-coordinator/src/main/resources/common/message/GroupMetadataKey.json
@GroupMetadataKey versions=2 flexible=none
  group string 2

# group-coordinator/src/main/resources/common/message/GroupMetadataValue.json
@GroupMetadataValue versions=0-4 flexible=4+
  protocolType string 0+
  generation int32 0+
  protocol string 0+ null=0+
  leader string 0+ null=0+
  currentStateTimestamp int64 2+ default=-1
  members []MemberMetadata 0+
    memberId string 0+
    groupInstanceId string 3+ null=3+ default=null
    clientId string 0+
    clientHost string 0+
    rebalanceTimeout int32 1+ default=-1
    sessionTimeout int32 0+
    subscription bytes 0+
    assignment bytes 0+

# group-coordinator/src/main/resources/common/message/OffsetCommitKey.json
@OffsetCommitKey versions=0-1 flexible=none
  group string 0-1
  topic string 0-1
  partition int32 0-1

# group-coordinator/src/main/resources/common/message/OffsetCommitValue.json
@OffsetCommitValue versions=0-4 flexible=4+
  offset int64 0+
  leaderEpoch int32 3+ default=-1
  metadata string 0+
  commitTimestamp int64 0+
  expireTimestamp int64 1 default=-1

# group-coordinator/src/main/resources/common/message/ShareGroupCurrentMemberAssignmentKey.json
@ShareGroupCurrentMemberAssignmentKey versions=14 flexible=none
  groupId string 14
  memberId string 14

# group-coordinator/src/main/resources/common/message/ShareGroupCurrentMemberAssignmentValue.json
@ShareGroupCurrentMemberAssignmentValue versions=0 flexible=0+
  memberEpoch int32 0+
  previousMemberEpoch int32 0+
  state int8 0+
  assignedPartitions []TopicPartitions 0+
    topicId uuid 0+
    partitions []int32 0+

# group-coordinator/src/main/resources/common/message/ShareGroupMemberMetadataKey.json
@ShareGroupMemberMetadataKey versions=10 flexible=none
  groupId string 10
  memberId string 10

# group-coordinator/src/main/resources/common/message/ShareGroupMemberMetadataValue.json
@ShareGroupMemberMetadataValue versions=0 flexible=0+
  rackId string 0+ null=0+
  clientId string 0+
  clientHost string 0+
  subscribedTopicNames []string 0+

# group-coordinator/src/main/resources/common/message/ShareGroupMetadataKey.json
@ShareGroupMetadataKey versions=11 flexible=none
  groupId string 11

# group-coordinator/src/main/resources/common/message/ShareGroupMetadataValue.json
@ShareGroupMetadataValue versions=0 flexible=0+
  epoch int32 0+

# group-coordinator/src/main/resources/common/message/ShareGroupPartitionMetadataKey.json
@ShareGroupPartitionMetadataKey versions=9 flexible=none
  groupId string 9

# group-coordinator/src/main/resources/common/message/ShareGroupPartitionMetadataValue.json
@ShareGroupPartitionMetadataValue versions=0 flexible=0+
  topics []TopicMetadata 0+
    topicId uuid 0+
    topicName string 0+
    numPartitions int32 0+
    partitionMetadata []PartitionMetadata 0+
      partition int32 0+
      racks []string 0+

# group-coordinator/src/main/resources/common/message/ShareGroupStatePartitionMetadataKey.json
@ShareGroupStatePartitionMetadataKey versions=15 flexible=none
  groupId string 15

# group-coordinator/src/main/resources/common/message/ShareGroupStatePartitionMetadataValue.json
@ShareGroupStatePartitionMetadataValue versions=0 flexible=0+
  initializedTopics []TopicPartitionsInfo 0+
    topicId uuid 0+
    topicName string 0+
    partitions []int32 0+
  deletingTopics []TopicInfo 0+
    topicId uuid 0+
    topicName string 0+

# group-coordinator/src/main/resources/common/message/ShareGroupTargetAssignmentMemberKey.json
@ShareGroupTargetAssignmentMemberKey versions=13 flexible=none
  groupId string 13
  memberId string 13

# group-coordinator/src/main/resources/common/message/ShareGroupTargetAssignmentMemberValue.json
@ShareGroupTargetAssignmentMemberValue versions=0 flexible=0+
  topicPartitions []TopicPartition 0+
    topicId uuid 0+
    partitions []int32 0+

# group-coordinator/src/main/resources/common/message/ShareGroupTargetAssignmentMetadataKey.json
@ShareGroupTargetAssignmentMetadataKey versions=12 flexible=none
  groupId string 12

# group-coordinator/src/main/resources/common/message/ShareGroupTargetAssignmentMetadataValue.json
@ShareGroupTargetAssignmentMetadataValue versions=0 flexible=0+
  assignmentEpoch int32 0+
"""
