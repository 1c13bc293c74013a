package io.scr.core.internal.net;

import io.scr.cache.Ticker;
import io.scr.core.stats.BackoffStatus;
import io.scr.core.stats.FailureClass;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Paths;
import java.nio.file.attribute.BasicFileAttributes;
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
 * <p><b>A new DataNode ends every backoff.</b> A failure remembers the socket file as it was (its
 * file key and modification time, or that it was missing). While the path backs off, {@link
 * #isBackingOff} looks at the file again, at most every {@value #PROBE_MILLIS} ms: once it is a
 * different file (the DataNode, or a new DataNode process, bound the socket again) every backoff of
 * the path ends and the next read asks it. A DataNode down for a rolling restart therefore comes
 * back to short-circuit within about {@value #PROBE_MILLIS} ms of binding its socket, however long
 * it was away (the doubled backoffs it met while down would otherwise last up to the maximum).
 * Paths that are not files on this host (tests) are never probed.
 *
 * <p>Concurrency: lock-free. {@link #isBackingOff} (called on every read) is a map lookup and
 * volatile reads; while backing off, one caller per {@value #PROBE_MILLIS} ms also stats the socket
 * file (a CAS on the probe deadline picks it). Concurrent failures of one path race benignly: each
 * sets the deadline from its own view of the consecutive count; the later write wins, and either
 * value is a valid backoff. Time comes from the injected {@link Ticker}.
 */
public final class PathBackoff {
  /** How often a backing-off path's socket file is looked at for a new DataNode. */
  static final long PROBE_MILLIS = 100;

  private static final long PROBE_NANOS = TimeUnit.MILLISECONDS.toNanos(PROBE_MILLIS);

  /** The identity of a socket file that does not exist. */
  private static final String MISSING = "missing";

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
        return !endedByANewSocket(path, s, now);
      }
    }
    return false;
  }

  /** Whether {@code failureClass} is backing off on {@code path} now. */
  public boolean isBackingOff(String path, FailureClass failureClass) {
    PathState s = paths.get(path);
    if (s == null) {
      return false;
    }
    long now = ticker.read();
    return now - s.classes[failureClass.ordinal()].untilNanos < 0
        && !endedByANewSocket(path, s, now);
  }

  /**
   * Whether the socket file was replaced since the last failure (then every backoff of the path is
   * ended here). Looks at the file at most once per {@link #PROBE_NANOS}, on one thread.
   */
  private boolean endedByANewSocket(String path, PathState s, long now) {
    Object before = s.socketAtFailure;
    long next = s.nextProbeNanos;
    if (before == null || now - next < 0 || !s.probeLock.compareAndSet(false, true)) {
      return false;
    }
    try {
      s.nextProbeNanos = now + PROBE_NANOS;
      Object current = socketIdentity(path);
      if (current == null || current.equals(MISSING) || current.equals(before)) {
        return false;
      }
      s.socketAtFailure = null; // until the next failure
      for (ClassState c : s.classes) {
        synchronized (c) {
          c.untilNanos = now;
          if (c.consecutive > 0) {
            c.lastReason = c.lastReason + " (ended early: the socket file was bound again)";
          }
        }
      }
      return true;
    } finally {
      s.probeLock.set(false);
    }
  }

  /**
   * The socket file's identity (file key and modification time), {@link #MISSING}, or null when
   * {@code path} cannot name a file here (then it is never probed).
   */
  static Object socketIdentity(String path) {
    try {
      BasicFileAttributes a =
          Files.readAttributes(
              Paths.get(path), BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      return a.fileKey() + "@" + a.lastModifiedTime();
    } catch (NoSuchFileException e) {
      return MISSING;
    } catch (IOException | InvalidPathException | SecurityException e) {
      return null;
    }
  }

  /** Records a failure; returns the backoff it started, in nanoseconds. */
  public long recordFailure(String path, FailureClass failureClass, String reason) {
    PathState s = state(path);
    s.socketAtFailure = socketIdentity(path);
    s.nextProbeNanos = ticker.read() + PROBE_NANOS;
    ClassState c = s.classes[failureClass.ordinal()];
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
          c.warned = false;
        }
      }
    }
  }

  /**
   * True for the first caller since {@code failureClass} last succeeded on {@code path} (or ever),
   * false for every other: lets a caller log a failure once per streak of consecutive failures
   * rather than on every retry, and again once the path worked in between.
   */
  public boolean firstWarningOfStreak(String path, FailureClass failureClass) {
    ClassState c = state(path).classes[failureClass.ordinal()];
    synchronized (c) {
      if (c.warned) {
        return false;
      }
      c.warned = true;
      return true;
    }
  }

  /** Records that a shared-memory request succeeded: the SHM consecutive count resets. */
  public void recordShmSuccess(String path) {
    PathState s = paths.get(path);
    if (s != null) {
      ClassState c = s.classes[FailureClass.SHM.ordinal()];
      synchronized (c) {
        c.consecutive = 0;
        c.warned = false;
      }
    }
  }

  /** A snapshot of every path's counters, for metrics. */
  public List<BackoffStatus> snapshot() {
    List<BackoffStatus> out = new ArrayList<>();
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
            new BackoffStatus(
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

    /** The socket file at the last failure ({@link #socketIdentity}); null: do not probe. */
    volatile Object socketAtFailure;

    volatile long nextProbeNanos;
    final java.util.concurrent.atomic.AtomicBoolean probeLock =
        new java.util.concurrent.atomic.AtomicBoolean();

    PathState() {
      for (FailureClass c : FailureClass.values()) {
        classes[c.ordinal()] = new ClassState(c);
      }
    }
  }

  private static final class ClassState {
    final FailureClass failureClass;
    final AtomicLong total = new AtomicLong();

    /**
     * Written by failures and by a probe that ends the backoff early; a race between the two is
     * benign (either value is a valid deadline).
     */
    volatile long untilNanos = Long.MIN_VALUE / 2;

    @com.google.errorprone.annotations.concurrent.GuardedBy("this")
    long consecutive;

    @com.google.errorprone.annotations.concurrent.GuardedBy("this")
    String lastReason;

    /** Whether this streak of failures was logged ({@link #firstWarningOfStreak}). */
    @com.google.errorprone.annotations.concurrent.GuardedBy("this")
    boolean warned;

    ClassState(FailureClass failureClass) {
      this.failureClass = failureClass;
    }
  }
}
