package io.scr.benchmarks.read;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import jdk.jfr.consumer.RecordingStream;

/**
 * A per-read trace of {@link ReplicaOpenBenchmark} ({@code -Dscr.bench.replicaOpen.trace=FILE}, off
 * by default): every read's start and end, the harness's generation opens and closes, the JVM's GC
 * pauses (JFR) and the measured iterations' windows, all on {@link System#nanoTime()}. At the
 * trial's end it classes each measured read: a client context's first reads, one per thread (they
 * wait for the context's set-up: connections, slot pool, threads, first segment), else by what it
 * overlapped (a GC pause, else an open, else a close, else none of these), and appends the count,
 * share, p50, p99 and p99.9 of each class to {@code FILE} and stderr: how much of a path's tail is
 * the harness's and the collector's, and how much its own (docs/benchmarks.md, "Replica open").
 *
 * <p>Concurrency: {@link #read} is called by every reader (one atomic increment, three array
 * stores; reads past the capacity are dropped and counted); {@link #harness} and {@link #window}
 * are synchronized; {@link #write} runs after the readers stopped.
 */
final class OpenTrace {
  static final int OPEN = 0;
  static final int CLOSE = 1;
  static final int GC = 2;

  /** Classes of reads beyond the harness events' kinds. */
  private static final int NONE = 3;

  private static final int FIRST = 4;

  private static final int ALL = 5;

  private static final int CAPACITY = 1 << 21;

  private final Path file;
  private final long[] starts = new long[CAPACITY];
  private final long[] ends = new long[CAPACITY];
  private final boolean[] firstOfContext = new boolean[CAPACITY];
  private final AtomicInteger reads = new AtomicInteger();
  private final List<long[]> harness = new ArrayList<>();
  private final List<long[]> windows = new ArrayList<>();
  private final RecordingStream pauses;

  OpenTrace(Path file) {
    this.file = file;
    this.pauses = listenForPauses();
  }

  /**
   * Records every stop-the-world GC pause as a harness event of kind {@link #GC}, from JFR's {@code
   * jdk.GCPhasePause} (G1's young, remark and cleanup pauses alike; the GC MXBeans of JDK 17 report
   * no remark or cleanup pause, and they were up to 20 ms here), streamed in this JVM.
   */
  private RecordingStream listenForPauses() {
    long nanoMinusEpochNanos = System.nanoTime() - epochNanos(Instant.now());
    RecordingStream rs = new RecordingStream();
    rs.enable("jdk.GCPhasePause").withThreshold(Duration.ZERO);
    rs.onEvent(
        "jdk.GCPhasePause",
        e -> {
          long start = epochNanos(e.getStartTime()) + nanoMinusEpochNanos;
          harness(GC, start, start + e.getDuration().toNanos());
        });
    rs.startAsync();
    return rs;
  }

  private static long epochNanos(Instant t) {
    return t.getEpochSecond() * 1_000_000_000L + t.getNano();
  }

  /** The trace named by {@code -Dscr.bench.replicaOpen.trace}, or null. */
  static OpenTrace fromSystemProperty() {
    String f = System.getProperty("scr.bench.replicaOpen.trace");
    return f == null || f.isEmpty() ? null : new OpenTrace(Path.of(f));
  }

  /**
   * One read; {@code firstOfContext}: one of the first reads of a new client context (a
   * generation), one per reader thread, which wait for that context's set-up: its connections, slot
   * pool and threads, and its first shared-memory segment.
   */
  void read(long startNanos, long endNanos, boolean firstOfContext) {
    int i = reads.getAndIncrement();
    if (i < CAPACITY) {
      starts[i] = startNanos;
      ends[i] = endNanos;
      this.firstOfContext[i] = firstOfContext;
    }
  }

  synchronized void harness(int kind, long startNanos, long endNanos) {
    harness.add(new long[] {kind, startNanos, endNanos});
  }

  synchronized void window(long startNanos, long endNanos) {
    windows.add(new long[] {startNanos, endNanos});
  }

