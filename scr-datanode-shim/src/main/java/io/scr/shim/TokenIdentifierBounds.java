package io.scr.shim;

/**
 * Checks the length prefixes of a block token identifier against the identifier's own size before
 * Hadoop parses it. {@code BlockTokenIdentifier.readFieldsLegacy} allocates every string, array and
 * the handshake secret at the size its prefix claims ({@code new byte[length]}, {@code new
 * StorageType[length]}) before reading a byte of it, so a forged identifier of a few bytes claiming
 * 2 GiB makes a DataNode thread throw {@code OutOfMemoryError} (or, below the heap size, retain
 * that much memory per request). A prefix that claims more bytes than remain can only fail later
 * with an {@code EOFException}; refusing it here costs nothing a valid token could need.
 *
 * <p>The protobuf form (first byte positive) needs no check: protobuf bounds every length by the
 * bytes actually present. Malformations that allocate nothing (a truncated mandatory field, a mode
 * count out of range) are left to Hadoop, which reports them as it does for stock.
 *
 * <p>Stateless and thread-safe.
 */
final class TokenIdentifierBounds {
  private TokenIdentifierBounds() {}

  /** Null when Hadoop may parse {@code id}, else why the identifier is refused. */
  static String problem(byte[] id) {
    if (id == null || id.length == 0 || id[0] > 0) {
      return null;
    }
    Cursor c = new Cursor(id);
    try {
      c.vlong(); // expiry date
      c.vlong(); // key id
      c.string4("user id");
      c.string4("block pool id");
      c.vlong(); // block id
      long modes = c.vlong();
      if (modes < 0 || modes > 3) {
        return null; // readVIntInRange refuses it without allocating
      }
      for (long i = 0; i < modes; i++) {
        c.textString("access mode");
      }
      // From here a missing field (an older NameNode) is an accepted EOF in Hadoop.
      long types = c.vlong();
      c.count(types, 1, "storage types");
      for (long i = 0; i < types; i++) {
        c.textString("storage type");
      }
      long ids = c.vlong();
      c.count(ids, 4, "storage ids");
      for (long i = 0; i < ids; i++) {
        c.string4("storage id");
      }
      long handshake = c.vlong();
      c.count(handshake, 1, "handshake secret");
      return null;
    } catch (Truncated e) {
      return null; // Hadoop reports (or tolerates) the EOF itself; nothing large was claimed
    } catch (Oversized e) {
      return "Block token identifier claims " + e.getMessage() + " in " + id.length + " bytes";
    }
  }

  private static final class Cursor {
    private final byte[] b;
    private int pos;

    Cursor(byte[] b) {
      this.b = b;
    }

    int remaining() {
      return b.length - pos;
    }

    byte next() throws Truncated {
      if (pos >= b.length) {
        throw new Truncated();
      }
      return b[pos++];
    }

    /** WritableUtils.readVLong. */
    long vlong() throws Truncated {
      byte first = next();
      if (first >= -112) {
        return first;
      }
      boolean negative = first < -120;
      int size = negative ? -119 - first : -111 - first;
      long v = 0;
      for (int i = 0; i < size - 1; i++) {
        v = (v << 8) | (next() & 0xff);
      }
      return negative ? ~v : v;
    }

    /** {@code count} items of at least {@code minBytes} each must fit in what remains. */
    void count(long count, int minBytes, String what) throws Oversized {
      if (count > 0 && count > remaining() / minBytes) {
        throw new Oversized(count + " " + what);
      }
    }

    /** WritableUtils.readString: a 4-byte length (-1 for null), then that many bytes. */
    void string4(String what) throws Truncated, Oversized {
      int length = 0;
      for (int i = 0; i < 4; i++) {
        length = (length << 8) | (next() & 0xff);
      }
      if (length < -1) {
        throw new Oversized("a negative length for the " + what);
      }
      skip(Math.max(length, 0), what);
    }

    /** Text.readString: a vint length, then that many bytes. */
    void textString(String what) throws Truncated, Oversized {
      long length = vlong();
      if (length < 0) {
        return; // readVIntInRange refuses it without allocating
      }
      skip(length, what);
    }

    void skip(long length, String what) throws Truncated, Oversized {
      if (length > remaining()) {
        throw new Oversized(length + " bytes for the " + what);
      }
      pos += (int) length;
    }
  }

  private static final class Truncated extends Exception {
    private static final long serialVersionUID = 1L;

    Truncated() {
      super(null, null, false, false);
    }
  }

  private static final class Oversized extends Exception {
    private static final long serialVersionUID = 1L;

    Oversized(String what) {
      super(what, null, false, false);
    }
  }
}
