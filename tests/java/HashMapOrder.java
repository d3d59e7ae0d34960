// The iteration order of a java.util.HashMap<String, ...> filled with computeIfAbsent, as
// DumpLogSegments fills its end-of-run reports: keys (one a line in the file ARGS[0]) are
// added in order, then printed in the map's order.  Run as a single-file program:
//   java tests/java/HashMapOrder.java KEYS_FILE
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;

public final class HashMapOrder {
    public static void main(String[] args) throws Exception {
        Map<String, Integer> map = new HashMap<>();
        for (String key : Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8)) {
            map.computeIfAbsent(key, k -> 1);
        }
        StringBuilder out = new StringBuilder();
        for (String key : map.keySet()) {
            out.append(key).append('\n');
        }
        System.out.write(out.toString().getBytes(StandardCharsets.UTF_8));
        System.out.flush();
    }
}
