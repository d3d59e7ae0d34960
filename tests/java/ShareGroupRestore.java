// Kafka's own share consumer (KIP-932) on each side of kafkarec restore's share-group test
// (tests/broker/test_broker_restore.py):
//
//   java -cp <jvm/kafka classpath>:<classes> ShareGroupRestore source BOOTSTRAP TOPIC GROUP RULES
//   java -cp <jvm/kafka classpath>:<classes> ShareGroupRestore resume BOOTSTRAP TOPIC GROUP EXPECTED
//
// source: the group (share.auto.offset.reset=earliest) reads partition 0 of TOPIC once, with
// explicit acknowledgement: RULES is one letter per offset from 0, A (ACCEPT), J (REJECT),
// R (RELEASE); offsets past RULES are released too.  Once every offset of RULES was delivered and
// its acknowledgement committed, it stops (records released come back: they are released again
// while it waits for the rest).
// resume: the group reads with implicit acknowledgement (each record accepted) until EXPECTED
// records came, then polls on for a quiet second (a record delivered twice would show); prints
// "delivered PARTITION OFFSET DELIVERY_COUNT" per record.
// dlq (KIP-1191, share.version=2): creates TOPIC (1 partition) and its group's DLQ topic DLQ
// (errors.deadletterqueue.group.enable=true), sets GROUP's configs (read_committed, the DLQ, the
// source records copied, a delivery count limit of 2), writes 2 records in an aborted transaction
// and COUNT in a committed one (so offsets 3.. hold the committed records), then reads TOPIC as the
// share group: REJECT the records at the offsets in REJECT (comma-separated), RELEASE those in
// RELEASE each time they come (their delivery count reaches the limit: archived), ACCEPT the rest;
// stops once DLQ holds one record per offset named, and prints "dlq OFFSET" and a tab-separated
// HEADER=VALUE per header, a line per DLQ record (read_committed, in offset order):
//
//   java ... ShareGroupRestore dlq BOOTSTRAP TOPIC GROUP DLQ COUNT REJECT RELEASE
//
// Every wait is bounded; a failure exits non-zero with the reason on stderr.  "done" ends stdout.
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ShareGroupRestore {
    private static final Duration POLL = Duration.ofMillis(200);

    public static void main(String[] args) throws Exception {
        String mode = args[0], bootstrap = args[1], topic = args[2], group = args[3];
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        if (mode.equals("source")) {
            source(bootstrap, topic, group, args[4], p);
        } else if (mode.equals("dlq")) {
            dlq(bootstrap, topic, group, args[4], Integer.parseInt(args[5]), offsets(args[6]), offsets(args[7]), p);
        } else {
            resume(topic, Integer.parseInt(args[4]), p);
        }
        System.out.println("done");
    }

    private static void source(String bootstrap, String topic, String group, String rules, Properties p)
            throws Exception {
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
            admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET)))).all().get();
        }
        p.put("share.acknowledgement.mode", "explicit");
        Set<Long> seen = new HashSet<>();
        long deadline = System.currentTimeMillis() + 60000;
        try (KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(List.of(topic));
            while (seen.size() < rules.length()) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("the source group saw " + seen.size() + " of " + rules.length()
                                                    + " offsets within 60 s");
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(POLL)) {
                    AcknowledgeType how = AcknowledgeType.RELEASE;
                    if (r.partition() == 0 && r.offset() < rules.length() && seen.add(r.offset())) {
                        char rule = rules.charAt((int) r.offset());
                        how = rule == 'A' ? AcknowledgeType.ACCEPT : rule == 'J' ? AcknowledgeType.REJECT
                                : AcknowledgeType.RELEASE;
                    }
                    c.acknowledge(r, how);
                }
                c.commitSync(Duration.ofSeconds(30));
            }
        }
    }

    private static Set<Long> offsets(String list) {
        Set<Long> out = new HashSet<>();
        for (String x : list.split(",")) {
            if (!x.isEmpty()) {
                out.add(Long.parseLong(x));
            }
        }
        return out;
    }

    private static void dlq(String bootstrap, String topic, String group, String dlqTopic, int count,
                            Set<Long> reject, Set<Long> release, Properties p) throws Exception {
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1),
                    new NewTopic(dlqTopic, 1, (short) 1).configs(
                            Map.of("errors.deadletterqueue.group.enable", "true")))).all().get();
            ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
            List<AlterConfigOp> ops = new ArrayList<>();
            for (String[] kv : new String[][] {{"share.auto.offset.reset", "earliest"},
                    {"share.isolation.level", "read_committed"}, {"errors.deadletterqueue.topic.name", dlqTopic},
                    {"errors.deadletterqueue.copy.record.enable", "true"}, {"share.delivery.count.limit", "2"}}) {
                ops.add(new AlterConfigOp(new ConfigEntry(kv[0], kv[1]), AlterConfigOp.OpType.SET));
            }
            admin.incrementalAlterConfigs(Map.of(res, ops)).all().get();
        }
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "rs-dlq-writer");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> pr = new KafkaProducer<>(pp)) {
            pr.initTransactions();
            pr.beginTransaction();
            for (int i = 0; i < 2; i++) {
                pr.send(new ProducerRecord<>(topic, 0, ("aborted-" + i).getBytes(), ("aborted-" + i).getBytes()));
            }
            pr.flush();
            pr.abortTransaction();
            pr.beginTransaction();
            for (int i = 0; i < count; i++) {
                pr.send(new ProducerRecord<>(topic, 0, ("k" + i).getBytes(), ("v" + i).getBytes()));
            }
            pr.commitTransaction();
        }
        Set<Long> named = new HashSet<>(reject);
        named.addAll(release);
        p.put("share.acknowledgement.mode", "explicit");
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, group + "-reader");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        List<ConsumerRecord<byte[], byte[]>> letters = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 60000;
        try (KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p);
             KafkaConsumer<byte[], byte[]> reader = new KafkaConsumer<>(cp)) {
            c.subscribe(List.of(topic));
            reader.assign(List.of(new TopicPartition(dlqTopic, 0)));
            while (letters.size() < named.size()) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException(dlqTopic + " held " + letters.size() + " of " + named.size()
                                                    + " dead letters within 60 s");
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(POLL)) {
                    c.acknowledge(r, reject.contains(r.offset()) ? AcknowledgeType.REJECT
                            : release.contains(r.offset()) ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT);
                }
                c.commitSync(Duration.ofSeconds(30));
                for (ConsumerRecord<byte[], byte[]> r : reader.poll(POLL)) {
                    letters.add(r);
                }
            }
        }
        for (ConsumerRecord<byte[], byte[]> r : letters) {
            StringBuilder line = new StringBuilder("dlq " + r.offset());
            for (Header h : r.headers()) {
                line.append('\t').append(h.key()).append('=').append(new String(h.value(), StandardCharsets.UTF_8));
            }
            System.out.println(line);
        }
    }

    private static void resume(String topic, int expected, Properties p) {
        int got = 0;
        long deadline = System.currentTimeMillis() + 60000;
        long quietUntil = Long.MAX_VALUE;
        try (KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(List.of(topic));
            while (System.currentTimeMillis() < quietUntil) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("the resumed group got " + got + " of " + expected
                                                    + " records within 60 s");
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(POLL)) {
                    System.out.println("delivered " + r.partition() + " " + r.offset() + " "
                                       + r.deliveryCount().map(String::valueOf).orElse("-"));
                    got++;
                }
                if (got >= expected && quietUntil == Long.MAX_VALUE) {
                    quietUntil = System.currentTimeMillis() + 1000;
                }
            }
            c.commitSync(Duration.ofSeconds(30));
        }
    }
}
