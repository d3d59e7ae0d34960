// Kafka's own Java clients (kafka-clients) writing the source history of kafkarec restore's tests
// (tests/support/brokers/restore_history.py decides what is written; this program is its hands), in one
// JVM for the whole history: one request a line on stdin, one answer line on stdout, flushed.
//
//   java -cp <jvm/kafka classpath>:<classes> RestoreHistoryWriter BOOTSTRAP
//
// Requests, tab-separated (DATA: base64, or "-" for null):
//   create     TOPIC PARTITIONS CONFIGS         topic created (CONFIGS: k=v,k=v or "-")      -> ok
//   producer   ID CONFIGS                       a KafkaProducer (acks=all, linger.ms=5 unless
//                                               CONFIGS says otherwise); initTransactions when
//                                               CONFIGS has transactional.id                  -> ok
//   send       ID TOPIC PARTITION TIMESTAMP KEY VALUE HEADERS
//                                               TIMESTAMP ms or "-" (the producer's clock);
//                                               HEADERS "-" or NAME:DATA,NAME:DATA (NAME base64) -> queued
//   flush      ID                               every record sent since the last flush acknowledged
//                                                                  -> their offsets, "o,o,o" in send order
//   begin|commit|abort|close  ID                a transaction begun, committed, aborted; the
//                                               producer closed                              -> ok
//   offsets    GROUP PROTOCOL TOPIC:P:O,...     the group commits the offsets as a member: subscribed to
//                                               their topics (group.protocol PROTOCOL, classic or consumer),
//                                               once every partition is assigned to it         -> ok
//   alter      GROUP TOPIC:P:O,...              the offsets set by an admin (alterConsumerGroupOffsets,
//                                               which takes any offset)                          -> ok
//   delete     TOPIC PARTITION OFFSET           deleteRecords: the log start moved  -> the low watermark
// Every wait is bounded (30 s); a failure exits 1 with the reason on stderr, which the Python side
// reports with the request it was answering.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class RestoreHistoryWriter {
    private static final long WAIT_S = 30;
    private static final Base64.Decoder B64 = Base64.getDecoder();

    private static String bootstrap;
    private static Admin admin;
    private static final Map<String, KafkaProducer<byte[], byte[]>> producers = new HashMap<>();
    private static final Map<String, List<Future<RecordMetadata>>> unflushed = new HashMap<>();

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        admin = Admin.create(ap);
        // stdout carries the answers only: the clients' own logging goes to stderr (log4j's config)
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try {
            for (String line; (line = in.readLine()) != null; ) {
                out.println(answer(line.split("\t", -1)));
                out.flush();
            }
        } catch (Exception e) {
            System.err.println("RestoreHistoryWriter failed: " + e);
            e.printStackTrace();
            System.exit(1);
        }
        for (KafkaProducer<byte[], byte[]> p : producers.values()) {
            p.close(Duration.ofSeconds(WAIT_S));
        }
        admin.close(Duration.ofSeconds(WAIT_S));
    }

    private static String answer(String[] f) throws Exception {
        switch (f[0]) {
            case "create": {
                NewTopic t = new NewTopic(f[1], Integer.parseInt(f[2]), (short) 1).configs(pairs(f[3]));
                admin.createTopics(List.of(t)).all().get(WAIT_S, TimeUnit.SECONDS);
                return "ok";
            }
            case "producer": {
                Properties p = new Properties();
                p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                p.put(ProducerConfig.ACKS_CONFIG, "all");
                p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
                p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(WAIT_S * 1000));
                p.putAll(pairs(f[2]));
                KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(),
                                                                             new ByteArraySerializer());
                if (p.containsKey(ProducerConfig.TRANSACTIONAL_ID_CONFIG)) {
                    producer.initTransactions();
                }
                producers.put(f[1], producer);
                unflushed.put(f[1], new ArrayList<>());
                return "ok";
            }
            case "send": {
                Long ts = f[4].equals("-") ? null : Long.valueOf(f[4]);
                ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(f[2], Integer.parseInt(f[3]), ts, data(f[5]),
                                                                        data(f[6]));
                if (!f[7].equals("-")) {
                    for (String h : f[7].split(",")) {
                        String[] nv = h.split(":", 2);
                        r.headers().add(new String(B64.decode(nv[0]), StandardCharsets.UTF_8), data(nv[1]));
                    }
                }
                unflushed.get(f[1]).add(producer(f[1]).send(r));
                return "queued";
            }
            case "flush": {
                producer(f[1]).flush();
                StringBuilder offsets = new StringBuilder();
                for (Future<RecordMetadata> sent : unflushed.get(f[1])) {
                    offsets.append(offsets.length() == 0 ? "" : ",").append(sent.get(WAIT_S, TimeUnit.SECONDS).offset());
                }
                unflushed.get(f[1]).clear();
                return offsets.toString();
            }
            case "begin":
                producer(f[1]).beginTransaction();
                return "ok";
            case "commit":
                producer(f[1]).commitTransaction();
                return "ok";
            case "abort":
                producer(f[1]).abortTransaction();
                return "ok";
            case "close":
                producers.remove(f[1]).close(Duration.ofSeconds(WAIT_S));
                return "ok";
            case "offsets":
                commitAsMember(f[1], f[2], offsets(f[3]));
                return "ok";
            case "alter":
                admin.alterConsumerGroupOffsets(f[1], offsets(f[2])).all().get(WAIT_S, TimeUnit.SECONDS);
                return "ok";
            case "delete": {
                TopicPartition tp = new TopicPartition(f[1], Integer.parseInt(f[2]));
                return String.valueOf(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(Long.parseLong(f[3]))))
                        .lowWatermarks().get(tp).get(WAIT_S, TimeUnit.SECONDS).lowWatermark());
            }
            default:
                throw new IllegalArgumentException("unknown request " + String.join(" ", f));
        }
    }

    private static KafkaProducer<byte[], byte[]> producer(String id) {
        KafkaProducer<byte[], byte[]> p = producers.get(id);
        if (p == null) {
            throw new IllegalArgumentException("no producer " + id);
        }
        return p;
    }

    private static byte[] data(String field) {
        return field.equals("-") ? null : B64.decode(field);
    }

    private static Map<String, String> pairs(String field) {
        Map<String, String> out = new HashMap<>();
        if (!field.equals("-")) {
            for (String kv : field.split(",")) {
                String[] p = kv.split("=", 2);
                out.put(p[0], p[1]);
            }
        }
        return out;
    }

    private static Map<TopicPartition, OffsetAndMetadata> offsets(String field) {
        Map<TopicPartition, OffsetAndMetadata> out = new HashMap<>();
        for (String tpo : field.split(",")) {
            int a = tpo.lastIndexOf(':'), b = tpo.lastIndexOf(':', a - 1);
            out.put(new TopicPartition(tpo.substring(0, b), Integer.parseInt(tpo.substring(b + 1, a))),
                    new OffsetAndMetadata(Long.parseLong(tpo.substring(a + 1))));
        }
        return out;
    }

    // A member's commit (OffsetCommit with the member's id and generation or epoch), as a consumer
    // of the group commits, not an admin's: the records __consumer_offsets holds for each protocol.
    private static void commitAsMember(String group, String protocol, Map<TopicPartition, OffsetAndMetadata> offsets) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        if (protocol.equals("classic")) {
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
        }
        Set<String> topics = new TreeSet<>();
        for (TopicPartition tp : offsets.keySet()) {
            topics.add(tp.topic());
        }
        long deadline = System.currentTimeMillis() + WAIT_S * 1000;
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
                                                                   new ByteArrayDeserializer())) {
            c.subscribe(topics);
            while (!c.assignment().containsAll(offsets.keySet())) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("group " + group + " got no assignment of " + offsets.keySet()
                                                    + " within " + WAIT_S + " s");
                }
                c.poll(Duration.ofMillis(100));
            }
            c.commitSync(offsets, Duration.ofSeconds(WAIT_S));
        }
    }
}
