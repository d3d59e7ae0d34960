// Kafka's own Java clients driving the group, share and transaction coordinators of a live broker,
// so that its internal topics hold records of every kind a Kafka 4.4 broker writes
// (tests/broker/coordinator_records.py runs it; tests/broker/test_broker_internal44.py reads them).
//
//   java -cp <jvm/kafka classpath>:<classes> CoordinatorRecords BOOTSTRAP PREFIX STATE_DIR
//
// Topics and groups are named PREFIX-*.  In order:
//   * classic groups (group.protocol=classic): offsets committed, one partition's offset deleted,
//     a second group deleted;
//   * consumer-protocol groups (KIP-848, group.protocol=consumer): a topic list and a regular
//     expression subscription, an offset delete, a group delete;
//   * a migrated group: a classic member, then a consumer-protocol member joining it (the group
//     converts to a consumer group; the classic member's record carries classicMemberMetadata);
//   * a share group (share.version 2): records acknowledged ACCEPT, RELEASE (redelivered, then
//     accepted) and REJECT, then the group deleted;
//   * a Kafka Streams application on the streams rebalance protocol (KIP-1071, group.protocol=streams),
//     then the streams group deleted;
//   * transactions on transaction.version 2, then on 1 (the feature downgraded, then upgraded back):
//     a commit with offsets sent to the transaction, and an abort, on each;
//   * metadata: a client quota, SCRAM credentials (one upserted, one deleted), a group config, a
//     topic config, a topic deleted.
// Every wait is bounded; a failure exits non-zero with the reason on stderr.  "done" is the last
// line on stdout.
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.ListStreamsGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

