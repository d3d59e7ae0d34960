"""Schemas of __transaction_state records: transaction-coordinator/src/main/resources/common/message.

Written in kafkarec's compact schema format (see kafkarec/internal/schema.py) from the
message definitions of Apache Kafka at commit d79bd502ec7fa49335afa422f442af80ed0ab8f6
(trunk of 2026-08-22).
"""

TEXT = r"""
# transaction-coordinator/src/main/resources/common/message/TransactionLogKey.json
@TransactionLogKey versions=0 flexible=none apikey=0 kind=coordinator-key
  transactionalId string 0

# transaction-coordinator/src/main/resources/common/message/TransactionLogValue.json
@TransactionLogValue versions=0-1 flexible=1+ apikey=0 kind=coordinator-value
  producerId int64 0+
  previousProducerId int64 1+ tag=0@1+ default=-1
  nextProducerId int64 1+ tag=1@1+ default=-1
  producerEpoch int16 0+
  nextProducerEpoch int16 1+ tag=3@1+ default=-1
  transactionTimeoutMs int32 0+
  transactionStatus int8 0+
  transactionPartitions []PartitionsSchema 0+ null=0+
    topic string 0+
    partitionIds []int32 0+
  transactionLastUpdateTimestampMs int64 0+
  transactionStartTimestampMs int64 0+
  clientTransactionVersion int16 1+ tag=2@1+ default=0
"""
