import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Base64;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

/**
 * A consumer group resumed by Kafka's own Java consumer: {@code GroupResume BOOTSTRAP GROUP
 * PROTOCOL EXPECTED TIMEOUT_MS TOPIC...} joins GROUP (group.protocol PROTOCOL: classic or consumer,
 * KIP-848), subscribed to the topics, read_committed, from the group's committed positions
 * (auto.offset.reset=none: a partition without one fails, never a silent reset), and reads until it
 * has EXPECTED records and every assigned partition's position has reached its end (the last
 * stable offset). One line per record in arrival order, tab-separated: topic, partition, offset,
 * key, value (base64, or "-" for null). Nothing is committed. Exits 1 when that is not reached
 * within TIMEOUT_MS.
 */
public final class GroupResume {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], group = args[1], protocol = args[2];
        long expected = Long.parseLong(args[3]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[4]);
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        Base64.Encoder b64 = Base64.getEncoder();
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        long got = 0;
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.subscribe(Arrays.asList(Arrays.copyOfRange(args, 5, args.length)));
            while (true) {
                if (System.currentTimeMillis() > deadline) {
                    System.err.println("GroupResume: " + got + " of " + expected + " records, assignment "
                            + c.assignment() + ", in time");
                    System.exit(1);
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(300))) {
                    got++;
                    out.write(r.topic() + "\t" + r.partition() + "\t" + r.offset() + "\t"
                            + (r.key() == null ? "-" : b64.encodeToString(r.key())) + "\t"
                            + (r.value() == null ? "-" : b64.encodeToString(r.value())) + "\n");
                }
                Set<TopicPartition> assigned = c.assignment();
                if (got >= expected && !assigned.isEmpty()) {
                    Map<TopicPartition, Long> ends = c.endOffsets(assigned, Duration.ofSeconds(30));
                    boolean done = true;
                    for (TopicPartition tp : assigned) {
                        done &= c.position(tp, Duration.ofSeconds(30)) >= ends.get(tp);
                    }
                    if (done) {
                        break;
                    }
                }
            }
        }
        out.flush();
    }
}
