package io.scr.shim;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Memory;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;

/**
 * Why an fd request served on an event loop was slow: the loop thread read from storage (a cold
 * directory or file), waited for something else (a lock), was stopped by a garbage collection,
 * waited for a core, or was busy the whole time. {@link FdRequestRouting} moves fd requests off the
 * loops only for the first: only there do threads help, each waiting for its own reads while the
 * loop serves the others. A lock (the dataset's, the slot registry's) makes every request that
 * needs it wait, whichever thread serves it; a GC stops every thread; and on a loaded host (two
 * cores, readers beside the DataNode) a loop that waits 5 ms for a core is common. Moving for those
 * only added two thread wake-ups to every request (a 2-core benchmark host moved to the workers
 * within its warm-up, for preemptions, GCs and lock waits of 5-35 ms).
 *
 * <p>The evidence is this thread's {@code getrusage(RUSAGE_THREAD)}: blocks read from storage
 * ({@code ru_inblock}: bios the thread submitted, task I/O accounting) and major page faults,
 * voluntary context switches (waits it entered) and involuntary ones (preemptions), and the JVM's
 * collection count. They are taken before each request ({@link #start}) and again only when the
 * request was slow ({@link #slowCause}), about 0.4 µs per request.
 *
 * <p>Thread-safety: one instance per shim; each thread keeps its own samples (thread-local, event
 * loops only). Where {@code getrusage} is unavailable, or the kernel does not account a task's I/O
 * ({@code /proc/self/io} missing), a slow request that waited is {@link Cause#UNKNOWN}, which
 * {@link FdRequestRouting} treats as a disk read (as it treated every slow request before it had
 * causes).
 */
class StallProbe {
  /** Why a slow request was slow. */
  enum Cause {
    /** The thread read from storage (a cold directory, inode or file page). Moving helps. */
    DISK,
    /** A garbage collection ran during the request: every thread stopped. */
    GC,
    /** The thread waited without reading storage: a lock, which every thread would wait for. */
    WAITED,
    /** Only preempted (the kernel ran other threads): no core free. */
    PREEMPTED,
    /** Neither waited nor preempted: the request itself used the time (CPU). */
    RAN,
    /** It waited, and whether for storage cannot be told on this host. */
    UNKNOWN
  }

  private static final int RUSAGE_THREAD = 1;

  /** struct rusage on 64-bit Linux: two 16-byte timevals, then 14 longs. */
  private static final int RUSAGE_BYTES = 144;

  private static final int MAJFLT_OFFSET = 32 + 8 * 5;
  private static final int INBLOCK_OFFSET = 32 + 8 * 7;
  private static final int NVCSW_OFFSET = 32 + 8 * 12;
  private static final int NIVCSW_OFFSET = 32 + 8 * 13;

  /** Loads libc's getrusage, or null (not 64-bit Linux, or jnr-ffi cannot). */
  private static final Rusage LIBC = load();

  private static final Runtime RUNTIME = LIBC == null ? null : Runtime.getRuntime(LIBC);

  /** Whether the kernel accounts each task's storage reads (CONFIG_TASK_IO_ACCOUNTING). */
  private static final boolean IO_ACCOUNTED = Files.isReadable(Paths.get("/proc/self/io"));

  private final List<GarbageCollectorMXBean> collectors =
      ManagementFactory.getGarbageCollectorMXBeans();

  private final ThreadLocal<Sample> samples = ThreadLocal.withInitial(Sample::new);

  /** One thread's counts at {@link #start}, and its native buffer for getrusage. */
  private static final class Sample {
    final Pointer usage = RUNTIME == null ? null : Memory.allocateDirect(RUNTIME, RUSAGE_BYTES);
    boolean taken;
    long storageReads;
    long voluntary;
    long involuntary;
    long collections;
  }

  /** Takes this thread's counts before a request. */
  void start() {
    Sample s = samples.get();
    s.taken = s.usage != null && LIBC.getrusage(RUSAGE_THREAD, s.usage) == 0;
    if (s.taken) {
      s.storageReads = storageReads(s.usage);
      s.voluntary = s.usage.getLong(NVCSW_OFFSET);
      s.involuntary = s.usage.getLong(NIVCSW_OFFSET);
      s.collections = collections();
    }
  }

  /** Why the request since this thread's {@link #start} was slow. */
  Cause slowCause() {
    Sample s = samples.get();
    if (!s.taken || LIBC.getrusage(RUSAGE_THREAD, s.usage) != 0) {
      return Cause.UNKNOWN;
    }
    if (storageReads(s.usage) != s.storageReads) {
      return Cause.DISK;
    }
    if (collections() != s.collections) {
      return Cause.GC;
    }
    if (s.usage.getLong(NVCSW_OFFSET) != s.voluntary) {
      return IO_ACCOUNTED ? Cause.WAITED : Cause.UNKNOWN;
    }
    return s.usage.getLong(NIVCSW_OFFSET) != s.involuntary ? Cause.PREEMPTED : Cause.RAN;
  }

  /** Blocks read from storage plus major faults (a mapped page read from storage). */
  private static long storageReads(Pointer usage) {
    return usage.getLong(INBLOCK_OFFSET) + usage.getLong(MAJFLT_OFFSET);
  }

  private long collections() {
    long n = 0;
    for (GarbageCollectorMXBean gc : collectors) {
      n += Math.max(0, gc.getCollectionCount());
    }
    return n;
  }

  private static Rusage load() {
    String arch = System.getProperty("os.arch", "");
    if (!System.getProperty("os.name", "").startsWith("Linux")
        || !(arch.equals("amd64") || arch.equals("x86_64") || arch.equals("aarch64"))) {
      return null;
    }
    try {
      return LibraryLoader.create(Rusage.class).load("c");
    } catch (Throwable t) { // LinkageError or a jnr failure: go without causes, never fail
      return null;
    }
  }

  /** libc's getrusage, through jnr-ffi (as {@link FdPassing}). */
  public interface Rusage {
    int getrusage(int who, Pointer usage);
  }
}
