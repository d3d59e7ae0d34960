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
// Every wait is bounded; a failure exits non-zero with the reason on stderr.  "done" ends stdout.
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
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
