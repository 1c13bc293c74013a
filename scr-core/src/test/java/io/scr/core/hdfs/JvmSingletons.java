package io.scr.core.hdfs;

import io.scr.shm.ShmSupport;
import java.util.List;
import java.util.stream.Collectors;
import org.newsclub.net.unix.AFUNIXSocket;

/** Test helper: creates process-wide singletons up front so leak checks see only real leaks. */
final class JvmSingletons {
  private JvmSingletons() {}

  static void initialize() {
    try {
      ShmSupport.isAvailable();
      Class.forName("io.scr.shm.Segment", true, JvmSingletons.class.getClassLoader());
      Class.forName("io.scr.shm.SharedMemoryFd", true, JvmSingletons.class.getClassLoader());
      AFUNIXSocket.newInstance().close();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** Drops the snapshot's own {@code /proc/self/fd} listing fds from a leak list. */
  static List<String> withoutFdListing(List<String> leaks) {
    String self = "/proc/" + ProcessHandle.current().pid() + "/fd";
    return leaks.stream().filter(l -> !l.endsWith(self)).collect(Collectors.toList());
  }
}