public final class CoordinatorRecords {
    private static final int RECORDS = 24;
    private static final Duration POLL = Duration.ofMillis(100);
    private static String bootstrap;
    private static String prefix;
    private static Admin admin;

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        prefix = args[1];
        String stateDir = args[2];
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        admin = Admin.create(ap);
        try {
            String src = prefix + "-src";
            admin.createTopics(List.of(new NewTopic(src, 2, (short) 1), new NewTopic(prefix + "-out", 1, (short) 1),
                                       new NewTopic(prefix + "-txn", 1, (short) 1),
                                       new NewTopic(prefix + "-doomed", 1, (short) 1))).all().get();
            produce(src);
            classicGroups(src);
            consumerGroups(src);
            migratedGroup(src);
            shareGroup(src);
            streamsGroup(src, stateDir);
            transactions(src);
            metadata();
            System.out.println("done");
        } finally {
            admin.close(Duration.ofSeconds(10));
        }
    }

    // --- helpers -------------------------------------------------------------------------------

    private static void await(String what, long timeoutMs, BooleanSupplier done) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!done.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException(what + ": not within " + timeoutMs + " ms");
            }
            Thread.sleep(50);
        }
    }

    /** ``call`` until the group is empty enough for the coordinator to take it (a leaving member
     * can still be on its books for a moment), bounded. */
    private static void untilGroupTakes(String what, Callable call) throws Exception {
        long deadline = System.currentTimeMillis() + 30000;
        while (true) {
            try {
                call.run();
                return;
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof GroupNotEmptyException) || System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException(what, e);
                }
                Thread.sleep(200);
            }
        }
    }

    private interface Callable {
        void run() throws Exception;
    }

    private static Properties producerProps() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        return p;
    }

    private static void produce(String topic) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(producerProps())) {
            List<Future<?>> sent = new ArrayList<>();
            for (int i = 0; i < RECORDS; i++) {
                sent.add(p.send(new ProducerRecord<>(topic, i % 2, ("k" + (i % 5)).getBytes(StandardCharsets.UTF_8),
                                                     ("v" + i).getBytes(StandardCharsets.UTF_8))));
            }
            for (Future<?> f : sent) {
                f.get();
            }
        }
    }

    private static Properties consumerProps(String group, String protocol) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (protocol.equals("classic")) {
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        }
        return p;
    }

    /** One consumer of ``group`` reading every record of ``topic``, committing, leaving. */
    private static void readAndCommit(String group, String protocol, String topic, SubscriptionPattern pattern)
            throws Exception {
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerProps(group, protocol))) {
            if (pattern != null) {
                c.subscribe(pattern);           // resolved by the coordinator (KIP-848's RE2J expressions)
            } else {
                c.subscribe(List.of(topic));
            }
            int[] seen = {0};
            await(group + " reads " + topic, 60000, () -> {
                seen[0] += c.poll(POLL).count();
                return seen[0] >= RECORDS;
            });
            c.commitSync(Duration.ofSeconds(30));
        }
    }

    // --- groups ----------------------------------------------------------------------------------

    private static void classicGroups(String src) throws Exception {
        String kept = prefix + "-classic", deleted = prefix + "-classic-deleted";
        readAndCommit(kept, "classic", src, null);
        readAndCommit(deleted, "classic", src, null);
        untilGroupTakes("delete an offset of " + kept,
                () -> admin.deleteConsumerGroupOffsets(kept, Set.of(new TopicPartition(src, 0))).all().get());
        untilGroupTakes("delete " + deleted, () -> admin.deleteConsumerGroups(List.of(deleted)).all().get());
    }

    private static void consumerGroups(String src) throws Exception {
        String kept = prefix + "-consumer", regex = prefix + "-regex";
        readAndCommit(kept, "consumer", src, null);
        readAndCommit(regex, "consumer", null, new SubscriptionPattern(prefix + "-sr.*"));
        untilGroupTakes("delete an offset of " + kept,
                () -> admin.deleteConsumerGroupOffsets(kept, Set.of(new TopicPartition(src, 1))).all().get());
        untilGroupTakes("delete " + regex, () -> admin.deleteConsumerGroups(List.of(regex)).all().get());
    }

    /** A classic member, then a consumer-protocol member joining its group: the coordinator converts
     * the group (online upgrade) and both end up with a partition each. */
    private static void migratedGroup(String src) throws Exception {
        String group = prefix + "-migrated";
        try (KafkaConsumer<byte[], byte[]> classic = new KafkaConsumer<>(consumerProps(group, "classic"));
             KafkaConsumer<byte[], byte[]> modern = new KafkaConsumer<>(consumerProps(group, "consumer"))) {
            classic.subscribe(List.of(src));
            await(group + ": the classic member's assignment", 60000, () -> {
                classic.poll(POLL);
                return classic.assignment().size() == 2;
            });
            modern.subscribe(List.of(src));
            await(group + ": a partition each", 60000, () -> {
                classic.poll(POLL);
                modern.poll(POLL);
                return classic.assignment().size() == 1 && modern.assignment().size() == 1;
            });
            classic.commitSync(Duration.ofSeconds(30));
            modern.commitSync(Duration.ofSeconds(30));
        }
    }

    /** A share group reading with explicit acknowledgement: every third record accepted, released
     * (delivered again, then accepted) or rejected; then the group deleted. */
    private static void shareGroup(String src) throws Exception {
        String group = prefix + "-share";
        ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
        admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(
                new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET)))).all().get();
        Properties p = consumerProps(group, "consumer");
        p.remove(ConsumerConfig.GROUP_PROTOCOL_CONFIG);
        p.remove(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG);
        p.remove(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG);
        p.put("share.acknowledgement.mode", "explicit");
        Set<String> finished = new HashSet<>();
        Set<String> released = new HashSet<>();
        try (KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(List.of(src));
            await(group + " acknowledges every record", 90000, () -> {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(POLL)) {
                    String id = r.partition() + "@" + r.offset();
                    AcknowledgeType how = AcknowledgeType.ACCEPT;
                    if (r.offset() % 3 == 1 && released.add(id)) {
                        how = AcknowledgeType.RELEASE;
                    } else if (r.offset() % 3 == 2) {
                        how = AcknowledgeType.REJECT;
                    }
                    c.acknowledge(r, how);
                    if (how != AcknowledgeType.RELEASE) {
                        finished.add(id);
                    }
                }
                c.commitSync(Duration.ofSeconds(30));
                return finished.size() >= RECORDS;
            });
        }
        untilGroupTakes("delete " + group, () -> admin.deleteShareGroups(List.of(group)).all().get());
    }

    /** A Kafka Streams application (a count per key) on the streams rebalance protocol, run until it
     * committed every input record, then its group deleted. */
    private static void streamsGroup(String src, String stateDir) throws Exception {
        String app = prefix + "-streams";
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        StreamsBuilder b = new StreamsBuilder();
        b.stream(src, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
         .groupByKey()
         .count(Materialized.as("counts"))
         .toStream()
         .to(prefix + "-out", Produced.with(Serdes.ByteArray(), Serdes.Long()));
        KafkaStreams streams = new KafkaStreams(b.build(), p);
        try {
            streams.start();
            await(app + " commits every input record", 120000, () -> {
                try {
                    Map<TopicPartition, OffsetAndMetadata> committed = admin.listStreamsGroupOffsets(
                            Map.of(app, new ListStreamsGroupOffsetsSpec())).partitionsToOffsetAndMetadata(app).get();
                    long sum = 0;
                    for (Map.Entry<TopicPartition, OffsetAndMetadata> e : committed.entrySet()) {
                        if (e.getKey().topic().equals(src) && e.getValue() != null) {
                            sum += e.getValue().offset();
                        }
                    }
                    return sum >= RECORDS;
                } catch (Exception e) {
                    return false;
                }
            });
        } finally {
            streams.close(Duration.ofSeconds(30));
            streams.cleanUp();
        }
        untilGroupTakes("delete " + app, () -> admin.deleteStreamsGroups(List.of(app)).all().get());
    }

    // --- transactions ----------------------------------------------------------------------------

    private static short finalizedLevel(String feature) throws Exception {
        var range = admin.describeFeatures().featureMetadata().get().finalizedFeatures().get(feature);
        return range == null ? 0 : range.maxVersionLevel();
    }

    private static void setTransactionVersion(short level, FeatureUpdate.UpgradeType how) throws Exception {
        admin.updateFeatures(Map.of("transaction.version", new FeatureUpdate(level, how)),
                             new UpdateFeaturesOptions()).all().get();
        await("transaction.version " + level + " finalized", 30000, () -> {
            try {
                return finalizedLevel("transaction.version") == level;
            } catch (Exception e) {
                return false;
            }
        });
    }

    /** One transactional producer: a committed transaction carrying offsets, then an aborted one. */
    private static void transactionsOf(String txnId, String src) throws Exception {
        Properties p = producerProps();
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            String topic = prefix + "-txn";
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, 0, null, "committed".getBytes(StandardCharsets.UTF_8)));
            producer.sendOffsetsToTransaction(Map.of(new TopicPartition(src, 0), new OffsetAndMetadata(3)),
                                              new ConsumerGroupMetadata(txnId + "-group"));
            producer.commitTransaction();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, 0, null, "aborted".getBytes(StandardCharsets.UTF_8))).get();
            producer.abortTransaction();
        }
    }

    private static void transactions(String src) throws Exception {
        if (finalizedLevel("transaction.version") != 2) {
            throw new IllegalStateException("the broker does not run transaction.version 2");
        }
        transactionsOf(prefix + "-tv2", src);
        setTransactionVersion((short) 1, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE);
        try {
            transactionsOf(prefix + "-tv1", src);
        } finally {
            setTransactionVersion((short) 2, FeatureUpdate.UpgradeType.UPGRADE);
        }
    }

    // --- metadata ----------------------------------------------------------------------------------

    private static void metadata() throws Exception {
        ClientQuotaEntity user = new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER, prefix + "-user"));
        ClientQuotaEntity anyClient = new ClientQuotaEntity(new HashMap<>() {{ put(ClientQuotaEntity.CLIENT_ID, null); }});
        admin.alterClientQuotas(List.of(
                new ClientQuotaAlteration(user, List.of(new ClientQuotaAlteration.Op("producer_byte_rate", 1048576.0))),
                new ClientQuotaAlteration(anyClient, List.of(new ClientQuotaAlteration.Op("request_percentage", 50.0)))))
             .all().get();
        admin.alterUserScramCredentials(List.of(
                new UserScramCredentialUpsertion(prefix + "-alice", new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), "secret-a"),
                new UserScramCredentialUpsertion(prefix + "-bob", new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), "secret-b")))
             .all().get();
        admin.alterUserScramCredentials(List.of(new UserScramCredentialDeletion(prefix + "-bob", ScramMechanism.SCRAM_SHA_512)))
             .all().get();
        ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, prefix + "-out");
        admin.incrementalAlterConfigs(Map.of(topic, List.of(new AlterConfigOp(
                new ConfigEntry("retention.ms", "86400000"), AlterConfigOp.OpType.SET)))).all().get();
        admin.deleteTopics(List.of(prefix + "-doomed")).all().get();
    }
}
