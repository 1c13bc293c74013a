package io.scr.testing;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ShimModeTest {
  @Test
  void shimModeWithoutTheShimOnTheClasspathSaysWhatIsMissing() {
    IllegalStateException e =
        assertThrows(
            IllegalStateException.class,
            () -> MiniDfs.builder().mode(DataNodeMode.SHIM).start().close());
    assertTrue(e.getMessage().contains("scr-datanode-shim"), e.getMessage());
  }

  @Test
  void rejectsBlockSizesHdfsWouldRefuse() {
    assertThrows(IllegalArgumentException.class, () -> MiniDfs.builder().blockSize(1000));
    assertThrows(IllegalArgumentException.class, () -> MiniDfs.builder().dataNodes(0));
  }
}
