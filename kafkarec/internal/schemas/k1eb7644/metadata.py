"""Schemas of __cluster_metadata records (MetadataRecordType api keys): metadata/src/main/resources/common/metadata.

Written in kafkarec's compact schema format (see kafkarec/internal/schema.py) from the
message definitions of Apache Kafka at commit 1eb7644349cb07139d6a3c1ad1986979647cac99
(trunk of 2024-10-25, 4.0.0-SNAPSHOT).
"""

TEXT = r"""
# metadata/src/main/resources/common/metadata/AbortTransactionRecord.json
@AbortTransactionRecord versions=0 flexible=0+ apikey=25
  reason string 0+ null=0+ tag=0@0+ default=null

# metadata/src/main/resources/common/metadata/AccessControlEntryRecord.json
@AccessControlEntryRecord versions=0 flexible=0+ apikey=18
  id uuid 0+
  resourceType int8 0+
  resourceName string 0+
  patternType int8 0+
  principal string 0+
  host string 0+
  operation int8 0+
  permissionType int8 0+

# metadata/src/main/resources/common/metadata/BeginTransactionRecord.json
@BeginTransactionRecord versions=0 flexible=0+ apikey=23
  name string 0+ null=0+ tag=0@0+ default=null

# metadata/src/main/resources/common/metadata/BrokerRegistrationChangeRecord.json
@BrokerRegistrationChangeRecord versions=0-2 flexible=0+ apikey=17
  brokerId int32 0+
  brokerEpoch int64 0+
  fenced int8 0+ tag=0@0+
  inControlledShutdown int8 1+ tag=1@1+
  logDirs []uuid 2+ tag=2@2+

# metadata/src/main/resources/common/metadata/ClientQuotaRecord.json
@ClientQuotaRecord versions=0 flexible=0+ apikey=14
  entity []EntityData 0+
    entityType string 0+
    entityName string 0+ null=0+
  key string 0+
  value float64 0+
  remove bool 0+

# metadata/src/main/resources/common/metadata/ConfigRecord.json
@ConfigRecord versions=0 flexible=0+ apikey=4
  resourceType int8 0+
  resourceName string 0+
  name string 0+
  value string 0+ null=0+

# metadata/src/main/resources/common/metadata/DelegationTokenRecord.json
@DelegationTokenRecord versions=0 flexible=0+ apikey=10
  owner string 0+
  requester string 0+
  renewers []string 0+
  issueTimestamp int64 0+
  maxTimestamp int64 0+
  expirationTimestamp int64 0+
  tokenId string 0+

# metadata/src/main/resources/common/metadata/EndTransactionRecord.json
@EndTransactionRecord versions=0 flexible=0+ apikey=24

# metadata/src/main/resources/common/metadata/FeatureLevelRecord.json
@FeatureLevelRecord versions=0 flexible=0+ apikey=12
  name string 0+
  featureLevel int16 0+

# metadata/src/main/resources/common/metadata/FenceBrokerRecord.json
@FenceBrokerRecord versions=0 flexible=0+ apikey=7
  id int32 0+
  epoch int64 0+

# metadata/src/main/resources/common/metadata/NoOpRecord.json
@NoOpRecord versions=0 flexible=0+ apikey=20

# metadata/src/main/resources/common/metadata/PartitionChangeRecord.json
@PartitionChangeRecord versions=0-2 flexible=0+ apikey=5
  partitionId int32 0+ default=-1
  topicId uuid 0+
  isr []int32 0+ null=0+ tag=0@0+ default=null
  leader int32 0+ tag=1@0+ default=-2
  replicas []int32 0+ null=0+ tag=2@0+ default=null
  removingReplicas []int32 0+ null=0+ tag=3@0+ default=null
  addingReplicas []int32 0+ null=0+ tag=4@0+ default=null
  leaderRecoveryState int8 0+ tag=5@0+ default=-1
  directories []uuid 1+ null=1+ tag=8@1+ default=null
  eligibleLeaderReplicas []int32 2+ null=2+ tag=6@2+ default=null
  lastKnownElr []int32 2+ null=2+ tag=7@2+ default=null

# metadata/src/main/resources/common/metadata/PartitionRecord.json
@PartitionRecord versions=0-2 flexible=0+ apikey=3
  partitionId int32 0+ default=-1
  topicId uuid 0+
  replicas []int32 0+
  isr []int32 0+
  removingReplicas []int32 0+
  addingReplicas []int32 0+
  leader int32 0+ default=-1
  leaderRecoveryState int8 0+ tag=0@0+ default=0
  leaderEpoch int32 0+ default=-1
  partitionEpoch int32 0+ default=-1
  directories []uuid 1+
  eligibleLeaderReplicas []int32 2+ null=2+ tag=1@2+ default=null
  lastKnownElr []int32 2+ null=2+ tag=2@2+ default=null

# metadata/src/main/resources/common/metadata/ProducerIdsRecord.json
@ProducerIdsRecord versions=0 flexible=0+ apikey=15
  brokerId int32 0+
  brokerEpoch int64 0+ default=-1
  nextProducerId int64 0+

# metadata/src/main/resources/common/metadata/RegisterBrokerRecord.json
@RegisterBrokerRecord versions=0-3 flexible=0+ apikey=0
  brokerId int32 0+
  isMigratingZkBroker bool 2+ default=false
  incarnationId uuid 0+
  brokerEpoch int64 0+
  endPoints []BrokerEndpoint 0+
    name string 0+
    host string 0+
    port uint16 0+
    securityProtocol int16 0+
  features []BrokerFeature 0+
    name string 0+
    minSupportedVersion int16 0+
    maxSupportedVersion int16 0+
  rack string 0+ null=0+
  fenced bool 0+ default=true
  inControlledShutdown bool 1+ default=false
  logDirs []uuid 3+ tag=0@3+

# metadata/src/main/resources/common/metadata/RegisterControllerRecord.json
@RegisterControllerRecord versions=0 flexible=0+ apikey=27
  controllerId int32 0+
  incarnationId uuid 0+
  zkMigrationReady bool 0+
  endPoints []ControllerEndpoint 0+
    name string 0+
    host string 0+
    port uint16 0+
    securityProtocol int16 0+
  features []ControllerFeature 0+
    name string 0+
    minSupportedVersion int16 0+
    maxSupportedVersion int16 0+

# metadata/src/main/resources/common/metadata/RemoveAccessControlEntryRecord.json
@RemoveAccessControlEntryRecord versions=0 flexible=0+ apikey=19
  id uuid 0+

# metadata/src/main/resources/common/metadata/RemoveDelegationTokenRecord.json
@RemoveDelegationTokenRecord versions=0 flexible=0+ apikey=26
  tokenId string 0+

# metadata/src/main/resources/common/metadata/RemoveTopicRecord.json
@RemoveTopicRecord versions=0 flexible=0+ apikey=9
  topicId uuid 0+

# metadata/src/main/resources/common/metadata/RemoveUserScramCredentialRecord.json
@RemoveUserScramCredentialRecord versions=0 flexible=0+ apikey=22
  name string 0+
  mechanism int8 0+

# metadata/src/main/resources/common/metadata/TopicRecord.json
@TopicRecord versions=0 flexible=0+ apikey=2
  name string 0+
  topicId uuid 0+

# metadata/src/main/resources/common/metadata/UnfenceBrokerRecord.json
@UnfenceBrokerRecord versions=0 flexible=0+ apikey=8
  id int32 0+
  epoch int64 0+

# metadata/src/main/resources/common/metadata/UnregisterBrokerRecord.json
@UnregisterBrokerRecord versions=0 flexible=0+ apikey=1
  brokerId int32 0+
  brokerEpoch int64 0+

# metadata/src/main/resources/common/metadata/UserScramCredentialRecord.json
@UserScramCredentialRecord versions=0 flexible=0+ apikey=11
  name string 0+
  mechanism int8 0+
  salt bytes 0+
  storedKey bytes 0+
  serverKey bytes 0+
  iterations int32 0+

# metadata/src/main/resources/common/metadata/ZkMigrationRecord.json
@ZkMigrationStateRecord versions=0 flexible=0+ apikey=21
  zkMigrationState int8 0+
"""
