// new String(bytes, UTF_8) for each hex argument, printed as code points: the oracle of
// kafka-dump-log's payload rendering (tests/cli/test_java_string.py).  Run: java JavaString.java HEX...
import java.nio.charset.StandardCharsets;
public class JavaString {
    public static void main(String[] args) {
        for (String hex : args) {
            byte[] b = new byte[hex.length() / 2];
            for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
            String s = new String(b, StandardCharsets.UTF_8);
            StringBuilder out = new StringBuilder(hex).append(' ');
            s.codePoints().forEach(c -> out.append(String.format("%04x,", c)));
            System.out.println(out);
        }
    }
}
