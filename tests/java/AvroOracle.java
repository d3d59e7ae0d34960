// Apache Avro's Java library (avro-1.12.1.jar, shipped in pyspark's jars/) as the
// oracle for kafkarec's Avro decoder: writes bodies and resolves writer -> reader.
//
//   java -cp avro.jar:jackson-*.jar tests/java/AvroOracle.java < cases.jsonl > results.jsonl
//
// One JSON object per input line, one per output line, each flushed as it is printed (one JVM
// answers case after case, for a whole test session):
//   {"op": "write", "schema": TEXT, "json": [AVRO-JSON...]}
//       -> {"hex": [HEX...]}: each datum, given in Avro's JSON encoding, written
//          by GenericDatumWriter + BinaryEncoder;
//   {"op": "read", "writer": TEXT, "reader": TEXT, "hex": [HEX...]}
//       -> {"values": [CANON | {"error": MESSAGE}...]} decoded by
//          GenericDatumReader(writer, reader), or {"error": MESSAGE} when the
//          schemas do not parse.
// CANON is the datum walked with the reader schema: null, booleans, ints and
// longs as JSON numbers, floats and doubles as the hex bits of the value as a
// double (NaN canonical), strings and enum symbols as strings, bytes and fixed
// as lowercase hex, decimals as the unscaled integer's decimal string, records
// as objects, arrays as lists, maps as objects; a union is its branch's value.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.apache.avro.LogicalType;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericFixed;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;

public class AvroOracle {
    static final ObjectMapper M = new ObjectMapper();
    static final JsonNodeFactory F = JsonNodeFactory.instance;
    static final HexFormat HEX = HexFormat.of();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);  // println flushes
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            JsonNode c = M.readTree(line);
            ObjectNode res = F.objectNode();
            try {
                if (c.get("op").asText().equals("write")) {
                    res.set("hex", write(c));
                } else {
                    res.set("values", read(c));
                }
            } catch (Throwable e) {
                res.put("error", String.valueOf(e));
            }
            out.println(M.writeValueAsString(res));
        }
    }

    static ArrayNode write(JsonNode c) throws Exception {
        Schema s = new Schema.Parser().parse(c.get("schema").asText());
        GenericDatumReader<Object> jr = new GenericDatumReader<>(s);
        GenericDatumWriter<Object> w = new GenericDatumWriter<>(s);
        ArrayNode hex = F.arrayNode();
        for (JsonNode j : c.get("json")) {
            Object datum = jr.read(null, DecoderFactory.get().jsonDecoder(s, j.asText()));
            ByteArrayOutputStream bo = new ByteArrayOutputStream();
            BinaryEncoder enc = EncoderFactory.get().binaryEncoder(bo, null);
            w.write(datum, enc);
            enc.flush();
            hex.add(HEX.formatHex(bo.toByteArray()));
        }
        return hex;
    }

    static ArrayNode read(JsonNode c) throws Exception {
        Schema ws = new Schema.Parser().parse(c.get("writer").asText());
        Schema rs = new Schema.Parser().parse(c.get("reader").asText());
        GenericDatumReader<Object> r = new GenericDatumReader<>(ws, rs);
        ArrayNode vals = F.arrayNode();
        for (JsonNode h : c.get("hex")) {
            try {
                Object datum = r.read(null, DecoderFactory.get().binaryDecoder(HEX.parseHex(h.asText()), null));
                vals.add(canon(datum, rs));
            } catch (Throwable e) {
                ObjectNode err = F.objectNode();
                err.put("error", String.valueOf(e));
                vals.add(err);
            }
        }
        return vals;
    }

    static String dbits(double d) {
        return Long.toHexString(Double.doubleToLongBits(d));
    }

    static JsonNode canon(Object v, Schema s) {
        switch (s.getType()) {
            case NULL: return F.nullNode();
            case BOOLEAN: return F.booleanNode((Boolean) v);
            case INT: return F.numberNode((Integer) v);
            case LONG: return F.numberNode((Long) v);
            case FLOAT: return F.textNode(dbits((double) (Float) v));
            case DOUBLE: return F.textNode(dbits((Double) v));
            case STRING: return F.textNode(v.toString());
            case ENUM: return F.textNode(v.toString());
            case BYTES: {
                ByteBuffer b = ((ByteBuffer) v).duplicate();
                byte[] a = new byte[b.remaining()];
                b.get(a);
                return bytesCanon(a, s);
            }
            case FIXED: return bytesCanon(((GenericFixed) v).bytes(), s);
            case RECORD: {
                ObjectNode o = F.objectNode();
                GenericRecord rec = (GenericRecord) v;
                for (Schema.Field f : s.getFields()) o.set(f.name(), canon(rec.get(f.pos()), f.schema()));
                return o;
            }
            case ARRAY: {
                ArrayNode a = F.arrayNode();
                for (Object x : (List<?>) v) a.add(canon(x, s.getElementType()));
                return a;
            }
            case MAP: {
                ObjectNode o = F.objectNode();
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet())
                    o.set(e.getKey().toString(), canon(e.getValue(), s.getValueType()));
                return o;
            }
            case UNION: {
                int i = GenericData.get().resolveUnion(s, v);
                return canon(v, s.getTypes().get(i));
            }
            default: throw new IllegalArgumentException("type " + s.getType());
        }
    }

    static JsonNode bytesCanon(byte[] a, Schema s) {
        LogicalType lt = s.getLogicalType();
        if (lt instanceof LogicalTypes.Decimal) {
            // as Conversions.DecimalConversion.fromBytes: an empty array is Java's
            // NumberFormatException (Zero length BigInteger), a failed record
            return F.textNode(new BigInteger(a).toString());
        }
        return F.textNode(HEX.formatHex(a));
    }
}
