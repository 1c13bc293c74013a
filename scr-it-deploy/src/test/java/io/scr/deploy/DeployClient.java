package io.scr.deploy;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.ReadStatistics;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.util.NativeCodeLoader;

/**
 * The client process of the deployment tests: a plain Hadoop client program, run in its own JVM as
 * the client user with its own configuration directory first on the classpath (core-site.xml,
 * hdfs-site.xml: what {@code HADOOP_CONF_DIR} does), and scr only where that configuration and the
 * deployed bundle put it. It knows nothing of scr; what it reports comes from the stream the
 * program holds ({@link HdfsDataInputStream#getReadStatistics()}).
 *
 * <p>Protocol on stdout, one line each, {@code key=value} pairs: {@value #RESULT} when done (then
 * it waits for a line or EOF on stdin before exiting, so the parent can inspect {@code
 * /proc/<pid>}); in mode {@code restart}, {@value #PAUSED} after the first part of the file, then
 * it waits for {@code go} on stdin. Exit code 0 after a good run, 1 when the bytes read were wrong.
 *
 * <p>Usage: {@code read PATH LENGTH CRC32 [LIST_DIR]} or {@code restart PATH LENGTH CRC32
 * FIRST_BYTES RESUME_TIMEOUT_MS}.
 */
public final class DeployClient {
  static final String RESULT = "DEPLOY-CLIENT-RESULT ";
  static final String PAUSED = "DEPLOY-CLIENT-PAUSED ";

  /** Read size per pread: an HBase block. */
  private static final int CHUNK = 64 * 1024;

  private DeployClient() {}

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    String path = args[1];
    int length = Integer.parseInt(args[2]);
    long expectedCrc = Long.parseLong(args[3]);
    Configuration conf = new Configuration();
    BufferedReader stdin =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    StringBuilder out = new StringBuilder();
    byte[] data = new byte[length];
    boolean ok;
    try (FileSystem fs = FileSystem.newInstance(FileSystem.getDefaultUri(conf), conf);
        FSDataInputStream in = fs.open(new org.apache.hadoop.fs.Path(path))) {
      ReadStatistics stats = ((HdfsDataInputStream) in).getReadStatistics();
      out.append("fs=").append(fs.getClass().getName());
      out.append(" stream=").append(in.getWrappedStream().getClass().getName());
      if (mode.equals("read")) {
        preadRange(in, data, 0, length);
        if (args.length > 4) {
          out.append(" listDir=").append(tryList(Paths.get(args[4])));
        }
      } else if (mode.equals("restart")) {
        int first = Integer.parseInt(args[4]);
        long resumeTimeoutMs = Long.parseLong(args[5]);
        preadRange(in, data, 0, first);
        System.out.println(
            PAUSED + "sc=" + stats.getTotalShortCircuitBytesRead() + " total=" + total(stats));
        System.out.flush();
        String go = stdin.readLine();
        if (!"go".equals(go)) {
          throw new IllegalStateException("expected 'go' on stdin, got " + go);
        }
        // Read the rest (blocks not opened before the restart, so each needs a new fd request to
        // the restarted DataNode) pass by pass until one pass is entirely short-circuit.
        long start = System.nanoTime();
        long deadline = start + resumeTimeoutMs * 1_000_000L;
        int passes = 0;
        long firstPassSc = -1;
        long passSc;
        do {
          long before = stats.getTotalShortCircuitBytesRead();
          preadRange(in, data, first, length - first);
          passSc = stats.getTotalShortCircuitBytesRead() - before;
          if (firstPassSc < 0) {
            firstPassSc = passSc;
          }
          passes++;
        } while (passSc < length - first && System.nanoTime() - deadline < 0);
        out.append(" restPasses=").append(passes);
        out.append(" restFirstPassSc=").append(firstPassSc);
        out.append(" restLastPassSc=").append(passSc);
        out.append(" restBytes=").append(length - first);
        out.append(" resumeMs=").append((System.nanoTime() - start) / 1_000_000L);
      } else {
        throw new IllegalArgumentException("unknown mode " + mode);
      }
      CRC32 crc = new CRC32();
      crc.update(data);
      ok = crc.getValue() == expectedCrc;
      out.append(" crcOk=").append(ok);
      out.append(" sc=").append(stats.getTotalShortCircuitBytesRead());
      out.append(" local=").append(stats.getTotalLocalBytesRead());
      out.append(" total=").append(total(stats));
    }
    out.append(" user=").append(UserGroupInformation.getCurrentUser().getShortUserName());
    out.append(" nativeLoaded=").append(NativeCodeLoader.isNativeCodeLoaded());
    System.out.println(RESULT + out.toString().trim());
    System.out.flush();
    stdin.readLine(); // the parent looks at /proc/<pid>/maps meanwhile
    System.exit(ok ? 0 : 1);
  }

  private static long total(ReadStatistics stats) {
    return stats.getTotalBytesRead();
  }

  private static void preadRange(FSDataInputStream in, byte[] data, int from, int length)
      throws IOException {
    for (int off = from; off < from + length; off += CHUNK) {
      in.readFully(off, data, off, Math.min(CHUNK, from + length - off));
    }
  }

  /** "yes", or why this user cannot list {@code dir} (e.g. AccessDeniedException at mode 0711). */
  private static String tryList(Path dir) {
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
      return entries.iterator().hasNext() ? "yes" : "yes-empty";
    } catch (IOException e) {
      return "no:" + e.getClass().getSimpleName();
    } catch (RuntimeException e) {
      return "no:" + e.getClass().getSimpleName();
    }
  }
}
