package io.scr.core.internal.read;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.channels.FileChannel;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes replica channels immune to {@link Thread#interrupt()}.
 *
 * <p>A {@link FileChannel} is an {@code AbstractInterruptibleChannel}: interrupting a thread that
 * is inside {@code read} closes the channel, for every thread. One replica's channel is shared by
 * every lease of it, and HBase interrupts its handler threads, so one interrupted read would fail
 * the reads of every other thread of that replica and force a reopen. The JDK's own file channel
 * has {@code sun.nio.ch.FileChannelImpl.setUninterruptible()} (JDK 9 and later) for exactly this;
 * it is reachable when the JVM runs with {@code --add-exports java.base/sun.nio.ch=ALL-UNNAMED} or
 * {@code --add-opens java.base/sun.nio.ch=ALL-UNNAMED}, which the HBase and Spark launchers on JDK
 * 17 already pass. With it an interrupted reader's read completes (its interrupt status stays set
 * for its next blocking call) and the channel stays open.
 *
 * <p>Without it scr still works: the interrupted thread's read fails with {@code
 * ClosedByInterruptException}, the replica is replaced, and other readers that meet the closed
 * channel take a fresh lease. That costs one fd request per interrupt; the first time it happens a
 * WARN names the flag ({@link #noteInterruptClosedAChannel()}).
 *
 * <p>Probed once ({@link #isAvailable()}, {@link #unavailabilityCause()}). Thread-safe.
 */
final class UninterruptibleChannels {
  private static final Logger LOG = LoggerFactory.getLogger(UninterruptibleChannels.class);

  static final String FLAG = "--add-exports java.base/sun.nio.ch=ALL-UNNAMED";

  private static final Class<?> IMPL;
  private static final MethodHandle SET_UNINTERRUPTIBLE;
  private static final Throwable UNAVAILABILITY_CAUSE;
  private static final AtomicBoolean WARNED = new AtomicBoolean();

  static {
    Class<?> impl = null;
    MethodHandle handle = null;
    Throwable cause = null;
    try {
      impl = Class.forName("sun.nio.ch.FileChannelImpl");
      handle =
          MethodHandles.lookup()
              .findVirtual(impl, "setUninterruptible", MethodType.methodType(void.class))
              .asType(MethodType.methodType(void.class, FileChannel.class));
    } catch (ReflectiveOperationException | RuntimeException e) {
      cause = e;
    }
    IMPL = impl;
    SET_UNINTERRUPTIBLE = cause == null ? handle : null;
    UNAVAILABILITY_CAUSE = cause;
  }

  private UninterruptibleChannels() {}

  /** Whether replica channels are made uninterruptible in this JVM. */
  static boolean isAvailable() {
    return SET_UNINTERRUPTIBLE != null;
  }

  /** Why {@link #isAvailable()} is false (null when it is true). */
  static Throwable unavailabilityCause() {
    return UNAVAILABILITY_CAUSE;
  }

  /**
   * Makes {@code channel} uninterruptible if it is the JDK's file channel and the JVM allows it;
   * otherwise leaves it as it is. Returns whether it did.
   */
  static boolean apply(FileChannel channel) {
    MethodHandle h = SET_UNINTERRUPTIBLE;
    if (h == null || channel.getClass() != IMPL) {
      return false;
    }
    try {
      h.invokeExact(channel);
      return true;
    } catch (Throwable t) { // invokeExact declares Throwable; the method itself throws nothing
      return false;
    }
  }

  /**
   * Called when an interrupt closed a shared replica channel (only possible when {@link
   * #isAvailable()} is false): says so once, with the remedy.
   */
  static void noteInterruptClosedAChannel() {
    if (WARNED.compareAndSet(false, true)) {
      LOG.warn(
          "A Thread.interrupt() closed a short-circuit replica channel shared by other readers:"
              + " scr reopens the replica (one fd request per interrupt), but reads are not immune"
              + " to interrupts in this JVM ({}). Add {} to the JVM options (the HBase and Spark"
              + " launchers on JDK 17 pass --add-opens java.base/sun.nio.ch=ALL-UNNAMED, which also"
              + " works) to make them immune.",
          String.valueOf(UNAVAILABILITY_CAUSE),
          FLAG);
    }
  }
}