  /** Classes the measured reads and writes the summary; {@code label} heads it. */
  void write(String label) {
    try {
      Thread.sleep(2_000); // JFR hands events over about once a second
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    pauses.close();
    summarize(label);
  }

  private synchronized void summarize(String label) {
    int n = Math.min(reads.get(), CAPACITY);
    long[][] events = harness.toArray(new long[0][]);
    Arrays.sort(events, Comparator.comparingLong(e -> e[1]));
    long longest = 0;
    for (long[] e : events) {
      longest = Math.max(longest, e[2] - e[1]);
    }
    long[] durations = new long[n];
    byte[] classes = new byte[n];
    int measured = 0;
    for (int i = 0; i < n; i++) {
      if (measured(starts[i], ends[i])) {
        durations[measured] = ends[i] - starts[i];
        classes[measured++] =
            (byte) (firstOfContext[i] ? FIRST : classOf(events, longest, starts[i], ends[i]));
      }
    }
    String[] names = {
      "overlapping an open",
      "overlapping a close",
      "overlapping a GC pause",
      "none of these",
      "a context's first",
      "all"
    };
    StringBuilder sb = new StringBuilder("replica-open trace ").append(label).append('\n');
    for (int c = ALL; c >= 0; c--) {
      int cls = c;
      long[] d =
          IntStream.range(0, measured)
              .filter(j -> cls == ALL || classes[j] == cls)
              .mapToLong(j -> durations[j])
              .sorted()
              .toArray();
      sb.append(
          String.format(
              "  %-20s reads %8d (%5.1f %%)  p50 %8.1f us  p99 %9.1f us  p99.9 %9.1f us%n",
              names[c],
              d.length,
              measured == 0 ? 0.0 : 100.0 * d.length / measured,
              pct(d, 0.50),
              pct(d, 0.99),
              pct(d, 0.999)));
    }
    long[] kindNanos = new long[3];
    int[] kindCounts = new int[3];
    for (long[] e : events) {
      kindNanos[(int) e[0]] += e[2] - e[1];
      kindCounts[(int) e[0]]++;
    }
    sb.append(
        String.format(
            "  in the trial: %d opens (%.0f ms), %d closes (%.0f ms), %d GC pauses (%.0f ms);"
                + " %d reads dropped%n",
            kindCounts[OPEN],
            kindNanos[OPEN] / 1e6,
            kindCounts[CLOSE],
            kindNanos[CLOSE] / 1e6,
            kindCounts[GC],
            kindNanos[GC] / 1e6,
            Math.max(0, reads.get() - CAPACITY)));
    System.err.print(sb);
    try {
      Files.write(
          file,
          sb.toString().getBytes(StandardCharsets.UTF_8),
          StandardOpenOption.CREATE,
          StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the trace to " + file, e);
    }
  }

  private boolean measured(long start, long end) {
    for (long[] w : windows) {
      if (start >= w[0] && end <= w[1]) {
        return true;
      }
    }
    return false;
  }

  /**
   * The class of a read: GC, OPEN or CLOSE if an event of that kind overlapped [start, end] (in
   * that order of precedence), else NONE.
   */
  private static int classOf(long[][] events, long longest, long start, long end) {
    // events are sorted by start; only those starting in [start - longest, end] can overlap
    int lo = 0;
    int hi = events.length;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (events[mid][1] < start - longest) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    boolean open = false;
    boolean close = false;
    for (int i = lo; i < events.length && events[i][1] <= end; i++) {
      if (events[i][2] >= start) {
        if (events[i][0] == GC) {
          return GC;
        }
        open |= events[i][0] == OPEN;
        close |= events[i][0] == CLOSE;
      }
    }
    return open ? OPEN : close ? CLOSE : NONE;
  }

  private static double pct(long[] sorted, double q) {
    if (sorted.length == 0) {
      return 0;
    }
    int i = (int) Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1);
    return sorted[Math.max(0, i)] / 1000.0;
  }
}
