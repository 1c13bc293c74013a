package io.scr.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ResourceSnapshotTest {
  @Test
  void reportsAnFdOpenedAfterTheSnapshotUntilItIsClosed(@TempDir Path dir) throws Exception {
    Path file = Files.writeString(dir.resolve("held"), "x");
    ResourceSnapshot before = ResourceSnapshot.take();
    try (FileInputStream in = new FileInputStream(file.toFile())) {
      List<String> leaks = before.leakedSince(Duration.ZERO, List.of(dir));
      assertEquals(1, leaks.size(), leaks.toString());
      assertTrue(leaks.get(0).endsWith(file.toString()), leaks.toString());
    }
    assertEquals(List.of(), before.leakedSince(Duration.ofSeconds(5), List.of(dir)));
  }

  @Test
  void reportsAThreadStartedAfterTheSnapshotUntilItEnds() throws Exception {
    ResourceSnapshot before = ResourceSnapshot.take();
    CountDownLatch release = new CountDownLatch(1);
    Thread t =
        new Thread(
            () -> {
              try {
                release.await();
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            },
            "scr-leak-probe");
    t.start();
    List<String> leaks = before.leakedSince(Duration.ZERO, List.of(Path.of("/nonexistent")));
    assertTrue(leaks.stream().anyMatch(l -> l.contains("scr-leak-probe")), leaks.toString());
    release.countDown();
    t.join();
    assertEquals(List.of(), before.leakedSince(Duration.ofSeconds(5), List.of(Path.of("/none"))));
  }
}
