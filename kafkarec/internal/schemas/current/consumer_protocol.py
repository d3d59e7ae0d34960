"""Schemas of the consumer protocol's subscription/assignment (inside GroupMetadataValue): clients/src/main/resources/common/message.

Written in kafkarec's compact schema format (see kafkarec/internal/schema.py) from the
message definitions of Apache Kafka at commit d79bd502ec7fa49335afa422f442af80ed0ab8f6
(trunk of 2026-08-22).
"""

TEXT = r"""
# clients/src/main/resources/common/message/ConsumerProtocolAssignment.json
@ConsumerProtocolAssignment versions=0-3 flexible=none
  assignedPartitions []TopicPartition 0+
    topic string 0+
    partitions []int32 0+
  userData bytes 0+ null=0+ default=null

# clients/src/main/resources/common/message/ConsumerProtocolSubscription.json
@ConsumerProtocolSubscription versions=0-3 flexible=none
  topics []string 0+
  userData bytes 0+ null=0+ default=null
  ownedPartitions []TopicPartition 1+
    topic string 1+
    partitions []int32 1+
  generationId int32 2+ default=-1
  rackId string 3+ null=3+ default=null
"""
