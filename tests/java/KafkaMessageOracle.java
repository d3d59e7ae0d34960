import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.Readable;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/**
 * Kafka's generated message classes as an oracle for kafkarec's internal-topic schemas: each stdin line
 * "NAME VERSION hex HEX" (a message's simple class name, a version, the struct's bytes) is read by the
 * generated class (its Readable constructor), "NAME VERSION json JSON" by its JsonConverter; the message is
 * then written by the class and by its JsonConverter. One stdout line answers each,
 * {"bytes": HEX, "json": {...}} or {"error": "..."}.
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

    private static String answer(String line) {
        ObjectNode out = JsonNodeFactory.instance.objectNode();
        try {
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
