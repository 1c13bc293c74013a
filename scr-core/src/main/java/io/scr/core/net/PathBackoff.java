package io.scr.core.net;

import io.scr.cache.Ticker;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Per socket path, per {@link FailureClass}: whether the path is backing off, how often each class
 * failed, and the last reason, for metrics and {@code scr doctor}. A failure backs the path off for
 * the class's base duration, doubled for each consecutive failure of that class up to the maximum;
 * a success clears the consecutive counts (not the totals). Never a silent long blackout: the
 * longest backoff is the configured maximum (60 s by default, against stock's 600 s).
 *
 * <p>Concurrency: lock-free. {@link #isBackingOff} (called on every read) is a map lookup and
 * volatile reads. Concurrent failures of one path race benignly: each sets the deadline from its
 * own view of the consecutive count; the later write wins, and either value is a valid backoff.
 * Time comes from the injected {@link Ticker}.
 */
public final class PathBackoff {
  private final Ticker ticker;
  private final EnumMap<FailureClass, Long> baseNanos;
  private final long maxNanos;
  private final ConcurrentHashMap<String, PathState> paths = new ConcurrentHashMap<>();

  /**
   * @param baseSeconds the base backoff of each class (every class must be present; 0 disables
   *     backoff for that class)
   * @param maxSeconds upper bound of any backoff
   */
  public PathBackoff(Ticker ticker, Map<FailureClass, Integer> baseSeconds, int maxSeconds) {
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.baseNanos = new EnumMap<>(FailureClass.class);
    for (FailureClass c : FailureClass.values()) {
      Integer s = baseSeconds.get(c);
      if (s == null || s < 0) {
        throw new IllegalArgumentException("backoff for " + c + " must be >= 0 seconds: " + s);
      }
      baseNanos.put(c, TimeUnit.SECONDS.toNanos(s));
    }
    if (maxSeconds < 0) {
      throw new IllegalArgumentException("maximum backoff must be >= 0 seconds: " + maxSeconds);
    }
    this.maxNanos = TimeUnit.SECONDS.toNanos(maxSeconds);
  }

  /** Whether reads should skip {@code path} now (a path-disabling class is backing off). */
  public boolean isBackingOff(String path) {
    PathState s = paths.get(path);
    if (s == null) {
      return false;
    }
    long now = ticker.read();
    for (ClassState c : s.classes) {
      if (c.failureClass.disablesPath() && now - c.untilNanos < 0) {
        return true;
      }
    }
    return false;
  }

  /** Whether {@code failureClass} is backing off on {@code path} now. */
  public boolean isBackingOff(String path, FailureClass failureClass) {
    PathState s = paths.get(path);
    return s != null && ticker.read() - s.classes[failureClass.ordinal()].untilNanos < 0;
  }

  /** Records a failure; returns the backoff it started, in nanoseconds. */
  public long recordFailure(String path, FailureClass failureClass, String reason) {
    ClassState c = state(path).classes[failureClass.ordinal()];
    long base = baseNanos.get(failureClass);
    long consecutive;
    synchronized (c) {
      consecutive = ++c.consecutive;
      c.lastReason = reason;
    }
    c.total.incrementAndGet();
    long backoff = base;
    for (long i = 1; i < consecutive && backoff < maxNanos; i++) {
      backoff *= 2;
    }
    backoff = Math.min(backoff, maxNanos);
    c.untilNanos = ticker.read() + backoff;
    return backoff;
  }

  /** Records a success of the whole exchange: consecutive failures of every class reset. */
  public void recordSuccess(String path) {
    PathState s = paths.get(path);
    if (s == null) {
      return;
    }
    for (ClassState c : s.classes) {
      if (c.failureClass != FailureClass.SHM) {
        synchronized (c) {
          c.consecutive = 0;
        }
      }
    }
  }

  /** Records that a shared-memory request succeeded: the SHM consecutive count resets. */
  public void recordShmSuccess(String path) {
    PathState s = paths.get(path);
    if (s != null) {
      ClassState c = s.classes[FailureClass.SHM.ordinal()];
      synchronized (c) {
        c.consecutive = 0;
      }
    }
  }

  /** A snapshot of every path's counters, for metrics. */
  public List<Status> snapshot() {
    List<Status> out = new ArrayList<>();
    long now = ticker.read();
    for (Map.Entry<String, PathState> e : paths.entrySet()) {
      for (ClassState c : e.getValue().classes) {
        String reason;
        long consecutive;
        synchronized (c) {
          reason = c.lastReason;
          consecutive = c.consecutive;
        }
        out.add(
            new Status(
                e.getKey(),
                c.failureClass,
                c.total.get(),
                consecutive,
                Math.max(0, c.untilNanos - now),
                reason));
      }
    }
    return Collections.unmodifiableList(out);
  }

  private PathState state(String path) {
    return paths.computeIfAbsent(path, p -> new PathState());
  }

  private static final class PathState {
    final ClassState[] classes = new ClassState[FailureClass.values().length];

    PathState() {
      for (FailureClass c : FailureClass.values()) {
        classes[c.ordinal()] = new ClassState(c);
      }
    }
  }

  private static final class ClassState {
    final FailureClass failureClass;
    final AtomicLong total = new AtomicLong();
    volatile long untilNanos = Long.MIN_VALUE / 2;

    @com.google.errorprone.annotations.concurrent.GuardedBy("this")
    long consecutive;

    @com.google.errorprone.annotations.concurrent.GuardedBy("this")
    String lastReason;

    ClassState(FailureClass failureClass) {
      this.failureClass = failureClass;
    }
  }

  /** One path's counters for one failure class. Immutable. */
  public static final class Status {
    private final String path;
    private final FailureClass failureClass;
    private final long failures;
    private final long consecutiveFailures;
    private final long remainingBackoffNanos;
    private final String lastReason;

    Status(
        String path,
        FailureClass failureClass,
        long failures,
        long consecutiveFailures,
        long remainingBackoffNanos,
        String lastReason) {
      this.path = path;
      this.failureClass = failureClass;
      this.failures = failures;
      this.consecutiveFailures = consecutiveFailures;
      this.remainingBackoffNanos = remainingBackoffNanos;
      this.lastReason = lastReason;
    }

    /** The socket path. */
    public String path() {
      return path;
    }

    /** The failure class. */
    public FailureClass failureClass() {
      return failureClass;
    }

    /** Failures of this class since start. */
    public long failures() {
      return failures;
    }

    /** Failures of this class since the last success. */
    public long consecutiveFailures() {
      return consecutiveFailures;
    }

    /** Nanoseconds until the backoff ends; 0 when not backing off. */
    public long remainingBackoffNanos() {
      return remainingBackoffNanos;
    }

    /** The last failure's reason, or null if none. */
    public String lastReason() {
      return lastReason;
    }

    @Override
    public String toString() {
      return path
          + " "
          + failureClass
          + ": failures="
          + failures
          + " consecutive="
          + consecutiveFailures
          + " backoffRemainingMs="
          + TimeUnit.NANOSECONDS.toMillis(remainingBackoffNanos)
          + (lastReason == null ? "" : " last=" + lastReason);
    }
  }
}
