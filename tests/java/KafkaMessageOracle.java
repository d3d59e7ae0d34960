import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.Readable;
import org.apache.kafka.common.protocol.types.BoundField;
import org.apache.kafka.common.protocol.types.Field;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.TaggedFields;
import org.apache.kafka.common.protocol.types.Type;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;

/**
 * Kafka's generated message classes as an oracle for kafkarec's internal-topic schemas: each stdin line
 * "NAME VERSION hex HEX" (a message's simple class name, a version, the struct's bytes) is read by the
 * generated class (its Readable constructor), "NAME VERSION json JSON" by its JsonConverter; the message is
 * then written by the class and by its JsonConverter. One stdout line answers each,
 * {"bytes": HEX, "json": {...}} or {"error": "..."}. "types" answers every record type of the internal topics
 * ({"__consumer_offsets": [[id, key class, value class], ...], ..., "__cluster_metadata": [[id, class], ...]});
 * "schema NAME" a message's versions and, per version, its fields as generated (name, kind, "?" when
 * nullable, "@tag" when tagged; structs and array elements nested).
 */
public final class KafkaMessageOracle {
    private static final String[] PACKAGES = {
        "org.apache.kafka.coordinator.group.generated.",
        "org.apache.kafka.coordinator.share.generated.",
        "org.apache.kafka.coordinator.transaction.generated.",
        "org.apache.kafka.common.metadata.",
        "org.apache.kafka.server.log.remote.metadata.storage.generated.",
        "org.apache.kafka.common.message.",
    };

    private static Class<?> messageClass(String name) throws ClassNotFoundException {
        for (String p : PACKAGES) {
            try {
                return Class.forName(p + name);
            } catch (ClassNotFoundException e) {
                // the next package
            }
        }
        throw new ClassNotFoundException(name);
    }

    private static final String[][] COORDINATORS = {
        {"__consumer_offsets", "org.apache.kafka.coordinator.group.generated.CoordinatorRecordType"},
        {"__share_group_state", "org.apache.kafka.coordinator.share.generated.CoordinatorRecordType"},
        {"__transaction_state", "org.apache.kafka.coordinator.transaction.generated.CoordinatorRecordType"},
    };

    private static ObjectNode types() throws Exception {
        ObjectNode out = JsonNodeFactory.instance.objectNode();
        for (String[] c : COORDINATORS) {
            ArrayNode list = out.putArray(c[0]);
            for (Object t : Class.forName(c[1]).getEnumConstants()) {
                Class<?> tc = t.getClass();
                list.addArray().add((short) tc.getMethod("id").invoke(t))
                    .add(tc.getMethod("newRecordKey").invoke(t).getClass().getSimpleName())
                    .add(tc.getMethod("newRecordValue").invoke(t).getClass().getSimpleName());
            }
        }
        ArrayNode list = out.putArray("__cluster_metadata");
        for (Object t : Class.forName("org.apache.kafka.common.metadata.MetadataRecordType").getEnumConstants()) {
            Class<?> tc = t.getClass();
            list.addArray().add((short) tc.getMethod("id").invoke(t))
                .add(tc.getMethod("newMetadataRecord").invoke(t).getClass().getSimpleName());
        }
        return out;
    }

    private static String kind(Type t) {
        if (t instanceof Schema) {
            return "struct";
        }
        if (t.isArray()) {
            return "array";
        }
        String n = t.toString();
        switch (n) {
            case "BOOLEAN": return "bool";
            case "INT8": return "int8";
            case "INT16": return "int16";
            case "UINT16": return "uint16";
            case "INT32": return "int32";
            case "UNSIGNED_INT32": case "UINT32": return "uint32";
            case "INT64": return "int64";
            case "FLOAT64": return "float64";
            case "UUID": return "uuid";
            default:
                return n.contains("STRING") ? "string" : n.contains("BYTES") ? "bytes" : "?" + n;
        }
    }

    private static String camel(String snake) {
        StringBuilder b = new StringBuilder();
        boolean up = false;
        for (char c : snake.toCharArray()) {
            if (c == '_') {
                up = true;
                continue;
            }
            b.append(up ? Character.toUpperCase(c) : c);
            up = false;
        }
        return b.toString();
    }

