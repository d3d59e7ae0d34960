// Kafka's command-line tools (StorageTool, DumpLogSegments, ...) run one after
// another in one JVM, so a test session pays for one JVM start and one JIT warm-up instead of
// one per call (tests/broker/kafka_broker.py drives it).
//
//   java -cp <jvm/kafka classpath>:<classes> KafkaTools
//
// Each request is one line on stdin, fields separated by tabs:
//   STDOUT_FILE <tab> STDERR_FILE <tab> MAIN_CLASS <tab> ARG ...
// MAIN_CLASS.main(ARGS) runs with System.out and System.err writing to the two files (UTF-8,
// as the tool's own JVM prints with -Dfile.encoding=UTF-8); the answer is one line on stdout,
// "EXIT <status>": the status Kafka's Exit was called with first (0 when main returned).  A
// tool's exit ends its process: from that call on, whatever the tool still prints (a catch
// block reporting the exit as an error) goes nowhere, as it would after a real exit.
import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.apache.kafka.common.utils.internals.Exit;     // common.utils.Exit until Kafka 4.4

public final class KafkaTools {
    /** Thrown by Kafka's Exit in place of ending the JVM. */
    private static final class ToolExit extends RuntimeException {
        ToolExit() {
            super(null, null, false, false);
        }
    }

    private static final PrintStream NOWHERE = new PrintStream(OutputStream.nullOutputStream());
    private static Integer exitStatus;

    private static void exited(int status) {
        if (exitStatus == null) {
            exitStatus = status;
            System.setOut(NOWHERE);
            System.setErr(NOWHERE);
        }
        throw new ToolExit();
    }

    /** The index of the tool's main method in the stack trace of what it threw. */
    private static int mainFrame(Throwable thrown, String mainClass) {
        StackTraceElement[] trace = thrown.getStackTrace();
        for (int i = trace.length - 1; i >= 0; i--) {
            if (trace[i].getClassName().equals(mainClass) && trace[i].getMethodName().equals("main")) {
                return i;
            }
        }
        return trace.length - 1;
    }

    /** Drop the last ``frames`` frames (the reflective call from this class) from ``thrown``'s
     *  trace and those of its causes that end the same way, so the trace prints as it would
     *  from the tool's own JVM. */
    private static void withoutCaller(Throwable thrown, int frames) {
        for (Throwable t = thrown; t != null; t = t.getCause()) {
            StackTraceElement[] trace = t.getStackTrace();
            if (trace.length > frames && trace[trace.length - 1].getClassName().equals(KafkaTools.class.getName())) {
                t.setStackTrace(Arrays.copyOf(trace, trace.length - frames));
            }
        }
    }

    public static void main(String[] args) throws Exception {
        PrintStream answers = System.out;
        PrintStream log = System.err;
        // anything printed outside a request (Log4j's console appender binds to the stream it
        // finds when it starts) goes to stderr, never into the answers
        System.setOut(log);
        Exit.setExitProcedure((status, message) -> exited(status));
        Exit.setHaltProcedure((status, message) -> exited(status));
        BufferedReader requests = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = requests.readLine()) != null) {
            String[] fields = line.split("\t", -1);
            exitStatus = null;
            try (PrintStream out = new PrintStream(new FileOutputStream(fields[0]), true, StandardCharsets.UTF_8);
                 PrintStream err = new PrintStream(new FileOutputStream(fields[1]), true, StandardCharsets.UTF_8)) {
                System.setOut(out);
                System.setErr(err);
                try {
                    Method main = Class.forName(fields[2]).getMethod("main", String[].class);
                    main.invoke(null, (Object) Arrays.copyOfRange(fields, 3, fields.length));
                } catch (InvocationTargetException e) {
                    if (!(e.getCause() instanceof ToolExit) && exitStatus == null) {
                        // an exception out of main: the JVM prints it and exits with 1
                        Throwable thrown = e.getCause();
                        withoutCaller(thrown, thrown.getStackTrace().length - mainFrame(thrown, fields[2]) - 1);
                        System.err.print("Exception in thread \"main\" ");
                        thrown.printStackTrace();
                        exitStatus = 1;
                    }
                } finally {
                    System.out.flush();
                    System.err.flush();
                    System.setOut(log);
                    System.setErr(log);
                }
            }
            answers.println("EXIT " + (exitStatus == null ? 0 : exitStatus));
            answers.flush();
        }
        // no more requests: end here even if a tool left a thread running
        System.exit(0);
    }
}
