// Debezium's embedded engine capturing a real database for the change-data-capture tests
// (issues 30 and 40): the PostgreSQL connector or the MariaDB connector; the classpath is
// jvm/debezium's.
//
//   java -cp $(bash scripts/jvm.sh jvm/debezium) tests/java/DebeziumCapture.java \
//        CONNECTOR HOST PORT USER PASSWORD DBNAME TABLES OUT_DIR
//
// CONNECTOR: postgresql or mariadb.  TABLES: Debezium's table.include.list
// (public.customers,public.capture_done; shop.orders,shop.capture_done).  The engine snapshots,
// then streams; every change event is serialized as Connect workers would: by Kafka Connect's
// JsonConverter with schemas.enable=true (topic "<prefix>.<schema or db>.<table>", prefix
// "dbz") and false (prefix "plain"); for PostgreSQL also as Avro through a Schema Registry
// (prefix "avro": Kafka Connect's Avro mapping, Apicurio's AvroData, written by Apache Avro's
// GenericDatumWriter in Confluent's framing, magic byte 0 and the schema id; the registry's own
// log, the Confluent Schema Registry's _schemas records, is written beside the topics, subjects
// <topic>-key and <topic>-value under TopicNameStrategy) and bare on a 3-partition topic
// (prefix "parted").  MariaDB's topics have 3 partitions each.  On a topic of several
// partitions a keyed event goes where Kafka's default partitioner sends it (murmur2 of the key
// bytes), a keyless one (a truncate) to a partition picked at random (seeded), as a producer's
// built-in partitioner picks one for a record without a key.  Kafka's record classes
// (MemoryRecords, 20 records a batch) write OUT_DIR/<topic>-<partition>/00000000000000000000.log.
// Prints "snapshot done" once the snapshot's last record arrived, stops at the first event of
// a table named capture_done, writes the logs, prints "done <events>" and exits 0 (1 after
// 300 s without it).
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import io.debezium.embedded.Connect;
import java.io.FileOutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.SimpleRecord;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;
import io.apicurio.registry.serde.avro.NonRecordContainer;
import io.apicurio.registry.utils.converter.avro.AvroData;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.kafka.connect.source.SourceRecord;

public class DebeziumCapture {
    /** topic -> its partitions' records */
    static final Map<String, List<List<SimpleRecord>>> TOPICS = new LinkedHashMap<>();
    static final Random KEYLESS = new Random(40);

    static JsonConverter converter(boolean schemas, boolean isKey) {
        JsonConverter c = new JsonConverter();
        c.configure(Map.of("schemas.enable", schemas, "converter.type", isKey ? "key" : "value"), isKey);
        return c;
    }

    static Properties connector(String kind, String host, String port, String user, String password,
                                String db, String tables) {
        Properties props = new Properties();
        props.setProperty("name", "kafkarec-cdc");
        props.setProperty("offset.storage", "org.apache.kafka.connect.storage.MemoryOffsetBackingStore");
        props.setProperty("offset.flush.interval.ms", "60000");
        props.setProperty("database.hostname", host);
        props.setProperty("database.port", port);
        props.setProperty("database.user", user);
        props.setProperty("database.password", password);
        props.setProperty("topic.prefix", "dbz");
        props.setProperty("table.include.list", tables);
        props.setProperty("snapshot.mode", "initial");
        props.setProperty("skipped.operations", "none");      // truncates too
        props.setProperty("tombstones.on.delete", "true");
        if (kind.equals("postgresql")) {
            props.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
            props.setProperty("database.dbname", db);
            props.setProperty("plugin.name", "pgoutput");
            props.setProperty("slot.name", "kafkarec");
            props.setProperty("publication.autocreate.mode", "filtered");
        } else if (kind.equals("mariadb")) {
            props.setProperty("connector.class", "io.debezium.connector.mariadb.MariaDbConnector");
            props.setProperty("database.include.list", db);
            props.setProperty("database.server.id", "5400");         // this replica's id in the binlog stream
            props.setProperty("database.ssl.mode", "disable");
            props.setProperty("include.schema.changes", "false");
            props.setProperty("decimal.handling.mode", "string");     // DECIMAL as its text, as SELECT shows it
            props.setProperty("schema.history.internal", "io.debezium.relational.history.MemorySchemaHistory");
        } else {
            throw new IllegalArgumentException("connector " + kind + ": postgresql or mariadb");
        }
        return props;
    }

