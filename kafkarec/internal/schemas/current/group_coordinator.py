"""Schemas of __consumer_offsets records (GroupCoordinatorRecordSerde): group-coordinator/src/main/resources/common/message.

Written in kafkarec's compact schema format (see kafkarec/internal/schema.py) from the
message definitions of Apache Kafka at commit d79bd502ec7fa49335afa422f442af80ed0ab8f6
(trunk of 2026-08-22).
"""

TEXT = r"""
# group-coordinator/src/main/resources/common/message/ConsumerGroupCurrentMemberAssignmentKey.json
@ConsumerGroupCurrentMemberAssignmentKey versions=0 flexible=none apikey=8 kind=coordinator-key
  groupId string 0
  memberId string 0

# group-coordinator/src/main/resources/common/message/ConsumerGroupCurrentMemberAssignmentValue.json
@ConsumerGroupCurrentMemberAssignmentValue versions=0 flexible=0+ apikey=8 kind=coordinator-value
  memberEpoch int32 0+
  previousMemberEpoch int32 0+
  state int8 0+
  assignedPartitions []TopicPartitions 0+
    topicId uuid 0+
    partitions []int32 0+
    assignmentEpochs []int32 0+ null=0+ tag=0@0+
  partitionsPendingRevocation []TopicPartitions 0+
    topicId uuid 0+
    partitions []int32 0+
    assignmentEpochs []int32 0+ null=0+ tag=0@0+

# group-coordinator/src/main/resources/common/message/ConsumerGroupMemberMetadataKey.json
@ConsumerGroupMemberMetadataKey versions=0 flexible=none apikey=5 kind=coordinator-key
  groupId string 0
  memberId string 0

# group-coordinator/src/main/resources/common/message/ConsumerGroupMemberMetadataValue.json
@ConsumerGroupMemberMetadataValue versions=0 flexible=0+ apikey=5 kind=coordinator-value
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
@ConsumerGroupMetadataKey versions=0 flexible=none apikey=3 kind=coordinator-key
  groupId string 0

# group-coordinator/src/main/resources/common/message/ConsumerGroupMetadataValue.json
@ConsumerGroupMetadataValue versions=0 flexible=0+ apikey=3 kind=coordinator-value
  epoch int32 0+
  metadataHash int64 0+ tag=0@0+ default=0

# group-coordinator/src/main/resources/common/message/ConsumerGroupPartitionMetadataKey.json
@ConsumerGroupPartitionMetadataKey versions=0 flexible=none apikey=4 kind=coordinator-key
  groupId string 0

# group-coordinator/src/main/resources/common/message/ConsumerGroupPartitionMetadataValue.json
@ConsumerGroupPartitionMetadataValue versions=0 flexible=0+ apikey=4 kind=coordinator-value
  topics []TopicMetadata 0+
    topicId uuid 0+
    topicName string 0+
    numPartitions int32 0+
    partitionMetadata []PartitionMetadata 0+
      partition int32 0+
      racks []string 0+

# group-coordinator/src/main/resources/common/message/ConsumerGroupRegularExpressionKey.json
@ConsumerGroupRegularExpressionKey versions=0 flexible=none apikey=16 kind=coordinator-key
  groupId string 0
  regularExpression string 0

# group-coordinator/src/main/resources/common/message/ConsumerGroupRegularExpressionValue.json
@ConsumerGroupRegularExpressionValue versions=0 flexible=0+ apikey=16 kind=coordinator-value
  topics []string 0+
  version int64 0+
  timestamp int64 0+

# group-coordinator/src/main/resources/common/message/ConsumerGroupTargetAssignmentMemberKey.json
@ConsumerGroupTargetAssignmentMemberKey versions=0 flexible=none apikey=7 kind=coordinator-key
  groupId string 0
  memberId string 0

# group-coordinator/src/main/resources/common/message/ConsumerGroupTargetAssignmentMemberValue.json
@ConsumerGroupTargetAssignmentMemberValue versions=0 flexible=0+ apikey=7 kind=coordinator-value
  topicPartitions []TopicPartition 0+
    topicId uuid 0+
    partitions []int32 0+

# group-coordinator/src/main/resources/common/message/ConsumerGroupTargetAssignmentMetadataKey.json
@ConsumerGroupTargetAssignmentMetadataKey versions=0 flexible=none apikey=6 kind=coordinator-key
  groupId string 0

# group-coordinator/src/main/resources/common/message/ConsumerGroupTargetAssignmentMetadataValue.json
@ConsumerGroupTargetAssignmentMetadataValue versions=0 flexible=0+ apikey=6 kind=coordinator-value
  assignmentEpoch int32 0+
  assignmentTimestamp int64 0+ tag=0@0+ default=0

# group-coordinator/src/main/resources/common/message/GroupMetadataKey.json
@GroupMetadataKey versions=0 flexible=none apikey=2 kind=coordinator-key
  group string 0

# group-coordinator/src/main/resources/common/message/GroupMetadataValue.json
@GroupMetadataValue versions=0-4 flexible=4+ apikey=2 kind=coordinator-value
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

# group-coordinator/src/main/resources/common/message/LegacyOffsetCommitKey.json
@LegacyOffsetCommitKey versions=0 flexible=none apikey=0 kind=coordinator-key
  group string 0
  topic string 0
  partition int32 0

# group-coordinator/src/main/resources/common/message/LegacyOffsetCommitValue.json
@LegacyOffsetCommitValue versions=0 flexible=none apikey=0 kind=coordinator-value
  offset int64 0
  metadata string 0
  commitTimestamp int64 0

# group-coordinator/src/main/resources/common/message/OffsetCommitKey.json
@OffsetCommitKey versions=0 flexible=none apikey=1 kind=coordinator-key
  group string 0
  topic string 0
  partition int32 0

# group-coordinator/src/main/resources/common/message/OffsetCommitValue.json
@OffsetCommitValue versions=0-4 flexible=4+ apikey=1 kind=coordinator-value
  offset int64 0+
  leaderEpoch int32 3+ default=-1
  metadata string 0+
  commitTimestamp int64 0+
  expireTimestamp int64 1 default=-1
  topicId uuid 4+ tag=0@4+

# group-coordinator/src/main/resources/common/message/ShareGroupCurrentMemberAssignmentKey.json
@ShareGroupCurrentMemberAssignmentKey versions=0 flexible=none apikey=14 kind=coordinator-key
  groupId string 0
  memberId string 0

# group-coordinator/src/main/resources/common/message/ShareGroupCurrentMemberAssignmentValue.json
@ShareGroupCurrentMemberAssignmentValue versions=0 flexible=0+ apikey=14 kind=coordinator-value
  memberEpoch int32 0+
  previousMemberEpoch int32 0+
  state int8 0+
  assignedPartitions []TopicPartitions 0+
    topicId uuid 0+
    partitions []int32 0+

# group-coordinator/src/main/resources/common/message/ShareGroupMemberMetadataKey.json
@ShareGroupMemberMetadataKey versions=0 flexible=none apikey=10 kind=coordinator-key
  groupId string 0
  memberId string 0

# group-coordinator/src/main/resources/common/message/ShareGroupMemberMetadataValue.json
@ShareGroupMemberMetadataValue versions=0 flexible=0+ apikey=10 kind=coordinator-value
  rackId string 0+ null=0+
  clientId string 0+
  clientHost string 0+
  subscribedTopicNames []string 0+

# group-coordinator/src/main/resources/common/message/ShareGroupMetadataKey.json
@ShareGroupMetadataKey versions=0 flexible=none apikey=11 kind=coordinator-key
  groupId string 0

# group-coordinator/src/main/resources/common/message/ShareGroupMetadataValue.json
@ShareGroupMetadataValue versions=0 flexible=0+ apikey=11 kind=coordinator-value
  epoch int32 0+
  metadataHash int64 0+

# group-coordinator/src/main/resources/common/message/ShareGroupStatePartitionMetadataKey.json
@ShareGroupStatePartitionMetadataKey versions=0 flexible=none apikey=15 kind=coordinator-key
  groupId string 0

# group-coordinator/src/main/resources/common/message/ShareGroupStatePartitionMetadataValue.json
@ShareGroupStatePartitionMetadataValue versions=0 flexible=0+ apikey=15 kind=coordinator-value
  initializingTopics []TopicPartitionsInfo 0+
    topicId uuid 0+
    topicName string 0+
    partitions []int32 0+
  initializedTopics []TopicPartitionsInfo 0+
    topicId uuid 0+
    topicName string 0+
    partitions []int32 0+
  deletingTopics []TopicInfo 0+
    topicId uuid 0+
    topicName string 0+

# group-coordinator/src/main/resources/common/message/ShareGroupTargetAssignmentMemberKey.json
@ShareGroupTargetAssignmentMemberKey versions=0 flexible=none apikey=13 kind=coordinator-key
  groupId string 0
  memberId string 0

# group-coordinator/src/main/resources/common/message/ShareGroupTargetAssignmentMemberValue.json
@ShareGroupTargetAssignmentMemberValue versions=0 flexible=0+ apikey=13 kind=coordinator-value
  topicPartitions []TopicPartition 0+
    topicId uuid 0+
    partitions []int32 0+

# group-coordinator/src/main/resources/common/message/ShareGroupTargetAssignmentMetadataKey.json
@ShareGroupTargetAssignmentMetadataKey versions=0 flexible=none apikey=12 kind=coordinator-key
  groupId string 0

# group-coordinator/src/main/resources/common/message/ShareGroupTargetAssignmentMetadataValue.json
@ShareGroupTargetAssignmentMetadataValue versions=0 flexible=0+ apikey=12 kind=coordinator-value
  assignmentEpoch int32 0+
  assignmentTimestamp int64 0+ tag=0@0+ default=0

# group-coordinator/src/main/resources/common/message/StreamsGroupCurrentMemberAssignmentKey.json
@StreamsGroupCurrentMemberAssignmentKey versions=0 flexible=none apikey=22 kind=coordinator-key
  groupId string 0
  memberId string 0

# group-coordinator/src/main/resources/common/message/StreamsGroupCurrentMemberAssignmentValue.json
@StreamsGroupCurrentMemberAssignmentValue versions=0 flexible=0+ apikey=22 kind=coordinator-value
  memberEpoch int32 0+
  previousMemberEpoch int32 0+
  state int8 0+
  activeTasks []TaskIds 0+
    subtopologyId string 0+
    partitions []int32 0+
    assignmentEpochs []int32 0+ null=0+ tag=0@0+
  standbyTasks []TaskIds 0+
    subtopologyId string 0+
    partitions []int32 0+
    assignmentEpochs []int32 0+ null=0+ tag=0@0+
  warmupTasks []TaskIds 0+
    subtopologyId string 0+
    partitions []int32 0+
    assignmentEpochs []int32 0+ null=0+ tag=0@0+
  activeTasksPendingRevocation []TaskIds 0+
    subtopologyId string 0+
    partitions []int32 0+
    assignmentEpochs []int32 0+ null=0+ tag=0@0+
  standbyTasksPendingRevocation []TaskIds 0+
    subtopologyId string 0+
    partitions []int32 0+
    assignmentEpochs []int32 0+ null=0+ tag=0@0+
  warmupTasksPendingRevocation []TaskIds 0+
    subtopologyId string 0+
    partitions []int32 0+
    assignmentEpochs []int32 0+ null=0+ tag=0@0+

# group-coordinator/src/main/resources/common/message/StreamsGroupMemberMetadataKey.json
@StreamsGroupMemberMetadataKey versions=0 flexible=none apikey=19 kind=coordinator-key
  groupId string 0
  memberId string 0

# group-coordinator/src/main/resources/common/message/StreamsGroupMemberMetadataValue.json
@StreamsGroupMemberMetadataValue versions=0 flexible=0+ apikey=19 kind=coordinator-value
  instanceId string 0+ null=0+
  rackId string 0+ null=0+
  clientId string 0+
  clientHost string 0+
  rebalanceTimeoutMs int32 0+ default=-1
  topologyEpoch int32 0+
  processId string 0+
  userEndpoint Endpoint 0+ null=0+ default=null
    host string 0+
    port uint16 0+
  clientTags []KeyValue 0+
    key string 0+
    value string 0+

# group-coordinator/src/main/resources/common/message/StreamsGroupMetadataKey.json
@StreamsGroupMetadataKey versions=0 flexible=none apikey=17 kind=coordinator-key
  groupId string 0

# group-coordinator/src/main/resources/common/message/StreamsGroupMetadataValue.json
@StreamsGroupMetadataValue versions=0 flexible=0+ apikey=17 kind=coordinator-value
  epoch int32 0+
  metadataHash int64 0+
  validatedTopologyEpoch int32 0+ tag=0@0+ default=-1
  lastAssignmentConfigs []LastAssignmentConfig 0+ null=0+ tag=1@0+
    key string 0+
    value string 0+
  storedDescriptionTopologyEpoch int32 0+ tag=2@0+ default=-1
  failedDescriptionTopologyEpoch int32 0+ tag=3@0+ default=-1

# group-coordinator/src/main/resources/common/message/StreamsGroupTargetAssignmentMemberKey.json
@StreamsGroupTargetAssignmentMemberKey versions=0 flexible=none apikey=21 kind=coordinator-key
  groupId string 0
  memberId string 0

# group-coordinator/src/main/resources/common/message/StreamsGroupTargetAssignmentMemberValue.json
@StreamsGroupTargetAssignmentMemberValue versions=0 flexible=0+ apikey=21 kind=coordinator-value
  activeTasks []TaskIds 0+
    subtopologyId string 0+
    partitions []int32 0+
  standbyTasks []TaskIds 0+
    subtopologyId string 0+
    partitions []int32 0+
  warmupTasks []TaskIds 0+
    subtopologyId string 0+
    partitions []int32 0+

# group-coordinator/src/main/resources/common/message/StreamsGroupTargetAssignmentMetadataKey.json
@StreamsGroupTargetAssignmentMetadataKey versions=0 flexible=none apikey=20 kind=coordinator-key
  groupId string 0

# group-coordinator/src/main/resources/common/message/StreamsGroupTargetAssignmentMetadataValue.json
@StreamsGroupTargetAssignmentMetadataValue versions=0 flexible=0+ apikey=20 kind=coordinator-value
  assignmentEpoch int32 0+
  assignmentTimestamp int64 0+ tag=0@0+ default=0

# group-coordinator/src/main/resources/common/message/StreamsGroupTopologyKey.json
@StreamsGroupTopologyKey versions=0 flexible=none apikey=23 kind=coordinator-key
  groupId string 0

# group-coordinator/src/main/resources/common/message/StreamsGroupTopologyValue.json
@StreamsGroupTopologyValue versions=0 flexible=0+ apikey=23 kind=coordinator-value
  epoch int32 0+
  subtopologies []Subtopology 0+
    subtopologyId string 0+
    sourceTopics []string 0+
    sourceTopicRegex []string 0+
    stateChangelogTopics []TopicInfo 0+
      name string 0+
      partitions int32 0+
      replicationFactor int16 0+
      topicConfigs []TopicConfig 0+
        key string 0+
        value string 0+
    repartitionSinkTopics []string 0+
    repartitionSourceTopics []TopicInfo 0+
      name string 0+
      partitions int32 0+
      replicationFactor int16 0+
      topicConfigs []TopicConfig 0+
        key string 0+
        value string 0+
    copartitionGroups []CopartitionGroup 0+
      sourceTopics []int16 0+
      sourceTopicRegex []int16 0+
      repartitionSourceTopics []int16 0+
"""
