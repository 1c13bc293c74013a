package io.scr.core.internal.read;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.Random;
import java.util.zip.CRC32;
import java.util.zip.CRC32C;
import java.util.zip.Checksum;
import org.junit.jupiter.api.Test;

/** The combined chunk CRCs equal java.util.zip's CRC of the whole span, for both polynomials. */
class ChunkChecksumsCombineTest {
  private static int crc(int type, byte[] data, int off, int len) {
    Checksum c = type == MetaHeader.TYPE_CRC32C ? new CRC32C() : new CRC32();
    c.update(data, off, len);
    return (int) c.getValue();
  }

  @Test
  void chunkCrcsFoldIntoTheCrcOfTheWholeSpan() {
    Random rnd = new Random(23);
    for (int type : new int[] {MetaHeader.TYPE_CRC32C, MetaHeader.TYPE_CRC32}) {
      for (int bpc : new int[] {512, 1024, 100, 1}) {
        ChunkChecksums combiner = ChunkChecksums.of(type, bpc);
        assertEquals(bpc, combiner.chunkBytes());
        for (int round = 0; round < 40; round++) {
          byte[] data = new byte[1 + rnd.nextInt(bpc * 20)];
          rnd.nextBytes(data);
          int folded = crc(type, data, 0, Math.min(bpc, data.length));
          for (int off = bpc; off < data.length; off += bpc) {
            int len = Math.min(bpc, data.length - off);
            int next = crc(type, data, off, len);
            folded =
                len == bpc
                    ? combiner.appendChunk(folded, next)
                    : combiner.append(folded, next, len);
          }
          assertEquals(crc(type, data, 0, data.length), folded, type + "/" + bpc + " " + round);
        }
      }
    }
  }

  @Test
  void anySplitCombinesAndOneFlippedBitIsSeen() {
    Random rnd = new Random(29);
    byte[] data = new byte[70_000];
    rnd.nextBytes(data);
    for (int type : new int[] {MetaHeader.TYPE_CRC32C, MetaHeader.TYPE_CRC32}) {
      ChunkChecksums combiner = ChunkChecksums.of(type, 512);
      for (int i = 0; i < 200; i++) {
        int split = rnd.nextInt(data.length + 1);
        int a = crc(type, data, 0, split);
        int b = crc(type, data, split, data.length - split);
        assertEquals(crc(type, data, 0, data.length), combiner.append(a, b, data.length - split));
      }
      int whole = crc(type, data, 0, data.length);
      byte[] flipped = data.clone();
      flipped[rnd.nextInt(flipped.length)] ^= (byte) (1 << rnd.nextInt(8));
      assertNotEquals(whole, crc(type, flipped, 0, flipped.length));
    }
    assertSame(
        ChunkChecksums.of(MetaHeader.TYPE_CRC32C, 512),
        ChunkChecksums.of(MetaHeader.TYPE_CRC32C, 512),
        "shared for the default chunk size");
  }
}