    public static void main(String[] args) throws Exception {
        String kind = args[0];
        Properties props = connector(kind, args[1], args[2], args[3], args[4], args[5], args[6]);
        Path out = Path.of(args[7]);
        boolean postgres = kind.equals("postgresql");
        int partitions = postgres ? 1 : 3;

        JsonConverter[] withSchema = {converter(true, true), converter(true, false)};
        JsonConverter[] plain = {converter(false, true), converter(false, false)};
        CountDownLatch finished = new CountDownLatch(1);
        int[] events = {0};
        boolean[] snapshotDone = {false};

        DebeziumEngine<RecordChangeEvent<SourceRecord>> engine =
            DebeziumEngine.create(ChangeEventFormat.of(Connect.class))
                .using(props)
                .notifying((RecordChangeEvent<SourceRecord> event) -> {
                    SourceRecord r = event.record();
                    if (r.topic().endsWith(".capture_done")) {
                        finished.countDown();
                        return;
                    }
                    synchronized (TOPICS) {
                        add(r, "dbz", withSchema, partitions);
                        add(r, "plain", plain, partitions);
                        if (postgres) {
                            addAvro(r);
                            add(r, "parted", plain, 3);
                        }
                        events[0]++;
                    }
                    if (!snapshotDone[0] && r.value() instanceof Struct v && v.schema().field("source") != null) {
                        Object snap = v.getStruct("source").get("snapshot");
                        if ("last".equals(String.valueOf(snap))) {
                            snapshotDone[0] = true;
                            System.out.println("snapshot done");
                            System.out.flush();
                        }
                    }
                })
                .using((success, message, error) -> {
                    if (!success) {
                        System.err.println("engine stopped: " + message);
                        if (error != null) error.printStackTrace();
                    }
                    finished.countDown();
                })
                .build();
        ExecutorService executor = Executors.newSingleThreadExecutor();
        executor.execute(engine);
        boolean done = finished.await(300, TimeUnit.SECONDS);
        engine.close();
        executor.shutdown();
        executor.awaitTermination(60, TimeUnit.SECONDS);
        if (!done) {
            System.err.println("no capture_done event within 300 s");
            System.exit(1);
        }
        synchronized (TOPICS) {
            if (postgres) TOPICS.put("_schemas", List.of(SCHEMAS));
            for (Map.Entry<String, List<List<SimpleRecord>>> e : TOPICS.entrySet()) {
                for (int p = 0; p < e.getValue().size(); p++) {
                    Path dir = out.resolve(e.getKey() + "-" + p);
                    Files.createDirectories(dir);
                    try (FileChannel ch = new FileOutputStream(dir.resolve("00000000000000000000.log").toFile()).getChannel()) {
                        List<SimpleRecord> recs = e.getValue().get(p);
                        for (int i = 0; i < recs.size(); i += 20) {
                            List<SimpleRecord> part = recs.subList(i, Math.min(recs.size(), i + 20));
                            MemoryRecords batch = MemoryRecords.withRecords(i, Compression.NONE,
                                                                            part.toArray(new SimpleRecord[0]));
                            ByteBuffer buf = batch.buffer();
                            while (buf.hasRemaining()) ch.write(buf);
                        }
                    }
                }
            }
        }
        System.out.println("done " + events[0]);
        System.exit(0);
    }

