// The iteration order of a java.util.HashMap<String, ...> filled with computeIfAbsent, as
// DumpLogSegments fills its end-of-run reports: for each file of ARGS, a fresh map gets the
// file's keys (one a line) in order, then its keys are printed in the map's order, followed by
// an empty line (keys are never empty).  Many maps, one JVM:
//   java -cp CLASSES HashMapOrder KEYS_FILE...
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;

public final class HashMapOrder {
    public static void main(String[] args) throws Exception {
        StringBuilder out = new StringBuilder();
        for (String file : args) {
            Map<String, Integer> map = new HashMap<>();
            for (String key : Files.readAllLines(Paths.get(file), StandardCharsets.UTF_8)) {
                map.computeIfAbsent(key, k -> 1);
            }
            for (String key : map.keySet()) {
                out.append(key).append('\n');
            }
            out.append('\n');
        }
        System.out.write(out.toString().getBytes(StandardCharsets.UTF_8));
        System.out.flush();
    }
}
