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
 * Consumer groups resumed by Kafka's own Java consumer, one after the other in one JVM:
 * {@code GroupResume BOOTSTRAP TIMEOUT_MS GROUP PROTOCOL EXPECTED TOPIC[,TOPIC...] [GROUP ...]}.
 * Each GROUP is joined (group.protocol PROTOCOL: classic or consumer, KIP-848), subscribed to its
 * topics, read_committed, from the group's committed positions (auto.offset.reset=none: a partition
 * without one fails, never a silent reset), and read until it has EXPECTED records and every
 * assigned partition's position has reached its end (the last stable offset). One line per record
 * in arrival order, tab-separated: group, topic, partition, offset, key, value (base64, or "-" for
 * null). Nothing is committed. Exits 1 when a group's end is not reached within TIMEOUT_MS.
 */
public final class GroupResume {
    public static void main(String[] args) throws Exception {
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        for (int i = 2; i + 3 < args.length; i += 4) {
            resume(args[0], Long.parseLong(args[1]), args[i], args[i + 1], Long.parseLong(args[i + 2]),
                   args[i + 3].split(","), out);
        }
        out.flush();
    }

    private static void resume(String bootstrap, long timeoutMs, String group, String protocol, long expected,
                               String[] topics, BufferedWriter out) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        Base64.Encoder b64 = Base64.getEncoder();
        long got = 0;
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.subscribe(Arrays.asList(topics));
            while (true) {
                if (System.currentTimeMillis() > deadline) {
                    out.flush();
                    System.err.println("GroupResume: group " + group + ": " + got + " of " + expected
                            + " records and the ends of " + c.assignment() + " not reached in time");
                    System.exit(1);
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(300))) {
                    got++;
                    out.write(group + "\t" + r.topic() + "\t" + r.partition() + "\t" + r.offset() + "\t"
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
    }
}