    static void add(SourceRecord r, String prefix, JsonConverter[] conv, int partitions) {
        String topic = prefix + r.topic().substring(r.topic().indexOf('.'));
        byte[] key = r.key() == null && r.keySchema() == null ? null
            : conv[0].fromConnectData(topic, r.keySchema(), r.key());
        byte[] value = r.value() == null ? null : conv[1].fromConnectData(topic, r.valueSchema(), r.value());
        append(topic, partitions, key, value, r.timestamp());
    }

    /** One record onto the topic's partition: Kafka's default partitioner's for a key, else a
     *  random one. */
    static void append(String topic, int partitions, byte[] key, byte[] value, Long timestamp) {
        List<List<SimpleRecord>> parts = TOPICS.computeIfAbsent(topic, t -> {
            List<List<SimpleRecord>> list = new ArrayList<>();
            for (int p = 0; p < partitions; p++) list.add(new ArrayList<>());
            return list;
        });
        int p = key == null ? KEYLESS.nextInt(partitions) : Utils.toPositive(Utils.murmur2(key)) % partitions;
        long ts = timestamp == null ? System.currentTimeMillis() : timestamp;
        parts.get(p).add(new SimpleRecord(ts, key, value));
    }

    // --- Avro through a Schema Registry, as Confluent's AvroConverter would write it ---------

    static final AvroData AVRO = new AvroData(100);
    static final List<SimpleRecord> SCHEMAS = new ArrayList<>();
    static final Map<String, Integer> IDS = new LinkedHashMap<>();          // schema text -> id
    static final Map<String, Map<String, Integer>> VERSIONS = new LinkedHashMap<>();  // subject -> text -> version

    static void addAvro(SourceRecord r) throws RuntimeException {
        String topic = "avro" + r.topic().substring(r.topic().indexOf('.'));
        byte[] key = r.key() == null ? null : avro(topic + "-key", r.keySchema(), r.key());
        byte[] value = r.value() == null ? null : avro(topic + "-value", r.valueSchema(), r.value());
        append(topic, 1, key, value, r.timestamp());
    }

    /** Confluent's wire format: 0, the schema id (4 bytes, big-endian), the Avro binary body. */
    static byte[] avro(String subject, org.apache.kafka.connect.data.Schema schema, Object data) {
        org.apache.avro.Schema avroSchema = AVRO.fromConnectSchema(schema);
        Object datum = AVRO.fromConnectData(schema, data);
        if (datum instanceof NonRecordContainer<?> c) datum = c.getValue();
        int id = register(subject, avroSchema.toString());
        try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            bytes.write(0);
            bytes.write(ByteBuffer.allocate(4).putInt(id).array());
            BinaryEncoder enc = EncoderFactory.get().directBinaryEncoder(bytes, null);
            new GenericDatumWriter<Object>(avroSchema).write(datum, enc);
            enc.flush();
            return bytes.toByteArray();
        } catch (java.io.IOException e) {
            throw new RuntimeException(e);
        }
    }

    /** The id of a schema text (one id per distinct text, as the registry gives), registering
     *  it under the subject as its next version the first time: a SCHEMA record in _schemas. */
    static int register(String subject, String text) {
        Integer id = IDS.get(text);
        if (id == null) {
            id = IDS.size() + 1;
            IDS.put(text, id);
        }
        Map<String, Integer> versions = VERSIONS.computeIfAbsent(subject, s -> new LinkedHashMap<>());
        if (!versions.containsKey(text)) {
            int version = versions.size() + 1;
            versions.put(text, version);
            String key = "{\"keytype\":\"SCHEMA\",\"subject\":" + quote(subject) + ",\"version\":" + version
                + ",\"magic\":1}";
            String value = "{\"subject\":" + quote(subject) + ",\"version\":" + version + ",\"id\":" + id
                + ",\"schema\":" + quote(text) + ",\"deleted\":false}";
            SCHEMAS.add(new SimpleRecord(System.currentTimeMillis(), key.getBytes(StandardCharsets.UTF_8),
                                         value.getBytes(StandardCharsets.UTF_8)));
        }
        return id;
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }
}
