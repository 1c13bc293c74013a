package io.scr.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.shim.ScrShimPlugin;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import io.scr.testing.ResourceSnapshot;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.net.SocketTimeoutException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.Sender;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.shortcircuit.ShortCircuitShm;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.thirdparty.protobuf.CodedInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.newsclub.net.unix.AFUNIXSocket;
import org.newsclub.net.unix.AFUNIXSocketAddress;

/**
 * Hostile input to the shim (scenario 8): a seeded generator of frames — valid requests with
 * mutated version, op, varint length, protobuf bytes, truncations, early closes and random ops in
 * sequence — against a live shim with block tokens on. After every frame the shim must still serve
 * a well-formed request; it may pass fds only for a well-formed op 87 that names an existing block
 * (and then only that block's files) or a well-formed op 89 (one memfd); and its connections,
 * segments and slots, and this process's fds and threads, return to the baseline.
 */
class ShimFuzzTest {
  static final int BLOCK = 64 * 1024;

  static {
    Faults.warmJvmSingletons();
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .blockSize(BLOCK)
          .mode(DataNodeMode.SHIM)
          .configure(c -> c.setBoolean("dfs.block.access.token.enable", true))
          .buildExtension();

  private static final Field FD_FIELD;

  static {
    try {
      FD_FIELD = FileDescriptor.class.getDeclaredField("fd");
      FD_FIELD.setAccessible(true);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  @Test
  void theShimSurvivesHostileFramesAndPassesFdsOnlyForTheNamedBlock() throws Exception {
    MiniDfs dfs = DFS.dfs();
    ScrShimPlugin shim = Faults.shim(dfs, 0);
    assertTrue(shim.awaitServing(30_000), "shim not serving: " + shim.failure());
    dfs.writeRandomFile("/fuzz/f", 2 * BLOCK, 8);
    LocatedBlock lb = dfs.fileSystem().getClient().getLocatedBlocks("/fuzz/f", 0).get(0);
    ExtendedBlock block = lb.getBlock();
    Token<BlockTokenIdentifier> token = lb.getBlockToken();
    String socket = dfs.socketPath(0);

    List<byte[]> seeds = new ArrayList<>();
    seeds.add(requestFds(block, token));
    ExtendedBlock missing = new ExtendedBlock(block.getBlockPoolId(), block.getBlockId() + 1000);
    missing.setGenerationStamp(block.getGenerationStamp());
    seeds.add(requestFds(missing, token));
    seeds.add(frame(s -> s.requestShortCircuitShm("fuzz")));
    seeds.add(
        frame(
            s ->
                s.releaseShortCircuitFds(
                    new ShortCircuitShm.SlotId(new ShortCircuitShm.ShmId(1, 2), 3))));

    ResourceSnapshot before = ResourceSnapshot.take();
    long seed = Long.getLong("scr.fuzz.seed", System.nanoTime());
    long millis = Long.getLong("scr.fuzz.millis", 15_000);
    System.out.println("fuzz seed " + seed + " (rerun with -Dscr.fuzz.seed=" + seed + ")");
    Random r = new Random(seed);
    long frames = 0;
    long fdsReceived = 0;
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    while (System.nanoTime() < deadline) {
      int inSequence = 1 + r.nextInt(3);
      try (AFUNIXSocket s = connect(socket)) {
        OutputStream out = s.getOutputStream();
        List<byte[]> sent = new ArrayList<>();
        for (int i = 0; i < inSequence; i++) {
          byte[] f = mutate(seeds.get(r.nextInt(seeds.size())), r);
          sent.add(f);
          try {
            out.write(f);
          } catch (IOException e) {
            break; // the shim closed on an earlier frame: allowed
          }
          frames++;
        }
        if (r.nextInt(4) != 0) { // else: early close without reading
          fdsReceived += drainAndCheckFds(s, sent);
        }
      }
      if (frames % 25 < inSequence) {
        assertServes(socket, block, token);
      }
    }
    assertServes(socket, block, token);
    System.out.printf("fuzz: %d frames, %d fds received and checked%n", frames, fdsReceived);

    Faults.await(
        "the shim to drop every fuzz connection, segment and slot",
        Duration.ofSeconds(30),
        () -> {
          Map<String, Long> c = shim.counters();
          return Faults.counter(c, "live.connections") == 0
              && Faults.counter(c, "live.segments") == 0
              && Faults.counter(c, "live.slots") == 0;
        });
    // fds into the cluster's files and memfds; the shim's own pool threads start on demand and
    // end with the DataNode (the fixture checks that after the class).
    List<String> leaks = Faults.scrLeaks(before, dfs, Duration.ofSeconds(20));
    assertTrue(leaks.isEmpty(), "left behind: " + leaks);
    assertTrue(frames > 100, "too few frames: " + frames);
  }

  @Test
  void forgedAndMissingTokensGetNoFds() throws Exception {
    MiniDfs dfs = DFS.dfs();
    assertTrue(Faults.shim(dfs, 0).awaitServing(30_000));
    dfs.writeRandomFile("/fuzz/token", BLOCK, 9);
    LocatedBlock lb = dfs.fileSystem().getClient().getLocatedBlocks("/fuzz/token", 0).get(0);
    Token<BlockTokenIdentifier> real = lb.getBlockToken();
    Token<BlockTokenIdentifier> forged =
        new Token<>(
            real.getIdentifier(), flipped(real.getPassword()), real.getKind(), real.getService());
    for (Token<BlockTokenIdentifier> bad : List.of(forged, new Token<BlockTokenIdentifier>())) {
      try (AFUNIXSocket s = connect(dfs.socketPath(0))) {
        s.getOutputStream().write(requestFds(lb.getBlock(), bad));
        List<FileDescriptor> fds = drain(s);
        assertEquals(0, fds.size(), "fds passed for a bad token");
      }
    }
    assertServes(dfs.socketPath(0), lb.getBlock(), real);
  }

  private static byte[] flipped(byte[] b) {
    byte[] c = b.clone();
    if (c.length > 0) {
      c[0] ^= 1;
    }
    return c;
  }

  interface SenderCall {
    void send(Sender s) throws IOException;
  }

  static byte[] frame(SenderCall call) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    call.send(new Sender(new DataOutputStream(bytes)));
    return bytes.toByteArray();
  }

  static byte[] requestFds(ExtendedBlock block, Token<BlockTokenIdentifier> token)
      throws IOException {
    return frame(s -> s.requestShortCircuitFds(block, token, null, 1, false));
  }

  /** One mutation (or none) of a valid frame {@code [00 1C][op][varint len][proto]}. */
  static byte[] mutate(byte[] valid, Random r) {
    byte[] f = valid.clone();
    switch (r.nextInt(9)) {
      case 0:
        return f; // well-formed
      case 1: // version
        f[r.nextInt(2)] = (byte) r.nextInt(256);
        return f;
      case 2: // op (never 127: the extension op has its own tests in the shim module)
        f[2] = (byte) r.nextInt(127);
        return f;
      case 3: // varint length: too long, huge or short
        {
          byte[] g = Arrays.copyOf(f, f.length + 5);
          System.arraycopy(f, 3, g, 8, f.length - 3);
          for (int i = 3; i < 8; i++) {
            g[i] = (byte) (0x80 | r.nextInt(256));
          }
          if (r.nextBoolean()) {
            g[7] = (byte) r.nextInt(128); // a terminated 5-byte varint: an oversized length
          }
          return g;
        }
      case 4: // protobuf bytes
        for (int n = 1 + r.nextInt(4); n > 0; n--) {
          int i = 4 + r.nextInt(Math.max(1, f.length - 4));
          f[Math.min(i, f.length - 1)] ^= (byte) (1 << r.nextInt(8));
        }
        return f;
      case 5: // truncation
        return Arrays.copyOf(f, r.nextInt(f.length));
      case 6: // trailing garbage
        {
          byte[] g = Arrays.copyOf(f, f.length + 1 + r.nextInt(64));
          for (int i = f.length; i < g.length; i++) {
            g[i] = (byte) r.nextInt(256);
          }
          return g;
        }
      case 7: // random bytes
        {
          byte[] g = new byte[1 + r.nextInt(128)];
          r.nextBytes(g);
          return g;
        }
      default: // a valid prefix with a random tail
        {
          int keep = 3 + r.nextInt(Math.max(1, f.length - 3));
          for (int i = Math.min(keep, f.length); i < f.length; i++) {
            f[i] = (byte) r.nextInt(256);
          }
          return f;
        }
    }
  }

  static AFUNIXSocket connect(String path) throws IOException {
    AFUNIXSocket s = AFUNIXSocket.newInstance();
    s.setAncillaryReceiveBufferSize(4096);
    s.connect(AFUNIXSocketAddress.of(Paths.get(path)), 5_000);
    s.setSoTimeout(300);
    return s;
  }

  /** Reads until EOF or a quiet period; returns (and owns until closed) every fd received. */
  static List<FileDescriptor> drain(AFUNIXSocket s) throws IOException {
    List<FileDescriptor> fds = new ArrayList<>();
    InputStream in;
    try {
      in = s.getInputStream();
    } catch (IOException e) {
      return fds; // a write already failed (the shim closed) and junixsocket closed the socket
    }
    byte[] buf = new byte[4096];
    while (true) {
      int n;
      try {
        n = in.read(buf);
      } catch (SocketTimeoutException e) {
        n = -1;
      } catch (IOException e) {
        n = -1; // reset by the shim: as good as EOF here
      }
      FileDescriptor[] got = s.getReceivedFileDescriptors();
      if (got != null) {
        fds.addAll(Arrays.asList(got));
      }
      if (n < 0) {
        return fds;
      }
    }
  }

  /**
   * Checks every fd the shim sent after {@code sent}: a block file only if the byte stream holds a
   * well-formed op 87 naming that block, a memfd only if it holds a well-formed op 89. The shim
   * reads the connection as one stream, so a frame may complete one that an earlier, truncated
   * frame started: the frames are parsed from the concatenation, as the shim parses them.
   */
  private static int drainAndCheckFds(AFUNIXSocket s, List<byte[]> sent) throws Exception {
    List<FileDescriptor> fds = drain(s);
    try {
      if (fds.isEmpty()) {
        return 0;
      }
      ByteArrayOutputStream all = new ByteArrayOutputStream();
      for (byte[] f : sent) {
        all.write(f);
      }
      Set<Long> named = new HashSet<>();
      boolean shmAsked = parseFrames(all.toByteArray(), named);
      for (FileDescriptor fd : fds) {
        String target =
            Files.readSymbolicLink(Paths.get("/proc/self/fd/" + FD_FIELD.getInt(fd))).toString();
        if (target.contains("blk_")) {
          assertTrue(
              named.stream()
                  .anyMatch(
                      id ->
                          target.contains("blk_" + id + "_")
                              || target.endsWith("blk_" + id)
                              || target.contains("blk_" + id + " ")),
              "fd for " + target + ", but the frames named only " + named);
        } else {
          assertTrue(
              target.contains("memfd") || target.contains("/dev/shm"), "unexpected fd " + target);
          assertTrue(shmAsked, "a segment fd although no well-formed op 89 was sent");
        }
      }
    } finally {
      for (FileDescriptor fd : fds) {
        new FileInputStream(fd).close();
      }
    }
    return fds.size();
  }

  /**
   * Parses the leading well-formed frames of a connection's bytes as the shim does (version 28, op
   * 87/88/89, a varint length of at most 5 bytes, that many body bytes); stops at the first frame
   * it would reject. Adds the block ids of op 87 requests to {@code named}; returns whether an op
   * 89 was among them.
   */
  private static boolean parseFrames(byte[] bytes, Set<Long> named) {
    boolean shm = false;
    CodedInputStream in = CodedInputStream.newInstance(bytes);
    try {
      while (!in.isAtEnd()) {
        int version = (in.readRawByte() & 0xff) << 8 | (in.readRawByte() & 0xff);
        int op = in.readRawByte() & 0xff;
        if (version != 28 || op < 87 || op > 89) {
          return shm;
        }
        int len = in.readRawVarint32();
        byte[] body = in.readRawBytes(len);
        if (op == 87) {
          try {
            named.add(
                OpRequestShortCircuitAccessProto.parseFrom(body)
                    .getHeader()
                    .getBlock()
                    .getBlockId());
          } catch (IOException e) {
            return shm; // garbage protobuf: the shim closes the connection
          }
        } else if (op == 89) {
          shm = true;
        }
      }
    } catch (IOException e) {
      // truncated: the shim waits for more bytes, then sees EOF
    }
    return shm;
  }

  /** A well-formed op 87 on a fresh connection gets SUCCESS and exactly the block's two fds. */
  private static void assertServes(
      String socket, ExtendedBlock block, Token<BlockTokenIdentifier> token) throws Exception {
    try (AFUNIXSocket s = connect(socket)) {
      s.setSoTimeout(2_000);
      s.getOutputStream().write(requestFds(block, token));
      List<FileDescriptor> fds = drainFds(s, 2);
      try {
        assertEquals(2, fds.size(), "the shim stopped serving well-formed requests");
        for (FileDescriptor fd : fds) {
          String target =
              Files.readSymbolicLink(Paths.get("/proc/self/fd/" + FD_FIELD.getInt(fd))).toString();
          assertTrue(target.contains("blk_" + block.getBlockId()), target);
        }
      } finally {
        for (FileDescriptor fd : fds) {
          new FileInputStream(fd).close();
        }
      }
    }
  }

  /** Reads until {@code want} fds arrived, EOF or the socket timeout. */
  private static List<FileDescriptor> drainFds(AFUNIXSocket s, int want) throws IOException {
    List<FileDescriptor> fds = new ArrayList<>();
    InputStream in = s.getInputStream();
    byte[] one = new byte[1];
    while (fds.size() < want) {
      int n;
      try {
        n = in.read(one);
      } catch (SocketTimeoutException e) {
        return fds;
      }
      FileDescriptor[] got = s.getReceivedFileDescriptors();
      if (got != null) {
        fds.addAll(Arrays.asList(got));
      }
      if (n < 0) {
        return fds;
      }
    }
    return fds;
  }
}
