// What Kafka's own remote log metadata store holds after replaying a __remote_log_metadata log:
// each record value read by RemoteLogMetadataSerde and applied by RemotePartitionMetadataStore
// (every partition loaded first, as at assignment), a record the serde or the store throws on
// skipped, as tests/tiered/rlm_model.py skips it.
//
//   java -cp <jvm/kafka's classpath> tests/java/RemoteLogMetadataCacheOracle.java < LOGS
//
// stdin: one log per line, its record values in hex separated by spaces (an empty line: no
// records).  stdout, one line per log: "HELD" and the segments the store's caches hold, sorted,
// each " topicId/topic/partition/segmentId=STATE" (Kafka's own log lines may come between).
// The first line is "JAVA <version>".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.metadata.storage.RemoteLogMetadataCache;
import org.apache.kafka.server.log.remote.metadata.storage.RemotePartitionMetadataStore;
import org.apache.kafka.server.log.remote.metadata.storage.serialization.RemoteLogMetadataSerde;
import org.apache.kafka.server.log.remote.storage.RemoteLogMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;

public class RemoteLogMetadataCacheOracle {
  public static void main(String[] args) throws Exception {
    // the store and the cache keep their maps private: read them as they are
    Field caches = RemotePartitionMetadataStore.class.getDeclaredField("idToRemoteLogMetadataCache");
    caches.setAccessible(true);
    Field segments = RemoteLogMetadataCache.class.getDeclaredField("idToSegmentMetadata");
    segments.setAccessible(true);
    RemoteLogMetadataSerde serde = new RemoteLogMetadataSerde();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    System.out.println("JAVA " + System.getProperty("java.version"));
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      List<RemoteLogMetadata> records = new ArrayList<>();
      for (String hex : line.trim().split(" ")) {
        if (hex.isEmpty()) {
          continue;
        }
        try {
          records.add(serde.deserialize(HexFormat.of().parseHex(hex)));
        } catch (RuntimeException e) {
          // the serde refuses it: the store never sees it
        }
      }
      RemotePartitionMetadataStore store = new RemotePartitionMetadataStore();
      for (RemoteLogMetadata r : records) {
        store.maybeLoadPartition(r.topicIdPartition());
      }
      for (RemoteLogMetadata r : records) {
        try {
          store.handleRemoteLogMetadata(r);
        } catch (RuntimeException e) {
          // thrown: nothing of the record is applied
        }
      }
      TreeSet<String> held = new TreeSet<>();
      @SuppressWarnings("unchecked")
      Map<TopicIdPartition, RemoteLogMetadataCache> byPartition =
          (Map<TopicIdPartition, RemoteLogMetadataCache>) caches.get(store);
      for (RemoteLogMetadataCache cache : byPartition.values()) {
        @SuppressWarnings("unchecked")
        Map<?, RemoteLogSegmentMetadata> byId = (Map<?, RemoteLogSegmentMetadata>) segments.get(cache);
        for (RemoteLogSegmentMetadata m : byId.values()) {
          TopicIdPartition tip = m.remoteLogSegmentId().topicIdPartition();
          held.add(tip.topicId() + "/" + tip.topic() + "/" + tip.partition() + "/"
              + m.remoteLogSegmentId().id() + "=" + m.state());
        }
      }
      System.out.println("HELD" + (held.isEmpty() ? "" : " " + String.join(" ", held)));
    }
  }
}
