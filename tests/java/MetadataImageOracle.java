// Kafka's own metadata image of a KRaft log: the records of a __cluster_metadata-0 folder's log
// segments (offset 0 on) replayed by kafka-metadata's MetadataDelta into a MetadataImage, printed as
// one JSON object in the shape of kafkarec's ClusterState.state() (kafkarec/internal/metadata.py),
// so tests/broker/test_broker_logs.py compares the two on a live broker's log.
//
//   java -cp <jvm/kafka classpath>:<classes> MetadataImageOracle FOLDER
//
// Only what the image holds is printed: no producer-id block history (the image keeps the next id),
// no ZooKeeper migration state or migrating-broker flag (Kafka 4 keeps neither), and SCRAM users by
// name, mechanism and iterations (never their salt or keys).  A metadata transaction's records are
// applied at its end record and dropped at its abort record, as Kafka's MetadataBatchLoader does.
import java.io.File;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import org.apache.kafka.common.Endpoint;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.MetadataRecordType;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.image.ConfigurationImage;
import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.MetadataProvenance;
import org.apache.kafka.metadata.BrokerRegistration;
import org.apache.kafka.metadata.ControllerRegistration;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.metadata.VersionRange;

public final class MetadataImageOracle {
    public static void main(String[] args) throws Exception {
        File folder = new File(args[0]);
        File[] logs = folder.listFiles((d, n) -> n.endsWith(".log"));
        Arrays.sort(logs);
        if (logs.length == 0 || !logs[0].getName().equals("00000000000000000000.log")) {
            throw new IllegalStateException("the log does not start at offset 0 in " + folder);
        }
        MetadataRecordSerde serde = new MetadataRecordSerde();
        MetadataDelta delta = new MetadataDelta.Builder().setImage(MetadataImage.EMPTY).build();
        List<ApiMessage> pending = null;
        long lastOffset = -1;
        int lastEpoch = 0;
        long lastTime = 0;
        for (File log : logs) {
            try (FileRecords records = FileRecords.open(log)) {
                for (RecordBatch batch : records.batches()) {
                    if (batch.isControlBatch()) {
                        continue;
                    }
                    for (Record r : batch) {
                        ApiMessage m = serde.read(new ByteBufferAccessor(r.value()), r.valueSize()).message();
                        MetadataRecordType type = MetadataRecordType.fromId(m.apiKey());
                        if (type == MetadataRecordType.BEGIN_TRANSACTION_RECORD) {
                            pending = new ArrayList<>();
                        } else if (type == MetadataRecordType.END_TRANSACTION_RECORD) {
                            for (ApiMessage p : pending) {
                                delta.replay(p);
                            }
                            pending = null;
                        } else if (type == MetadataRecordType.ABORT_TRANSACTION_RECORD) {
                            pending = null;
                        } else if (pending != null) {
                            pending.add(m);
                        } else {
                            delta.replay(m);
                        }
                        lastOffset = r.offset();
                    }
                    lastEpoch = batch.partitionLeaderEpoch();
                    lastTime = batch.maxTimestamp();
                }
            }
        }
        MetadataImage image = delta.apply(new MetadataProvenance(lastOffset, lastEpoch, lastTime, true));
        ObjectMapper json = new ObjectMapper().configure(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS, true);
        System.out.println(json.writeValueAsString(state(image)));
    }

