package io.scr.core.internal.replica;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.junit.jupiter.api.Test;

class AbsentReplicasTest {
  private static final String DN0 = "/run/dn0.sock";
  private static final String DN1 = "/run/dn1.sock";

  private final AtomicLong now = new AtomicLong(1_000_000_000L);

  private AbsentReplicas memory(int capacity, long expirySeconds) {
    return AbsentReplicas.newBuilder()
        .capacity(capacity)
        .expiry(expirySeconds, TimeUnit.SECONDS)
        .ticker(now::get)
        .build();
  }

  private static ExtendedBlock block(long id, long gs) {
    return new ExtendedBlock("BP-1", id, 0, gs);
  }

  @Test
  void aRememberedRefusalIsKeyedByBlockGenerationStampAndDataNode() {
    AbsentReplicas m = memory(64, 60);
    m.remember(block(7, 1001), DN0);
    assertTrue(m.isAbsent(block(7, 1001), DN0));
    assertFalse(m.isAbsent(block(7, 1001), DN1), "another DataNode was never asked");
    assertFalse(m.isAbsent(block(7, 1002), DN0), "a new generation stamp is a new replica");
    assertFalse(m.isAbsent(block(8, 1001), DN0));
    assertFalse(m.isAbsent(new ExtendedBlock("BP-2", 7, 0, 1001), DN0), "another block pool");
    assertEquals(1, m.rememberedCount());
    assertEquals(1, m.avoidedCount(), "only the true answer avoided a request");
  }

  @Test
  void anEntryExpiresSoAReplicaMovedHereIsReadLocallyAgain() {
    AbsentReplicas m = memory(64, 60);
    m.remember(block(7, 1001), DN0);
    now.addAndGet(TimeUnit.SECONDS.toNanos(59));
    assertTrue(m.isAbsent(block(7, 1001), DN0));
    now.addAndGet(TimeUnit.SECONDS.toNanos(1));
    assertFalse(m.isAbsent(block(7, 1001), DN0), "after the expiry the DataNode is asked again");
    assertEquals(0, m.size());
  }

  @Test
  void neverHoldsMoreThanItsCapacity() {
    AbsentReplicas m = memory(256, 60);
    assertEquals(256, m.capacity());
    for (long id = 0; id < 10_000; id++) {
      m.remember(block(id, 1), DN0);
      now.incrementAndGet(); // refusals arrive one after another
    }
    assertTrue(m.size() <= 256, "held " + m.size());
    // The most recent refusals are kept (each evicts the oldest of its set of four).
    for (long id = 10_000 - 16; id < 10_000; id++) {
      assertTrue(m.isAbsent(block(id, 1), DN0), "recent refusal " + id + " kept");
    }
  }

  @Test
  void aWorkingSetBelowCapacityIsKeptWhole() {
    AbsentReplicas m = memory(8192, 60);
    for (long id = 0; id < 2048; id++) {
      m.remember(block(1_073_741_825L + id, 1001 + id % 3), DN0);
    }
    int kept = 0;
    for (long id = 0; id < 2048; id++) {
      if (m.isAbsent(block(1_073_741_825L + id, 1001 + id % 3), DN0)) {
        kept++;
      }
    }
    // 2048 keys in 2048 sets of four: only the few sets given a fifth key lose one.
    assertTrue(kept >= 2000, "kept " + kept + " of 2048");
  }

  @Test
  void rememberingAgainRefreshesTheEntryInsteadOfTakingAnotherSlot() {
    AbsentReplicas m = memory(4, 60); // one set of four
    m.remember(block(1, 1), DN0);
    for (int i = 0; i < 10; i++) {
      m.remember(block(2, 1), DN0);
    }
    assertTrue(m.isAbsent(block(1, 1), DN0), "repeats of one key did not evict another key");
    assertEquals(2, m.size());
  }

  @Test
  void concurrentReadersAndWritersSeeOnlyWhatWasRemembered() throws Exception {
    AbsentReplicas m = memory(1024, 60);
    int threads = 4;
    CountDownLatch start = new CountDownLatch(1);
    List<Thread> workers = new ArrayList<>();
    List<Throwable> errors = new java.util.concurrent.CopyOnWriteArrayList<>();
    for (int t = 0; t < threads; t++) {
      final int me = t;
      Thread w =
          new Thread(
              () -> {
                try {
                  start.await();
                  for (long id = 0; id < 20_000; id++) {
                    // Thread t remembers ids = t mod 4 on DN0 only; nobody remembers DN1.
                    if (id % threads == me) {
                      m.remember(block(id, 5), DN0);
                    }
                    if (m.isAbsent(block(id, 5), DN1)) {
                      throw new AssertionError("DN1 never refused " + id);
                    }
                  }
                } catch (Throwable e) {
                  errors.add(e);
                }
              });
      w.start();
      workers.add(w);
    }
    start.countDown();
    for (Thread w : workers) {
      w.join(TimeUnit.SECONDS.toMillis(60));
    }
    assertTrue(errors.isEmpty(), errors.toString());
    assertTrue(m.size() <= 1024);
    assertEquals(20_000, m.rememberedCount());
  }
}
