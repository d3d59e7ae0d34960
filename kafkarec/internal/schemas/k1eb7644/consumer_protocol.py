"""Schemas of the consumer protocol's subscription/assignment (inside GroupMetadataValue): clients/src/main/resources/common/message.

Written in kafkarec's compact schema format (see kafkarec/internal/schema.py) from the
message definitions of Apache Kafka at commit 1eb7644349cb07139d6a3c1ad1986979647cac99
(trunk of 2024-10-25, 4.0.0-SNAPSHOT).
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
