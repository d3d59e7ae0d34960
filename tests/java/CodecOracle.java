// Test-only "codec oracle": compresses and decompresses bytes with the same
// Java libraries the Kafka clients use (snappy-java, lz4-java, zstd-jni,
// java.util.zip), so the Python test suite can check kafkarec against bytes a
// real Kafka producer would write, and check our own output against the
// decoders a real Kafka consumer would use.
//
// One JVM serves many requests (JVM start-up is the expensive part), over a
// length-prefixed binary protocol on stdin/stdout:
//
//   request  = header line (UTF-8, '\n'-terminated): "<op> [key=value ...]"
//              int32 BE payload length, payload bytes
//   response = int32 BE status (0 = ok, 1 = error)
//              int32 BE length, bytes (the result, or a UTF-8 error message)
//
// EOF on stdin ends the process with exit status 0. Driven by tests/javacodec.py.
//
// Ops (options in brackets):
//   info                         library versions and jar names, as key=value lines
//   echo, sleep [ms=]            plumbing checks (pipes, timeouts)
//   snappy-xerial-compress [block_size=32768], snappy-xerial-decompress (also raw snappy)
//   snappy-raw-compress, snappy-raw-decompress
//   lz4-frame-compress [level=9 block_checksum=false]   Kafka's LZ4 framing
//   lz4-frame-compress-broken-hc [same]                 ... with the message-format-v0 HC
//   lz4-frame-decompress [hc=standard|broken|ignore]    strict independent-block decoder
//   lz4-java-frame-compress [block_size=64KB|256KB|1MB|4MB block_checksum= content_checksum=
//                            content_size=], lz4-java-frame-decompress (LZ4FrameInputStream)
//   zstd-compress [level=3 checksum=false], zstd-decompress
//   gzip-compress [level=-1], gzip-decompress

import com.github.luben.zstd.RecyclingBufferPool;
import com.github.luben.zstd.ZstdInputStreamNoFinalizer;
import com.github.luben.zstd.ZstdOutputStreamNoFinalizer;
import com.github.luben.zstd.util.ZstdVersion;
import net.jpountz.lz4.LZ4Compressor;
import net.jpountz.lz4.LZ4Factory;
import net.jpountz.lz4.LZ4FrameInputStream;
import net.jpountz.lz4.LZ4FrameOutputStream;
import net.jpountz.lz4.LZ4SafeDecompressor;
import net.jpountz.xxhash.XXHash32;
import net.jpountz.xxhash.XXHashFactory;
import org.xerial.snappy.Snappy;
import org.xerial.snappy.SnappyInputStream;
import org.xerial.snappy.SnappyOutputStream;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;

public final class CodecOracle {

    private static final int STATUS_OK = 0;
    private static final int STATUS_ERROR = 1;

    /** Refuse absurd header lines instead of buffering garbage forever. */
    private static final int MAX_HEADER_LINE = 4096;

    // LZ4 frame format constants (https://github.com/lz4/lz4/blob/dev/doc/lz4_Frame_format.md).
    private static final int LZ4_MAGIC = 0x184D2204;
    private static final int LZ4_STORED_BIT = 0x80000000;
    private static final int KAFKA_LZ4_DEFAULT_LEVEL = 9;

    // Kafka's producer-side buffering, reproduced so the emitted bytes match.
    private static final int KAFKA_UNCOMPRESSED_BUFFER = 16 * 1024;
    private static final int KAFKA_GZIP_DEFLATE_BUFFER = 8 * 1024;

    public static void main(String[] args) throws IOException {
        DataInputStream in = new DataInputStream(
                new BufferedInputStream(new FileInputStream(FileDescriptor.in), 1 << 16));
        DataOutputStream out = new DataOutputStream(
                new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16));
        // stdout is the protocol channel: anything a library prints must not corrupt it.
        System.setOut(System.err);

