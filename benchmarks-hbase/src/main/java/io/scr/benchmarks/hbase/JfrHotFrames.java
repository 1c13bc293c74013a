package io.scr.benchmarks.hbase;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordingFile;

/**
 * Where a RegionServer's get handlers spend their CPU, from a flight recording of the HBase process
 * ({@code ./scr bench hbase --jfr DIR}): the execution samples of RPC handler threads, classed by
 * the first frame (from the top) that falls in a known layer, and the hottest top frames.
 *
 * <p>Usage: {@code JfrHotFrames FILE.jfr...}. One table per file.
 */
public final class JfrHotFrames {
  /** Layers, checked in this order against each frame from the top of the stack down. */
  private static final String[][] LAYERS = {
    {"scr read path", "io.scr."},
    {
      "stock short-circuit (BlockReaderLocal, ShortCircuitCache)",
      "org.apache.hadoop.hdfs.shortcircuit.",
      "org.apache.hadoop.hdfs.client.impl.BlockReaderLocal"
    },
    {"stock HDFS client (DFSInputStream, block readers)", "org.apache.hadoop.hdfs."},
    {
      "checksums (HBase's CRC over the block)",
      "org.apache.hadoop.util.DataChecksum",
      "org.apache.hadoop.util.NativeCrc32",
      "java.util.zip.CRC32C"
    },
    {"HFile block read (HBase)", "org.apache.hadoop.hbase.io.hfile.HFileBlock"},
    {
      "HFile seek and cells (HBase)",
      "org.apache.hadoop.hbase.io.hfile.",
      "org.apache.hadoop.hbase.regionserver.",
      "org.apache.hadoop.hbase.KeyValue",
      "org.apache.hadoop.hbase.CellComparator",
      "org.apache.hadoop.hbase.PrivateCellUtil"
    },
    {"RPC and protobuf (HBase)", "org.apache.hadoop.hbase.ipc.", "org.apache.hbase.thirdparty."},
  };

  private JfrHotFrames() {}

  public static void main(String[] args) throws Exception {
    for (String f : args) {
      System.out.println(summarize(Path.of(f)));
    }
  }

  /** The table for one recording. */
  static String summarize(Path jfr) throws Exception {
    Map<String, Integer> layers = new HashMap<>();
    Map<String, Integer> tops = new HashMap<>();
    Map<String, Integer> readTops = new HashMap<>();
    int total = 0;
    for (RecordedEvent e : RecordingFile.readAllEvents(jfr)) {
      if (!e.getEventType().getName().equals("jdk.ExecutionSample")) {
        continue;
      }
      String thread =
          e.getThread("sampledThread") == null
              ? ""
              : String.valueOf(e.getThread("sampledThread").getJavaName());
      if (!thread.contains("handler")) {
        continue; // RPC handlers serve the gets; the rest is the cluster's background
      }
      RecordedStackTrace st = e.getStackTrace();
      if (st == null || st.getFrames().isEmpty()) {
        continue;
      }
      total++;
      List<RecordedFrame> frames = st.getFrames();
      RecordedFrame top = frames.get(0);
      tops.merge(frameName(top), 1, Integer::sum);
      String layer = layerOf(frames);
      layers.merge(layer, 1, Integer::sum);
      if (layer.contains("HDFS") || layer.contains("short-circuit") || layer.startsWith("scr")) {
        readTops.merge(frameName(top), 1, Integer::sum);
      }
    }
    StringBuilder sb = new StringBuilder();
    sb.append(String.format(Locale.ROOT, "%s: %d handler samples%n", jfr.getFileName(), total));
    appendTop(sb, "layer (first known frame from the top)", layers, total, 10);
    appendTop(sb, "top frame", tops, total, 12);
    appendTop(sb, "top frame of the HDFS read samples (scr and stock layers)", readTops, total, 12);
    return sb.toString();
  }

  private static String frameName(RecordedFrame f) {
    return f.getMethod().getType().getName() + "." + f.getMethod().getName();
  }

  private static String layerOf(List<RecordedFrame> frames) {
    // A block-location lookup is a NameNode RPC whatever its top frame (IPC, protobuf, sockets).
    for (RecordedFrame f : frames) {
      String m = frameName(f);
      if (m.equals("org.apache.hadoop.hdfs.DFSClient.getLocatedBlocks")
          || m.equals("org.apache.hadoop.hdfs.DFSClient.callGetBlockLocations")) {
        return "block locations from the NameNode (stock DFSClient RPC)";
      }
    }
    for (RecordedFrame f : frames) {
      String cls = f.getMethod().getType().getName();
      for (String[] layer : LAYERS) {
        for (int i = 1; i < layer.length; i++) {
          if (cls.startsWith(layer[i])) {
            return layer[0];
          }
        }
      }
    }
    return "other (JDK, waiting)";
  }

  private static void appendTop(
      StringBuilder sb, String title, Map<String, Integer> counts, int total, int n) {
    sb.append("  ").append(title).append(":\n");
    List<Map.Entry<String, Integer>> l = new ArrayList<>(counts.entrySet());
    l.sort((a, b) -> b.getValue() - a.getValue());
    for (Map.Entry<String, Integer> en : l.subList(0, Math.min(n, l.size()))) {
      sb.append(
          String.format(
              Locale.ROOT,
              "    %5.1f %%  %6d  %s%n",
              100.0 * en.getValue() / Math.max(1, total),
              en.getValue(),
              en.getKey()));
    }
  }
}
