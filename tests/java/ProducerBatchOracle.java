import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.RecordBatch;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * Kafka's MemoryRecordsBuilder as the oracle of kafkarec's compression what-if: each stdin line is a
 * JSON request {"codec": "zstd", "level": 3 or null, "batch_size": 16384, "counts": [records per batch],
 * "records": [[timestamp, key (base64) or null, value (base64) or null, [[header key, value (base64) or
 * null], ...]], ...]}; the records are cut into batches of "counts" records, each built as the Java
 * producer's RecordAccumulator builds one (a buffer of batch.size, the current magic, CreateTime, base
 * offset 0) with the codec and level, and one stdout line answers {"sizes": [bytes of each batch],
 * "batches": [each batch's bytes (base64)]} or {"error": "..."}. One JVM answers many requests.
 */
public final class ProducerBatchOracle {
    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        System.setOut(System.err);    // stdout is the answers' channel
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            ObjectNode answer = mapper.createObjectNode();
            try {
                ArrayNode batches = mapper.createArrayNode();
                answer.set("sizes", sizes(mapper.readTree(line), mapper, batches));
                answer.set("batches", batches);
            } catch (Exception e) {
                answer.put("error", e.toString());
            }
            out.println(mapper.writeValueAsString(answer));
            out.flush();
        }
    }

    private static Compression compression(String codec, JsonNode level) {
        boolean leveled = level != null && !level.isNull();
        switch (codec) {
            case "none": return Compression.NONE;
            case "snappy": return Compression.snappy().build();
            case "gzip": return leveled ? Compression.gzip().level(level.asInt()).build() : Compression.gzip().build();
            case "lz4": return leveled ? Compression.lz4().level(level.asInt()).build() : Compression.lz4().build();
            case "zstd": return leveled ? Compression.zstd().level(level.asInt()).build() : Compression.zstd().build();
            default: throw new IllegalArgumentException("codec " + codec);
        }
    }

    private static byte[] bytes(JsonNode node) {
        return node == null || node.isNull() ? null : Base64.getDecoder().decode(node.asText());
    }

    private static ArrayNode sizes(JsonNode request, ObjectMapper mapper, ArrayNode batches) {
        Compression compression = compression(request.get("codec").asText(), request.get("level"));
        int batchSize = request.get("batch_size").asInt();
        JsonNode records = request.get("records");
        ArrayNode out = mapper.createArrayNode();
        int next = 0;
        for (JsonNode count : request.get("counts")) {
            MemoryRecordsBuilder builder = MemoryRecords.builder(ByteBuffer.allocate(batchSize),
                    RecordBatch.CURRENT_MAGIC_VALUE, compression, TimestampType.CREATE_TIME, 0L);
            for (int i = 0; i < count.asInt(); i++, next++) {
                JsonNode r = records.get(next);
                JsonNode hs = r.get(3);
                Header[] headers = new Header[hs.size()];
                for (int h = 0; h < hs.size(); h++) {
                    headers[h] = new RecordHeader(hs.get(h).get(0).asText(), bytes(hs.get(h).get(1)));
                }
                builder.append(r.get(0).asLong(), bytes(r.get(1)), bytes(r.get(2)), headers);
            }
            MemoryRecords built = builder.build();
            out.add(built.sizeInBytes());
            ByteBuffer buffer = built.buffer();
            byte[] data = new byte[buffer.remaining()];
            buffer.get(data);
            batches.add(Base64.getEncoder().encodeToString(data));
        }
        if (next != records.size()) {
            throw new IllegalArgumentException("counts cover " + next + " of " + records.size() + " records");
        }
        return out;
    }
}
