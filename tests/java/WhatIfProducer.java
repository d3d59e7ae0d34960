import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.io.File;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Properties;

/**
 * Kafka's Java producer writing the same records once per codec and level, for the compression
 * what-if's check against a real producer: args[0] is a JSON file {"bootstrap": "...", "runs":
 * [{"topic": "...", "codec": "zstd", "level": 9 or null}], "records": [[partition, timestamp, key
 * (base64) or null, value (base64) or null, [[header key, value (base64) or null], ...]], ...]}.
 * Each run is one producer with the Java producer's batch.size default, compression.type and its
 * level, and linger.ms long enough that every batch leaves full or at the flush; it sends every
 * record to its partition of the run's topic, then is flushed and closed; "done" on stdout at the end.
 */
public final class WhatIfProducer {
    public static void main(String[] args) throws Exception {
        JsonNode spec = new ObjectMapper().readTree(new File(args[0]));
        List<Object[]> records = new ArrayList<>();
        for (JsonNode r : spec.get("records")) {
            JsonNode hs = r.get(4);
            Header[] headers = new Header[hs.size()];
            for (int h = 0; h < hs.size(); h++) {
                headers[h] = new RecordHeader(hs.get(h).get(0).asText(), bytes(hs.get(h).get(1)));
            }
            records.add(new Object[] {r.get(0).asInt(), r.get(1).asLong(), bytes(r.get(2)), bytes(r.get(3)), headers});
        }
        for (JsonNode run : spec.get("runs")) {
            Properties props = new Properties();
            props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, spec.get("bootstrap").asText());
            props.put(ProducerConfig.ACKS_CONFIG, "all");
            // batches leave full (or at flush), not when a loaded machine lets linger.ms pass first
            props.put(ProducerConfig.LINGER_MS_CONFIG, "60000");
            props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, run.get("codec").asText());
            JsonNode level = run.get("level");
            if (level != null && !level.isNull()) {
                props.put("compression." + run.get("codec").asText() + ".level", level.asText());
            }
            String topic = run.get("topic").asText();
            try (KafkaProducer<byte[], byte[]> producer =
                         new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
                for (Object[] r : records) {
                    producer.send(new ProducerRecord<>(topic, (Integer) r[0], (Long) r[1], (byte[]) r[2],
                            (byte[]) r[3], Arrays.asList((Header[]) r[4])));
                }
                producer.flush();
            }
        }
        System.out.println("done");
    }

    private static byte[] bytes(JsonNode node) {
        return node == null || node.isNull() ? null : Base64.getDecoder().decode(node.asText());
    }
}
