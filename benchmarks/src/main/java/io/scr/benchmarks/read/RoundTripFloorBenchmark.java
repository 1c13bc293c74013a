package io.scr.benchmarks.read;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The floor under every replica open, stock's and scr's alike: one request over a UNIX socket to a
 * thread that works {@link #serverWorkMicros} and answers, p50/p99 with JMH's {@code SampleTime},
 * at 1 and 8 client threads (each with its own server thread, as a DataNode serves each stock
 * connection on its own thread). No HDFS code runs: what it measures is two thread wake-ups across
 * cores and the socket's system calls, which a real open cannot avoid (the fds come from the
 * DataNode). {@code serverWorkMicros=40} is about what a DataNode spends on an fd request (the
 * shim's own timers: 31-57 µs at the median on this machine, docs/benchmarks.md).
 *
 * <p>Why it exists: {@link ReplicaOpenBenchmark}'s target asks scr's p99 for a real open to be at
 * most half of stock's. On this project's 2-core virtual machine both paths' p99 follows this
 * floor's p99 (a woken vCPU's latency), not either client's work; this benchmark shows how far that
 * floor is from each path's figures in the same run.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class RoundTripFloorBenchmark {
  /** Microseconds the server thread spins between reading a request and answering it. */
  @Param({"0", "40"})
  int serverWorkMicros;

  private Path dir;
  private SocketChannel client;
  private Thread server;
  private final ByteBuffer one = ByteBuffer.allocateDirect(1);

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    dir = Files.createTempDirectory("scr-rtt");
    Path sock = dir.resolve("s");
    ServerSocketChannel listener = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    listener.bind(UnixDomainSocketAddress.of(sock));
    client = SocketChannel.open(UnixDomainSocketAddress.of(sock));
    SocketChannel accepted = listener.accept();
    listener.close();
    long workNanos = TimeUnit.MICROSECONDS.toNanos(serverWorkMicros);
    server =
        new Thread(
            () -> {
              ByteBuffer b = ByteBuffer.allocateDirect(1);
              try (SocketChannel s = accepted) {
                while (true) {
                  b.clear();
                  if (s.read(b) < 0) {
                    return;
                  }
                  long until = System.nanoTime() + workNanos;
                  while (System.nanoTime() < until) {
                    Thread.onSpinWait();
                  }
                  b.flip();
                  s.write(b);
                }
              } catch (IOException e) {
                // the client closed first
              }
            },
            "rtt-server");
    server.setDaemon(true);
    server.start();
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException, InterruptedException {
    client.close();
    server.join(TimeUnit.SECONDS.toMillis(10));
    Files.deleteIfExists(dir.resolve("s"));
    Files.deleteIfExists(dir);
  }

  private byte roundTrip() {
    try {
      one.clear();
      one.put(0, (byte) 1);
      client.write(one);
      one.clear();
      if (client.read(one) < 0) {
        throw new IOException("the server thread closed its socket");
      }
      return one.get(0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Benchmark
  @Threads(1)
  public byte roundTrip_t1() {
    return roundTrip();
  }

  @Benchmark
  @Threads(8)
  public byte roundTrip_t8() {
    return roundTrip();
  }
}