        while (true) {
            String header = readHeaderLine(in);
            if (header == null) {
                break; // parent closed stdin: clean shutdown
            }
            int length = in.readInt();
            if (length < 0) {
                throw new IOException("negative payload length " + length + " (protocol desync)");
            }
            byte[] payload = new byte[length];
            in.readFully(payload);

            int status;
            byte[] result;
            try {
                result = dispatch(header, payload);
                status = STATUS_OK;
            } catch (Throwable t) { // report everything, including OOM, and keep serving
                result = describe(t).getBytes(StandardCharsets.UTF_8);
                status = STATUS_ERROR;
            }
            out.writeInt(status);
            out.writeInt(result.length);
            out.write(result);
            out.flush();
        }
        out.flush();
    }

    private static byte[] dispatch(String header, byte[] data) throws Exception {
        String[] words = header.trim().split(" +");
        String op = words[0];
        Options opts = new Options(words);
        byte[] result;
        switch (op) {
            case "info": result = info(); break;
            case "echo": result = data; break;
            case "sleep": Thread.sleep(opts.getInt("ms", 0)); result = new byte[0]; break;

            case "snappy-xerial-compress": result = snappyXerialCompress(data, opts); break;
            case "snappy-xerial-decompress": result = readAll(new SnappyInputStream(new ByteArrayInputStream(data))); break;
            case "snappy-raw-compress": result = Snappy.compress(data); break;
            case "snappy-raw-decompress": result = Snappy.uncompress(data); break;

            case "lz4-frame-compress": result = kafkaLz4Compress(data, opts, false); break;
            case "lz4-frame-compress-broken-hc": result = kafkaLz4Compress(data, opts, true); break;
            case "lz4-frame-decompress": result = lz4FrameDecompress(data, opts); break;
            case "lz4-java-frame-compress": result = lz4JavaFrameCompress(data, opts); break;
            case "lz4-java-frame-decompress": result = readAll(new LZ4FrameInputStream(new ByteArrayInputStream(data))); break;

            case "zstd-compress": result = zstdCompress(data, opts); break;
            case "zstd-decompress": result = readAll(new ZstdInputStreamNoFinalizer(new ByteArrayInputStream(data), RecyclingBufferPool.INSTANCE)); break;

            case "gzip-compress": result = gzipCompress(data, opts); break;
            case "gzip-decompress": result = readAll(new GZIPInputStream(new ByteArrayInputStream(data), KAFKA_GZIP_DEFLATE_BUFFER)); break;

            default: throw new IllegalArgumentException("unknown op '" + op + "'");
        }
        opts.rejectUnused(op); // a misspelt option must not silently fall back to a default
        return result;
    }

    // ---------------------------------------------------------------- info

    private static byte[] info() throws Exception {
        // Touching every library here makes native-loading problems surface at start-up.
        StringBuilder sb = new StringBuilder();
        sb.append("java.version=").append(System.getProperty("java.version")).append('\n');
        sb.append("java.vm=").append(System.getProperty("java.vm.name")).append('\n');
        sb.append("snappy.native=").append(Snappy.getNativeLibraryVersion()).append('\n');
        sb.append("lz4.factory=").append(LZ4Factory.fastestInstance()).append('\n');
        sb.append("xxhash.factory=").append(XXHashFactory.fastestInstance()).append('\n');
        sb.append("zstd-jni=").append(ZstdVersion.VERSION).append('\n');
        sb.append("jar.snappy=").append(jarOf(Snappy.class)).append('\n');
        sb.append("jar.lz4=").append(jarOf(LZ4Factory.class)).append('\n');
        sb.append("jar.zstd=").append(jarOf(ZstdVersion.class)).append('\n');
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** Which jar a class was loaded from: lz4-java, for one, has no version in its manifest. */
    private static String jarOf(Class<?> cls) {
        java.security.CodeSource src = cls.getProtectionDomain().getCodeSource();
        if (src == null || src.getLocation() == null) return "unknown";
        String path = src.getLocation().getPath();
        return path.substring(path.lastIndexOf('/') + 1);
    }

    // -------------------------------------------------------------- snappy

    private static byte[] snappyXerialCompress(byte[] data, Options opts) throws IOException {
        // Kafka uses SnappyOutputStream's default block size (32 KiB).
        int blockSize = opts.getInt("block_size", SnappyOutputStream.DEFAULT_BLOCK_SIZE);
        ByteArrayOutputStream bos = new ByteArrayOutputStream();
        try (SnappyOutputStream s = new SnappyOutputStream(bos, blockSize)) {
            s.write(data);
        }
        return bos.toByteArray();
    }

    // ------------------------------------------------- lz4, Kafka framing

    /**
     * Kafka's LZ4 framing: an LZ4 frame (v1) with independent blocks, 64 KiB
     * maximum block size, no content size and no content checksum. Blocks
     * that do not shrink are stored raw. With brokenHc the header checksum
     * covers the magic number too, as Kafka still writes for message format
     * v0 (KAFKA-3160).
     */
    private static byte[] kafkaLz4Compress(byte[] data, Options opts, boolean brokenHc) throws IOException {
        // Kafka keeps the historic fast compressor for its default level and
        // switches to the HC compressor for any other configured level.
        int level = opts.getInt("level", KAFKA_LZ4_DEFAULT_LEVEL);
        boolean blockChecksum = opts.getBool("block_checksum", false);
        LZ4Factory factory = LZ4Factory.fastestInstance();
        LZ4Compressor compressor = level == KAFKA_LZ4_DEFAULT_LEVEL
                ? factory.fastCompressor() : factory.highCompressor(level);
        XXHash32 xxh = XXHashFactory.fastestInstance().hash32();

        final int maxBlock = 64 * 1024;
        ByteArrayOutputStream bos = new ByteArrayOutputStream();

        byte[] header = new byte[7];
        putIntLE(header, 0, LZ4_MAGIC);
        header[4] = (byte) (0x40 | 0x20 | (blockChecksum ? 0x10 : 0)); // version 01, block independence
        header[5] = (byte) 0x40; // block max size id 4 = 64 KiB
        int hcFrom = brokenHc ? 0 : 4;
        header[6] = (byte) ((xxh.hash(header, hcFrom, 6 - hcFrom, 0) >> 8) & 0xFF);
        bos.write(header);

        byte[] compressed = new byte[compressor.maxCompressedLength(maxBlock)];
        for (int off = 0; off < data.length; off += maxBlock) {
            int len = Math.min(maxBlock, data.length - off);
            int clen = compressor.compress(data, off, len, compressed, 0, compressed.length);
            byte[] src = compressed;
            int srcOff = 0;
            int word = clen;
            if (clen >= len) {
                src = data;
                srcOff = off;
                clen = len;
                word = len | LZ4_STORED_BIT;
            }
            writeIntLE(bos, word);
            bos.write(src, srcOff, clen);
            if (blockChecksum) {
                writeIntLE(bos, xxh.hash(src, srcOff, clen, 0));
            }
        }
        writeIntLE(bos, 0); // EndMark
        return bos.toByteArray();
    }

    /**
     * Strict decoder for LZ4 frames with independent blocks (the only kind
     * Kafka reads), used to validate frames produced by kafkarec. Option
     * hc=standard|broken|ignore selects how the header checksum is checked;
     * "ignore" mimics Kafka's reader for message format v0.
     */
    private static byte[] lz4FrameDecompress(byte[] data, Options opts) throws IOException {
        String hcMode = opts.getString("hc", "standard");
        if (!hcMode.equals("standard") && !hcMode.equals("broken") && !hcMode.equals("ignore")) {
            throw new IllegalArgumentException("hc must be standard, broken or ignore, got " + hcMode);
        }
        XXHash32 xxh = XXHashFactory.fastestInstance().hash32();
        LZ4SafeDecompressor decompressor = LZ4Factory.fastestInstance().safeDecompressor();

        Cursor c = new Cursor(data);
        int magic = c.intLE();
        if (magic != LZ4_MAGIC) {
            throw new IOException(String.format("bad LZ4 frame magic 0x%08X", magic));
        }
        int flg = c.u8();
        int bd = c.u8();
        if ((flg >>> 6) != 1) throw new IOException("unsupported LZ4 frame version " + (flg >>> 6));
        if ((flg & 0x20) == 0) throw new IOException("dependent blocks are not supported (Kafka requires independent blocks)");
        if ((flg & 0x01) != 0) throw new IOException("dictionary ID is not supported");
        if ((flg & 0x02) != 0) throw new IOException("reserved FLG bit 1 is set");
        if ((bd & 0x8F) != 0) throw new IOException(String.format("reserved BD bits set: 0x%02X", bd));
        int sizeId = (bd >>> 4) & 7;
        if (sizeId < 4) throw new IOException("invalid block max size id " + sizeId);
        int maxBlock = 1 << (2 * sizeId + 8);
        boolean blockChecksum = (flg & 0x10) != 0;
        boolean contentSizePresent = (flg & 0x08) != 0;
        boolean contentChecksum = (flg & 0x04) != 0;
        long contentSize = contentSizePresent ? c.longLE() : -1;

        int descriptorEnd = c.pos;
        int hc = c.u8();
        if (!hcMode.equals("ignore")) {
            int from = hcMode.equals("broken") ? 0 : 4;
            int expected = (xxh.hash(data, from, descriptorEnd - from, 0) >> 8) & 0xFF;
            if (hc != expected) {
                throw new IOException(String.format(
                        "LZ4 header checksum mismatch (%s): got 0x%02X, expected 0x%02X", hcMode, hc, expected));
            }
        }

        ByteArrayOutputStream bos = new ByteArrayOutputStream();
        byte[] block = new byte[maxBlock];
        while (true) {
            int word = c.intLE();
            if (word == 0) break; // EndMark
            boolean stored = (word & LZ4_STORED_BIT) != 0;
            int size = word & ~LZ4_STORED_BIT;
            if (size > maxBlock) {
                throw new IOException("block size " + size + " exceeds frame maximum " + maxBlock);
            }
            int start = c.take(size);
            if (blockChecksum) {
                int expected = xxh.hash(data, start, size, 0);
                int got = c.intLE();
                if (got != expected) throw new IOException("LZ4 block checksum mismatch at offset " + start);
            }
            if (stored) {
                bos.write(data, start, size);
            } else {
                int n = decompressor.decompress(data, start, size, block, 0, maxBlock);
                bos.write(block, 0, n);
            }
        }
        byte[] result = bos.toByteArray();
        if (contentChecksum) {
            int expected = xxh.hash(result, 0, result.length, 0);
            if (c.intLE() != expected) throw new IOException("LZ4 content checksum mismatch");
        }
        if (contentSizePresent && contentSize != result.length) {
            throw new IOException("LZ4 content size " + contentSize + " != decoded " + result.length);
        }
        if (c.pos != data.length) {
            throw new IOException((data.length - c.pos) + " trailing bytes after LZ4 frame");
        }
        return result;
    }

    // ------------------------------------------ lz4, lz4-java's own frames

    private static byte[] lz4JavaFrameCompress(byte[] data, Options opts) throws IOException {
        LZ4FrameOutputStream.BLOCKSIZE blockSize;
        String bs = opts.getString("block_size", "64KB");
        switch (bs) {
            case "64KB": blockSize = LZ4FrameOutputStream.BLOCKSIZE.SIZE_64KB; break;
            case "256KB": blockSize = LZ4FrameOutputStream.BLOCKSIZE.SIZE_256KB; break;
            case "1MB": blockSize = LZ4FrameOutputStream.BLOCKSIZE.SIZE_1MB; break;
            case "4MB": blockSize = LZ4FrameOutputStream.BLOCKSIZE.SIZE_4MB; break;
            default: throw new IllegalArgumentException("block_size must be 64KB, 256KB, 1MB or 4MB, got " + bs);
        }
        List<LZ4FrameOutputStream.FLG.Bits> bits = new ArrayList<>();
        bits.add(LZ4FrameOutputStream.FLG.Bits.BLOCK_INDEPENDENCE);
        if (opts.getBool("block_checksum", false)) bits.add(LZ4FrameOutputStream.FLG.Bits.BLOCK_CHECKSUM);
        if (opts.getBool("content_checksum", false)) bits.add(LZ4FrameOutputStream.FLG.Bits.CONTENT_CHECKSUM);
        boolean contentSize = opts.getBool("content_size", false);
        if (contentSize) bits.add(LZ4FrameOutputStream.FLG.Bits.CONTENT_SIZE);
        LZ4FrameOutputStream.FLG.Bits[] bitArray = bits.toArray(new LZ4FrameOutputStream.FLG.Bits[0]);

        ByteArrayOutputStream bos = new ByteArrayOutputStream();
        try (LZ4FrameOutputStream s = contentSize
                ? new LZ4FrameOutputStream(bos, blockSize, data.length, bitArray)
                : new LZ4FrameOutputStream(bos, blockSize, bitArray)) {
            s.write(data);
        }
        return bos.toByteArray();
    }

    // ---------------------------------------------------------------- zstd

    private static byte[] zstdCompress(byte[] data, Options opts) throws IOException {
        // Streaming without a pledged size, as Kafka does: the frame header
        // then carries no content size.
        int level = opts.getInt("level", 3);
        boolean checksum = opts.getBool("checksum", false);
        ByteArrayOutputStream bos = new ByteArrayOutputStream();
        ZstdOutputStreamNoFinalizer z = new ZstdOutputStreamNoFinalizer(bos, RecyclingBufferPool.INSTANCE, level);
        z.setChecksum(checksum);
        try (OutputStream s = new BufferedOutputStream(z, KAFKA_UNCOMPRESSED_BUFFER)) {
            s.write(data);
        }
        return bos.toByteArray();
    }

    // ---------------------------------------------------------------- gzip

    /** GZIPOutputStream with a configurable deflate level (the JDK class has no setter). */
    private static final class LevelGzipOutputStream extends GZIPOutputStream {
        LevelGzipOutputStream(OutputStream out, int size, int level) throws IOException {
            super(out, size);
            def.setLevel(level);
        }
    }

    private static byte[] gzipCompress(byte[] data, Options opts) throws IOException {
        int level = opts.getInt("level", java.util.zip.Deflater.DEFAULT_COMPRESSION);
        ByteArrayOutputStream bos = new ByteArrayOutputStream();
        try (OutputStream s = new BufferedOutputStream(
                new LevelGzipOutputStream(bos, KAFKA_GZIP_DEFLATE_BUFFER, level), KAFKA_UNCOMPRESSED_BUFFER)) {
            s.write(data);
        }
        return bos.toByteArray();
    }

    // ------------------------------------------------------------- helpers

    private static byte[] readAll(InputStream in) throws IOException {
        try (InputStream s = in) {
            return s.readAllBytes();
        }
    }

    private static void putIntLE(byte[] b, int off, int v) {
        b[off] = (byte) v;
        b[off + 1] = (byte) (v >>> 8);
        b[off + 2] = (byte) (v >>> 16);
        b[off + 3] = (byte) (v >>> 24);
    }

    private static void writeIntLE(OutputStream out, int v) throws IOException {
        byte[] b = new byte[4];
        putIntLE(b, 0, v);
        out.write(b);
    }

    /** Bounds-checked little-endian reader over a byte array. */
    private static final class Cursor {
        final byte[] b;
        int pos;

        Cursor(byte[] b) {
            this.b = b;
        }

        int take(int n) throws EOFException {
            if (n < 0 || b.length - pos < n) {
                throw new EOFException("truncated: need " + n + " bytes at offset " + pos + ", have " + (b.length - pos));
            }
            int start = pos;
            pos += n;
            return start;
        }

        int u8() throws EOFException {
            return b[take(1)] & 0xFF;
        }

        int intLE() throws EOFException {
            int p = take(4);
            return (b[p] & 0xFF) | (b[p + 1] & 0xFF) << 8 | (b[p + 2] & 0xFF) << 16 | (b[p + 3] & 0xFF) << 24;
        }

        long longLE() throws EOFException {
            long lo = intLE() & 0xFFFFFFFFL;
            long hi = intLE() & 0xFFFFFFFFL;
            return lo | hi << 32;
        }
    }

    /** key=value options from the header line; tracks which ones an op consumed. */
    private static final class Options {
        private final Map<String, String> values = new HashMap<>();

        Options(String[] words) {
            for (int i = 1; i < words.length; i++) {
                int eq = words[i].indexOf('=');
                if (eq <= 0) throw new IllegalArgumentException("malformed option '" + words[i] + "', expected key=value");
                values.put(words[i].substring(0, eq), words[i].substring(eq + 1));
            }
        }

        String getString(String key, String dflt) {
            String v = values.remove(key);
            return v == null ? dflt : v;
        }

        int getInt(String key, int dflt) {
            String v = values.remove(key);
            if (v == null) return dflt;
            try {
                return Integer.parseInt(v);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("option " + key + " must be an integer, got '" + v + "'");
            }
        }

        boolean getBool(String key, boolean dflt) {
            String v = values.remove(key);
            if (v == null) return dflt;
            if (v.equals("true")) return true;
            if (v.equals("false")) return false;
            throw new IllegalArgumentException("option " + key + " must be true or false, got " + v);
        }

        void rejectUnused(String op) {
            if (!values.isEmpty()) {
                throw new IllegalArgumentException("op '" + op + "' does not take option(s) " + values.keySet());
            }
        }
    }

    /** Reads one '\n'-terminated UTF-8 line; null on EOF before any byte. */
    private static String readHeaderLine(DataInputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        while (true) {
            int b = in.read();
            if (b < 0) {
                if (line.size() == 0) return null;
                throw new EOFException("EOF inside request header");
            }
            if (b == '\n') return line.toString(StandardCharsets.UTF_8);
            if (line.size() >= MAX_HEADER_LINE) throw new IOException("request header line too long (protocol desync)");
            line.write(b);
        }
    }

    private static String describe(Throwable t) {
        StringWriter sw = new StringWriter();
        sw.append(t.toString());
        // A short trace helps locate failures inside the libraries without flooding test output.
        StackTraceElement[] trace = t.getStackTrace();
        for (int i = 0; i < Math.min(trace.length, 8); i++) {
            sw.append("\n    at ").append(trace[i].toString());
        }
        for (Throwable cause = t.getCause(); cause != null; cause = cause.getCause() == cause ? null : cause.getCause()) {
            sw.append("\nCaused by: ").append(cause.toString());
        }
        return sw.toString();
    }
}
