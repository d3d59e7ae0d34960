// What Spark's from_protobuf gives for google.protobuf.Any fields with convert.any.fields.to.json:
// each Any value of a message printed by protobuf-java-util's JsonFormat with the printer
// Spark's ProtobufDeserializer builds (omittingInsignificantWhitespace, preservingProtoFieldNames,
// printingEnumsAsInts with enums.as.ints, a type registry of every message of the descriptor set
// as ProtobufUtils.buildTypeRegistry adds them).
//
//   java -cp <jvm/protobuf's classpath> tests/java/AnyJsonOracle.java DESCRIPTOR_SET (MESSAGE ENUMS_AS_INTS)...
//
// One run per MESSAGE ENUMS_AS_INTS pair, in order, all in one JVM.  stdin, per run: a 4-byte
// big-endian count of payloads, then the payloads, each a 4-byte big-endian length and the
// message's bytes.  stdout (UTF-8), per payload:
//   ROW <n>            n Any values follow, in the order of the message's fields (declared order,
//                      into nested messages, list items, map values in the wire's order), each one
//   J <hex> <json>     the Any re-serialized (hex) and the printer's text, or
//   E <hex> <error>    what the printer threw (one line)
// or, when the payload does not parse as the message (DynamicMessage.parseFrom, as Spark parses it),
//   X <error>
// The first line is "JAVA <java.version>".
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorSet;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.Message;
import com.google.protobuf.TypeRegistry;
import com.google.protobuf.util.JsonFormat;
import java.io.DataInputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

public class AnyJsonOracle {
  static final String ANY = "google.protobuf.Any";

  public static void main(String[] args) throws Exception {
    FileDescriptorSet set = FileDescriptorSet.parseFrom(Files.readAllBytes(Paths.get(args[0])));
    Map<String, FileDescriptorProto> protos = new HashMap<>();
    for (FileDescriptorProto p : set.getFileList()) {
      protos.put(p.getName(), p);
    }
    Map<String, FileDescriptor> built = new HashMap<>();
    List<FileDescriptor> files = new ArrayList<>();
    for (FileDescriptorProto p : set.getFileList()) {
      files.add(build(p.getName(), protos, built));
    }
    // ProtobufUtils.buildTypeRegistry(descriptorBytes): every file's message types
    TypeRegistry.Builder registry = TypeRegistry.newBuilder();
    for (FileDescriptor f : files) {
      registry.add(f.getMessageTypes());
    }
    TypeRegistry types = registry.build();

    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    out.println("JAVA " + System.getProperty("java.version"));
    DataInputStream in = new DataInputStream(System.in);
    HexFormat hex = HexFormat.of();
    for (int run = 1; run + 1 < args.length; run += 2) {
      Descriptor root = message(files, args[run]);
      JsonFormat.Printer printer =
          JsonFormat.printer().omittingInsignificantWhitespace().preservingProtoFieldNames();
      if (Boolean.parseBoolean(args[run + 1])) {
        printer = printer.printingEnumsAsInts();
      }
      printer = printer.usingTypeRegistry(types);
      for (int count = in.readInt(); count > 0; count--) {
        byte[] payload = new byte[in.readInt()];
        in.readFully(payload);
        DynamicMessage message;
        try {
          message = DynamicMessage.parseFrom(root, payload);
        } catch (Exception e) {
          out.println("X " + oneLine(e));
          continue;
        }
        List<Message> anys = new ArrayList<>();
        walk(message, anys);
        out.println("ROW " + anys.size());
        for (Message any : anys) {
          String bytes = hex.formatHex(any.toByteArray());
          try {
            out.println("J " + bytes + " " + printer.print(any));
          } catch (Exception e) {
            out.println("E " + bytes + " " + oneLine(e));
          }
        }
      }
    }
    out.flush();
  }

  static Descriptor message(List<FileDescriptor> files, String name) {
    for (FileDescriptor f : files) {
      for (Descriptor d : f.getMessageTypes()) {
        if (d.getFullName().equals(name) || d.getName().equals(name)) {
          return d;
        }
      }
    }
    throw new IllegalArgumentException("no message " + name);
  }

  static FileDescriptor build(String name, Map<String, FileDescriptorProto> protos,
      Map<String, FileDescriptor> built) throws Exception {
    FileDescriptor done = built.get(name);
    if (done != null) {
      return done;
    }
    FileDescriptorProto p = protos.get(name);
    List<FileDescriptor> deps = new ArrayList<>();
    for (String d : p.getDependencyList()) {
      deps.add(build(d, protos, built));
    }
    FileDescriptor f = FileDescriptor.buildFrom(p, deps.toArray(new FileDescriptor[0]));
    built.put(name, f);
    return f;
  }

  static boolean isAny(FieldDescriptor f) {
    return f.getJavaType() == FieldDescriptor.JavaType.MESSAGE
        && f.getMessageType().getFullName().equals(ANY);
  }

  // The Any values of m in the order Spark's struct holds them.
  static void walk(Message m, List<Message> out) {
    for (FieldDescriptor f : m.getDescriptorForType().getFields()) {
      if (f.getJavaType() != FieldDescriptor.JavaType.MESSAGE) {
        continue;
      }
      if (f.isMapField()) {
        for (Object e : (List<?>) m.getField(f)) {
          Message entry = (Message) e;
          FieldDescriptor vf = entry.getDescriptorForType().findFieldByName("value");
          if (vf.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
            visit(vf, (Message) entry.getField(vf), out);
          }
        }
      } else if (f.isRepeated()) {
        for (Object e : (List<?>) m.getField(f)) {
          visit(f, (Message) e, out);
        }
      } else if (m.hasField(f)) {
        visit(f, (Message) m.getField(f), out);
      }
    }
  }

  static void visit(FieldDescriptor f, Message value, List<Message> out) {
    if (isAny(f)) {
      out.add(value);
    } else {
      walk(value, out);
    }
  }

  static String oneLine(Throwable e) {
    String text = e.getClass().getSimpleName() + ": " + e.getMessage();
    return text.replace('\n', ' ').replace('\r', ' ');
  }
}
