// Kafka's own Java producer (kafka-clients) writing test topics through a live broker.
//
//   java -cp <jvm/kafka classpath>:<classes> BrokerProducer BOOTSTRAP PREFIX RECORDS BASE_TIMESTAMP_MS
//
// For each codec (none, gzip, snappy, lz4, zstd) an idempotent producer writes RECORDS
// records with headers to topic PREFIX-<codec> (created beforehand by the test); then a
// transactional producer writes PREFIX-txn: a committed transaction, an aborted one, a
// committed one.  Every acknowledged record is printed as one JSON line:
//   {"topic": T, "partition": P, "offset": O, "timestamp": MS, "i": I, "committed": true|false}
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class BrokerProducer {
    private static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};
    private static long baseTs;

    private static Properties props(String bootstrap) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000");
        return p;
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static ProducerRecord<byte[], byte[]> record(String topic, int i) {
        byte[] key = (i % 7 == 0) ? null : utf8("jkey-" + (i % 13));
        byte[] value = (i % 11 == 5) ? null
                : utf8("java value " + i + " " + "abcdefghij".repeat(1 + i % 9));
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, 0, baseTs + 1000L * i, key, value);
        if (i % 3 == 0) {
            r.headers().add("h", utf8("v" + i));
            r.headers().add("nullh", null);
            r.headers().add("h", utf8("dup"));
        }
        return r;
    }

    private static void print(RecordMetadata m, int i, boolean committed) {
        System.out.println("{\"topic\": \"" + m.topic() + "\", \"partition\": " + m.partition()
                + ", \"offset\": " + m.offset() + ", \"timestamp\": " + m.timestamp()
                + ", \"i\": " + i + ", \"committed\": " + committed + "}");
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String prefix = args[1];
        int n = Integer.parseInt(args[2]);
        baseTs = Long.parseLong(args[3]);
        for (String codec : CODECS) {
            Properties p = props(bootstrap);
            p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
            p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
                List<Future<RecordMetadata>> sent = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    sent.add(producer.send(record(prefix + "-" + codec, i)));
                }
                producer.flush();
                for (int i = 0; i < n; i++) {
                    print(sent.get(i).get(), i, true);
                }
            }
        }
        Properties p = props(bootstrap);
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, prefix + "-java-txn");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            int i = 0;
            for (int t = 0; t < 3; t++) {
                boolean commit = t != 1;
                producer.beginTransaction();
                List<Future<RecordMetadata>> sent = new ArrayList<>();
                List<Integer> ids = new ArrayList<>();
                for (int k = 0; k < n / 3; k++, i++) {
                    sent.add(producer.send(record(prefix + "-txn", i)));
                    ids.add(i);
                }
                producer.flush();
                for (int k = 0; k < sent.size(); k++) {
                    print(sent.get(k).get(), ids.get(k), commit);
                }
                if (commit) {
                    producer.commitTransaction();
                } else {
                    producer.abortTransaction();
                }
            }
        }
    }
}
