package io.scr.core.internal.replica;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.cache.Ticker;
import io.scr.core.FallbackReason;
import io.scr.core.internal.net.DomainSocketPool;
import io.scr.core.internal.net.PathBackoff;
import io.scr.core.stats.FailureClass;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The closed gate: once {@link ReplicaManager#close()} has begun, nothing creates an endpoint (and
 * with it slot-pool threads, segments or sockets), and a load counts as {@link
 * FallbackReason#CLOSED}.
 */
class ReplicaManagerCloseTest {
  @TempDir Path dir;

  private final List<FallbackReason> fallbacks = new CopyOnWriteArrayList<>();

  private ReplicaManager manager() {
    Map<FailureClass, Integer> base = new EnumMap<>(FailureClass.class);
    for (FailureClass c : FailureClass.values()) {
      base.put(c, 1);
    }
    return ReplicaManager.newBuilder(
            "close-test",
            DomainSocketPool.newBuilder().build(),
            new PathBackoff(Ticker.systemTicker(), base, 10))
        .fallbacks(fallbacks::add)
        .build();
  }

  private static List<String> scrSlotThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(Thread::isAlive)
        .map(Thread::getName)
        .filter(n -> n.startsWith("scr-slots-") && n.endsWith("close-test"))
        .collect(Collectors.toList());
  }

  @Test
  void noEndpointIsCreatedAfterClose() throws Exception {
    String path = Files.createDirectories(dir.resolve("sock")).resolve("dn.sock").toString();
    ReplicaManager m = manager();
    m.close();

    IOException e = assertThrows(IOException.class, () -> m.endpoint(path));
    assertTrue(e.getMessage().contains("closed"), e.getMessage());
    assertTrue(scrSlotThreads().isEmpty(), "no slot-pool threads: " + scrSlotThreads());
  }

  @Test
  void anEndpointOpenedBeforeCloseMakesNoPoolAfterIt() throws Exception {
    String path = Files.createDirectories(dir.resolve("sock")).resolve("dn.sock").toString();
    ReplicaManager m = manager();
    DataNodeEndpoint endpoint = m.endpoint(path);
    assertNotNull(endpoint);
    m.close();

    assertNull(endpoint.allocateSlot(), "a closed endpoint hands out no slot");
    assertNull(endpoint.slotPoolOrNull(), "and builds no pool (no threads)");
    assertTrue(scrSlotThreads().isEmpty(), "no slot-pool threads: " + scrSlotThreads());
  }

  @Test
  void aLeaseAfterCloseIsAClosedFallback() throws Exception {
    String path = Files.createDirectories(dir.resolve("sock")).resolve("dn.sock").toString();
    ReplicaManager m = manager();
    m.close();

    assertNull(
        m.source().lease(new ExtendedBlock("BP-1", 1, 10, 1001), null, path, "/f", null, null));
    assertEquals(List.of(FallbackReason.CLOSED), fallbacks);
    assertTrue(scrSlotThreads().isEmpty(), "no slot-pool threads: " + scrSlotThreads());
  }
}
