// Aiven's tiered-storage plugin (Aiven-Open/tiered-storage-for-apache-kafka, its
// RemoteStorageManager compiled from source by scripts/aiven_rsm_fixtures.sh) copying a
// partition's closed segments to its filesystem storage backend, as a broker with
// remote.log.storage.system.enable would: one copyLogSegmentData call per segment, with the
// segment's side files (offset and time index, the producer snapshot at the next segment's base
// offset, the transaction index when there is one) and the leader-epoch checkpoint entries up to
// the segment's end, serialized as the broker does.
//
//   java -cp <plugin classes>:<jvm/aiven-rsm classpath> tests/java/AivenRsmWrite.java \
//        CONFIG.properties PARTITION_DIR TOPIC_ID [SEGMENTS]
//
// CONFIG: the plugin's settings as the RSM receives them (the broker's rsm.config. prefix
// removed): storage.backend.class, storage.root, chunk.size, compression.*, encryption.*,
// key.prefix.  PARTITION_DIR: "<topic>-<partition>" as a broker leaves it; every segment but the
// last (the active one) is copied, or the first SEGMENTS of them.  TOPIC_ID: Kafka's Uuid text.
// Each copy is read back through the plugin's own fetchLogSegment/fetchIndex and compared with
// the originals; prints one line per segment: "copied <baseOffset> <segmentId> <endOffset>".
import java.io.FileInputStream;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager.IndexType;

public class AivenRsmWrite {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            props.load(in);
        }
        Map<String, Object> configs = new HashMap<>();
        for (String name : props.stringPropertyNames()) configs.put(name, props.getProperty(name));
        Path dir = Path.of(args[1]);
        Uuid topicId = Uuid.fromString(args[2]);
        String folder = dir.getFileName().toString();
        int dash = folder.lastIndexOf('-');
        TopicPartition tp = new TopicPartition(folder.substring(0, dash), Integer.parseInt(folder.substring(dash + 1)));

        List<Long> bases = new ArrayList<>();
        try (var files = Files.list(dir)) {
            files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".log"))
                 .forEach(n -> bases.add(Long.parseLong(n.substring(0, 20))));
        }
        bases.sort(null);
        int count = args.length > 3 ? Integer.parseInt(args[3]) : bases.size() - 1;
        TreeMap<Integer, Long> epochs = leaderEpochs(dir.resolve("leader-epoch-checkpoint"));

        io.aiven.kafka.tieredstorage.RemoteStorageManager rsm = new io.aiven.kafka.tieredstorage.RemoteStorageManager();
        rsm.configure(configs);
        for (int i = 0; i < count; i++) {
            long base = bases.get(i), next = bases.get(i + 1);
            Path log = dir.resolve(name(base, ".log"));
            long maxTimestamp = RecordBatch.NO_TIMESTAMP;
            try (FileRecords records = FileRecords.open(log.toFile())) {
                for (var batch : records.batches()) maxTimestamp = Math.max(maxTimestamp, batch.maxTimestamp());
            }
            Path txn = dir.resolve(name(base, ".txnindex"));
            Map<Integer, Long> segmentEpochs = new TreeMap<>();
            epochs.forEach((epoch, start) -> { if (start < next) segmentEpochs.put(epoch, Math.max(start, base)); });
            if (segmentEpochs.isEmpty()) segmentEpochs.put(0, base);
            LogSegmentData data = new LogSegmentData(log, dir.resolve(name(base, ".index")),
                dir.resolve(name(base, ".timeindex")), Files.exists(txn) ? Optional.of(txn) : Optional.empty(),
                dir.resolve(name(next, ".snapshot")), epochCheckpoint(epochs, next));
            ByteBuffer epochBytes = data.leaderEpochIndex().duplicate();      // the copy consumes the buffer
            byte[] wantEpochs = new byte[epochBytes.remaining()];
            epochBytes.get(wantEpochs);
            RemoteLogSegmentId id = new RemoteLogSegmentId(new TopicIdPartition(topicId, tp), Uuid.randomUuid());
            RemoteLogSegmentMetadata meta = new RemoteLogSegmentMetadata(id, base, next - 1, maxTimestamp, 0,
                System.currentTimeMillis(), (int) Files.size(log), segmentEpochs);
            rsm.copyLogSegmentData(meta, data);

            // The plugin's own read path gives the originals back.
            check("log", rsm.fetchLogSegment(meta, 0), Files.readAllBytes(log));
            check("offset index", rsm.fetchIndex(meta, IndexType.OFFSET), Files.readAllBytes(data.offsetIndex()));
            check("time index", rsm.fetchIndex(meta, IndexType.TIMESTAMP), Files.readAllBytes(data.timeIndex()));
            check("producer snapshot", rsm.fetchIndex(meta, IndexType.PRODUCER_SNAPSHOT),
                  Files.readAllBytes(data.producerSnapshotIndex()));
            check("leader epoch", rsm.fetchIndex(meta, IndexType.LEADER_EPOCH), wantEpochs);
            if (Files.exists(txn)) check("transaction index", rsm.fetchIndex(meta, IndexType.TRANSACTION), Files.readAllBytes(txn));
            System.out.println("copied " + base + " " + id.id() + " " + (next - 1));
        }
        rsm.close();
    }

    static String name(long offset, String suffix) {
        return String.format("%020d%s", offset, suffix);
    }

    static void check(String what, InputStream in, byte[] want) throws Exception {
        byte[] got = in.readAllBytes();
        in.close();
        if (!Arrays.equals(got, want)) {
            throw new IllegalStateException(what + ": the plugin read back " + got.length + " bytes, not the "
                                            + want.length + " original bytes");
        }
    }

    /** The broker's leader-epoch-checkpoint entries {epoch: start offset}. */
    static TreeMap<Integer, Long> leaderEpochs(Path file) throws Exception {
        TreeMap<Integer, Long> out = new TreeMap<>();
        if (!Files.exists(file)) return out;
        List<String> lines = Files.readAllLines(file);
        for (String line : lines.subList(2, lines.size())) {
            String[] parts = line.trim().split("\\s+");
            if (parts.length == 2) out.put(Integer.parseInt(parts[0]), Long.parseLong(parts[1]));
        }
        return out;
    }

    /** The checkpoint text the broker gives the RSM: version 0, the entries that start before
     *  the next segment (RemoteLogManager.epochEntriesAsByteBuffer). */
    static ByteBuffer epochCheckpoint(TreeMap<Integer, Long> epochs, long next) {
        StringBuilder b = new StringBuilder();
        List<String> lines = new ArrayList<>();
        epochs.forEach((epoch, start) -> { if (start < next) lines.add(epoch + " " + start); });
        b.append("0\n").append(lines.size()).append('\n');
        for (String line : lines) b.append(line).append('\n');
        return ByteBuffer.wrap(b.toString().getBytes(StandardCharsets.UTF_8));
    }
}
