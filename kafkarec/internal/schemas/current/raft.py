"""Schemas of KRaft control records: clients/src/main/resources/common/message.

Written in kafkarec's compact schema format (see kafkarec/internal/schema.py) from the
message definitions of Apache Kafka at commit d79bd502ec7fa49335afa422f442af80ed0ab8f6
(trunk of 2026-08-22).
"""

TEXT = r"""
# clients/src/main/resources/common/message/KRaftVersionRecord.json
@KRaftVersionRecord versions=0 flexible=0+
  version int16 0+
  kRaftVersion int16 0+

# clients/src/main/resources/common/message/LeaderChangeMessage.json
@LeaderChangeMessage versions=0-1 flexible=0+
  version int16 0+
  leaderId int32 0+
  voters []Voter 0+
    voterId int32 0+
    voterDirectoryId uuid 1+
  grantingVoters []Voter 0+
    voterId int32 0+
    voterDirectoryId uuid 1+

# clients/src/main/resources/common/message/SnapshotFooterRecord.json
@SnapshotFooterRecord versions=0 flexible=0+
  version int16 0+

# clients/src/main/resources/common/message/SnapshotHeaderRecord.json
@SnapshotHeaderRecord versions=0 flexible=0+
  version int16 0+
  lastContainedLogTimestamp int64 0+

# clients/src/main/resources/common/message/VotersRecord.json
@VotersRecord versions=0 flexible=0+
  version int16 0+
  voters []Voter 0+
    voterId int32 0+
    voterDirectoryId uuid 0+
    endpoints []Endpoint 0+
      name string 0+
      host string 0+
      port uint16 0+
    kRaftVersionFeature KRaftVersionFeature 0+
      minSupportedVersion int16 0+
      maxSupportedVersion int16 0+
"""
