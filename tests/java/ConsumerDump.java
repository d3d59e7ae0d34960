import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * Kafka's own Java consumer (kafka-clients, the tests' Kafka) as the oracle of what a consumer
 * returns: {@code ConsumerDump BOOTSTRAP ISOLATION TIMEOUT_MS TOPIC...} assigns every partition of
 * the topics, seeks to their beginning and polls until each partition's position reaches the end
 * offset the consumer itself reports at the start (the high watermark, or the last stable offset
 * under read_committed), printing one line per record, tab-separated: topic, partition, offset,
 * timestamp type (0 CreateTime, 1 LogAppendTime), timestamp, key, value (base64, or "-" for
 * null), then per header its key (base64 of its UTF-8) and value. No group is joined, no offset
 * committed. Exits 1 when the ends are not reached within TIMEOUT_MS.
 */
public final class ConsumerDump {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], isolation = args[1];
        long deadline = System.currentTimeMillis() + Long.parseLong(args[2]);
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
        Base64.Encoder b64 = Base64.getEncoder();
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 3; i < args.length; i++) {
                for (PartitionInfo info : c.partitionsFor(args[i], Duration.ofSeconds(30))) {
                    tps.add(new TopicPartition(info.topic(), info.partition()));
                }
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> ends = c.endOffsets(tps, Duration.ofSeconds(30));
            while (true) {
                boolean done = true;
                for (TopicPartition tp : tps) {
                    if (c.position(tp, Duration.ofSeconds(30)) < ends.get(tp)) {
                        done = false;
                    }
                }
                if (done) {
                    break;
                }
                if (System.currentTimeMillis() > deadline) {
                    System.err.println("ConsumerDump: the end offsets " + ends + " were not reached in time");
                    System.exit(1);
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    if (r.offset() >= ends.get(new TopicPartition(r.topic(), r.partition()))) {
                        continue;       // past the end taken at the start: not part of this read
                    }
                    StringBuilder line = new StringBuilder();
                    line.append(r.topic()).append('\t').append(r.partition()).append('\t').append(r.offset())
                        .append('\t').append(r.timestampType().id).append('\t').append(r.timestamp())
                        .append('\t').append(r.key() == null ? "-" : b64.encodeToString(r.key()))
                        .append('\t').append(r.value() == null ? "-" : b64.encodeToString(r.value()));
                    for (Header h : r.headers()) {
                        line.append('\t').append(b64.encodeToString(h.key().getBytes(StandardCharsets.UTF_8)))
                            .append('\t').append(h.value() == null ? "-" : b64.encodeToString(h.value()));
                    }
                    out.write(line.append('\n').toString());
                }
            }
        }
        out.flush();
    }
}