    private static void describe(StringBuilder out, Type t) {
        out.append(kind(t)).append(t.isNullable() ? "?" : "");
        if (t.isArray()) {
            out.append("[");
            describe(out, t.arrayElementType().get());
            out.append("]");
        } else if (t instanceof Schema) {
            out.append("{");
            boolean first = true;
            for (BoundField bf : ((Schema) t).fields()) {
                if (bf.def.type instanceof TaggedFields) {
                    TaggedFields tagged = (TaggedFields) bf.def.type;
                    try {
                        java.lang.reflect.Field f = TaggedFields.class.getDeclaredField("fields");
                        f.setAccessible(true);
                        @SuppressWarnings("unchecked")
                        Map<Integer, Field> fields = new TreeMap<>((Map<Integer, Field>) f.get(tagged));
                        for (Map.Entry<Integer, Field> e : fields.entrySet()) {
                            out.append(first ? "" : ",").append(camel(e.getValue().name)).append("@")
                                .append(e.getKey()).append(":");
                            describe(out, e.getValue().type);
                            first = false;
                        }
                    } catch (ReflectiveOperationException e) {
                        throw new IllegalStateException(e);
                    }
                    continue;
                }
                out.append(first ? "" : ",").append(camel(bf.def.name)).append(":");
                describe(out, bf.def.type);
                first = false;
            }
            out.append("}");
        }
    }

    private static ObjectNode schema(String name) throws Exception {
        Class<?> cls = messageClass(name);
        ObjectNode out = JsonNodeFactory.instance.objectNode();
        short lo = cls.getField("LOWEST_SUPPORTED_VERSION").getShort(null);
        short hi = cls.getField("HIGHEST_SUPPORTED_VERSION").getShort(null);
        Schema[] schemas = (Schema[]) cls.getField("SCHEMAS").get(null);
        out.putArray("versions").add(lo).add(hi);
        ObjectNode byVersion = out.putObject("schemas");
        for (int v = lo; v <= hi; v++) {
            StringBuilder b = new StringBuilder();
            describe(b, schemas[v]);
            byVersion.put(Integer.toString(v), b.toString());
        }
        return out;
    }

    private static String answer(String line) {
        ObjectNode out = JsonNodeFactory.instance.objectNode();
        try {
            if (line.equals("types")) {
                return types().toString();
            }
            if (line.startsWith("schema ")) {
                return schema(line.substring(7)).toString();
            }
            String[] parts = line.split(" ", 4);
            short version = Short.parseShort(parts[1]);
            Class<?> cls = messageClass(parts[0]);
            Class<?> converter = Class.forName(cls.getName() + "JsonConverter");
            Message msg;
            if (parts[2].equals("json")) {
                JsonNode node = new ObjectMapper().readTree(parts[3]);
                msg = (Message) converter.getMethod("read", JsonNode.class, short.class).invoke(null, node, version);
            } else {
                ByteBuffer buf = ByteBuffer.wrap(HexFormat.of().parseHex(parts[3]));
                msg = (Message) cls.getConstructor(Readable.class, short.class)
                    .newInstance(new ByteBufferAccessor(buf), version);
                if (buf.hasRemaining()) {
                    throw new IllegalStateException(buf.remaining() + " bytes left after the message");
                }
            }
            ObjectSerializationCache cache = new ObjectSerializationCache();
            ByteBuffer written = ByteBuffer.allocate(msg.size(cache, version));
            msg.write(new ByteBufferAccessor(written), cache, version);
            out.put("bytes", HexFormat.of().formatHex(written.array()));
            out.set("json", (JsonNode) converter.getMethod("write", cls, short.class).invoke(null, msg, version));
        } catch (Throwable e) {
            Throwable cause = e instanceof java.lang.reflect.InvocationTargetException ? e.getCause() : e;
            out.removeAll();
            out.put("error", cause.getClass().getSimpleName() + ": " + cause.getMessage());
        }
        return out.toString();
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            out.println(answer(line));
            out.flush();
        }
    }
}
