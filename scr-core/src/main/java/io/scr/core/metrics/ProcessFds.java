package io.scr.core.metrics;

import java.lang.management.ManagementFactory;
import java.lang.management.OperatingSystemMXBean;

/**
 * The process's open fd count and its {@code RLIMIT_NOFILE} soft limit, from the JVM's {@code
 * UnixOperatingSystemMXBean} (no native code). Both are -1 where the JVM cannot tell.
 *
 * <p>Thread-safety: stateless.
 */
public final class ProcessFds {
  private ProcessFds() {}

  /** Fds this process has open now, or -1 if unknown. */
  public static long openCount() {
    OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
    if (os instanceof com.sun.management.UnixOperatingSystemMXBean) {
      return ((com.sun.management.UnixOperatingSystemMXBean) os).getOpenFileDescriptorCount();
    }
    return -1;
  }

  /** The soft {@code RLIMIT_NOFILE} of this process ({@code ulimit -n}), or -1 if unknown. */
  public static long softLimit() {
    OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
    if (os instanceof com.sun.management.UnixOperatingSystemMXBean) {
      return ((com.sun.management.UnixOperatingSystemMXBean) os).getMaxFileDescriptorCount();
    }
    return -1;
  }
}
