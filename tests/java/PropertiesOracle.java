// java.util.Properties.load(Reader) on many texts per run: the oracle of kafkarec's properties reader
// (kafkarec/_java_properties.py; tests/support/oracles/properties_oracle.py drives it).
// In, repeated until EOF: a text as int length + UTF-8 bytes.  Out, per text, flushed after each one
// whose successor has not arrived yet: int entry count then each key and value as int length + its UTF-16BE
// code units (lone surrogates kept); or -1 then Java's error message as int length + UTF-8 bytes.
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Properties;

public class PropertiesOracle {
    public static void main(String[] args) throws IOException {
        DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 16));
        DataOutputStream out = new DataOutputStream(new BufferedOutputStream(System.out, 1 << 16));
        while (true) {
            int length;
            try {
                length = in.readInt();
            } catch (EOFException end) {
                break;
            }
            byte[] text = new byte[length];
            in.readFully(text);
            Properties props = new Properties();
            try {
                props.load(new StringReader(new String(text, StandardCharsets.UTF_8)));
            } catch (IllegalArgumentException refused) {
                out.writeInt(-1);
                write(out, String.valueOf(refused.getMessage()).getBytes(StandardCharsets.UTF_8));
                flushIfIdle(in, out);
                continue;
            }
            out.writeInt(props.size());
            for (Map.Entry<Object, Object> e : props.entrySet()) {
                writeChars(out, (String) e.getKey());
                writeChars(out, (String) e.getValue());
            }
            flushIfIdle(in, out);
        }
        out.flush();
    }

    private static void write(DataOutputStream out, byte[] bytes) throws IOException {
        out.writeInt(bytes.length);
        out.write(bytes);
    }

    // UTF-16BE code units as they are: an encoder would replace a lone surrogate
    private static void writeChars(DataOutputStream out, String s) throws IOException {
        out.writeInt(2 * s.length());
        out.writeChars(s);
    }

    // Answers go out when the next question is not waiting: a batch costs few writes, and the
    // asker never waits on an answer kept in the buffer.
    private static void flushIfIdle(InputStream in, OutputStream out) throws IOException {
        if (in.available() == 0) out.flush();
    }
}