    private static Map<String, Object> endpoints(Map<String, Endpoint> listeners) {
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<String, Endpoint> e : listeners.entrySet()) {
            out.put(e.getKey(), Map.of("host", e.getValue().host(), "port", e.getValue().port(),
                                       "security_protocol", (int) e.getValue().securityProtocol().id));
        }
        return out;
    }

    private static Map<String, Object> features(Map<String, VersionRange> supported) {
        Map<String, Object> out = new TreeMap<>();
        supported.forEach((name, range) -> out.put(name, Map.of("min", range.min(), "max", range.max())));
        return out;
    }

    private static List<Integer> ints(int[] xs) {
        List<Integer> out = new ArrayList<>();
        for (int x : xs) {
            out.add(x);
        }
        return out;
    }

    private static List<String> uuids(Iterable<Uuid> xs) {
        List<String> out = new ArrayList<>();
        xs.forEach(u -> out.add(u.toString()));
        return out;
    }

    private static Map<String, Object> state(MetadataImage image) {
        Map<String, Object> s = new TreeMap<>();
        Map<String, Object> features = new TreeMap<>(image.features().finalizedVersions());
        image.features().metadataVersion().ifPresent(v -> features.put("metadata.version", v.featureLevel()));
        s.put("features", features);

        Map<String, Object> brokers = new TreeMap<>();
        for (BrokerRegistration b : image.cluster().brokers().values()) {
            Map<String, Object> m = new TreeMap<>();
            m.put("id", b.id());
            m.put("epoch", b.epoch());
            m.put("incarnation_id", b.incarnationId().toString());
            m.put("endpoints", endpoints(b.listeners()));
            m.put("supported_features", features(b.supportedFeatures()));
            m.put("rack", b.rack().orElse(null));
            m.put("fenced", b.fenced());
            m.put("in_controlled_shutdown", b.inControlledShutdown());
            m.put("log_dirs", uuids(b.directories()));
            brokers.put(String.valueOf(b.id()), m);
        }
        s.put("brokers", brokers);

        Map<String, Object> controllers = new TreeMap<>();
        for (ControllerRegistration c : image.cluster().controllers().values()) {
            Map<String, Object> m = new TreeMap<>();
            m.put("id", c.id());
            m.put("incarnation_id", c.incarnationId().toString());
            m.put("zk_migration_ready", c.zkMigrationReady());
            m.put("endpoints", endpoints(c.listeners()));
            m.put("supported_features", features(c.supportedFeatures()));
            controllers.put(String.valueOf(c.id()), m);
        }
        s.put("controllers", controllers);

        Map<String, Object> topics = new TreeMap<>();
        image.topics().topicsByName().forEach((name, t) -> {
            Map<String, Object> partitions = new TreeMap<>();
            t.partitions().forEach((id, p) -> {
                Map<String, Object> m = new TreeMap<>();
                m.put("replicas", ints(p.replicas));
                m.put("isr", ints(p.isr));
                m.put("removing_replicas", ints(p.removingReplicas));
                m.put("adding_replicas", ints(p.addingReplicas));
                m.put("leader", p.leader);
                m.put("leader_epoch", p.leaderEpoch);
                m.put("partition_epoch", p.partitionEpoch);
                m.put("leader_recovery_state", (int) p.leaderRecoveryState.value());
                m.put("eligible_leader_replicas", ints(p.elr));
                m.put("last_known_elr", ints(p.lastKnownElr));
                m.put("directories", uuids(Arrays.asList(p.directories)));
                partitions.put(String.valueOf(id), m);
            });
            topics.put(name, Map.of("topic_id", t.id().toString(), "partitions", partitions));
        });
        s.put("topics", topics);

        Map<String, Map<String, Object>> configs = new TreeMap<>();
        for (ConfigurationImage c : image.configs().resourceData().values()) {
            if (!c.data().isEmpty()) {
                configs.computeIfAbsent(c.resource().type().name(), k -> new TreeMap<>())
                       .put(c.resource().name(), new TreeMap<>(c.data()));
            }
        }
        s.put("configs", configs);

        s.put("producer_ids", Map.of("next_producer_id", image.producerIds().nextProducerId()));

        Map<String, Object> acls = new TreeMap<>();
        image.acls().acls().forEach((id, a) -> {
            Map<String, Object> m = new TreeMap<>();
            m.put("resource_type", (int) a.resourceType().code());
            m.put("resource_name", a.resourceName());
            m.put("pattern_type", (int) a.patternType().code());
            m.put("principal", a.principal());
            m.put("host", a.host());
            m.put("operation", (int) a.operation().code());
            m.put("permission_type", (int) a.permissionType().code());
            acls.put(id.toString(), m);
        });
        s.put("acls", acls);

        Map<String, Object> quotas = new TreeMap<>();
        image.clientQuotas().entities().forEach((entity, q) -> {
            List<String> parts = new ArrayList<>();
            entity.entries().forEach((type, name) -> parts.add(type + "=" + (name == null ? "<default>" : name)));
            parts.sort(null);
            quotas.put(String.join(",", parts), new TreeMap<>(q.quotas()));
        });
        s.put("client_quotas", quotas);

        Map<String, Object> scram = new TreeMap<>();
        image.scram().mechanisms().forEach((mechanism, users) -> users.forEach((user, data) ->
                scram.put(mechanism.type() + ":" + user,
                          Map.of("name", user, "mechanism", (int) mechanism.type(), "iterations", data.iterations()))));
        s.put("scram_credentials", scram);

        Map<String, Object> tokens = new TreeMap<>();
        image.delegationTokens().tokens().forEach((id, d) -> {
            var t = d.tokenInformation();
            Map<String, Object> m = new TreeMap<>();
            m.put("owner", t.ownerAsString());
            m.put("requester", t.tokenRequester().toString());
            List<String> renewers = new ArrayList<>();
            t.renewers().forEach(r -> renewers.add(r.toString()));
            m.put("renewers", renewers);
            m.put("issue_timestamp", t.issueTimestamp());
            m.put("max_timestamp", t.maxTimestamp());
            m.put("expiration_timestamp", t.expiryTimestamp());
            tokens.put(id, m);
        });
        s.put("delegation_tokens", tokens);
        return s;
    }
}
