package io.scr.shim;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.File;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmRequestProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmResponseProto;
import org.newsclub.net.unix.AFUNIXSocket;
import org.newsclub.net.unix.AFUNIXSocketAddress;

/**
 * A hostile (or buggy) local process for connection-flood tests, run in a child JVM so its fds are
 * its own: connects {@code count} times to the shim socket as fast as it can, as the scr client
 * connects (junixsocket, with a connect timeout), sends {@code requests} shared-memory segment
 * requests (op 89) on each connection and never reads a reply. It keeps every connection open until
 * its standard input closes, then exits.
 *
 * <p>Prints {@code CONNECTED <n>}, one {@code FAILED <n> <exception>: <message>} line per distinct
 * connect error, {@code SLOWEST_MS <ms>} (the slowest connect) and {@code HOLDING}, then waits. On
 * a {@code DRAIN} line it reads every connection to its end and prints {@code UNREAD_FDS <n>} (the
 * fds that were waiting, in flight, in its connections), {@code ERROR <message>} (the first refusal
 * it was sent, if any), {@code REPLIES <status counts>} and {@code DRAINED}.
 *
 * <p>Usage: {@code <socket> <count> <requests per connection> <connect timeout ms>}.
 */
public final class ConnectionFloodMain {
  private ConnectionFloodMain() {}

  public static void main(String[] args) throws Exception {
    String path = args[0];
    int count = Integer.parseInt(args[1]);
    int requests = Integer.parseInt(args[2]);
    int timeoutMs = Integer.parseInt(args[3]);
    byte[] segmentRequests = segmentRequests(requests);
    List<AFUNIXSocket> held = new ArrayList<>();
    Map<String, Integer> failures = new TreeMap<>();
    long slowestNanos = 0;
    for (int i = 0; i < count; i++) {
      long start = System.nanoTime();
      AFUNIXSocket socket = AFUNIXSocket.newInstance();
      try {
        socket.connect(AFUNIXSocketAddress.of(new File(path)), timeoutMs);
        held.add(socket);
        socket.getOutputStream().write(segmentRequests);
      } catch (IOException e) {
        failures.merge(e.getClass().getName() + ": " + e.getMessage(), 1, Integer::sum);
        socket.close();
      }
      slowestNanos = Math.max(slowestNanos, System.nanoTime() - start);
    }
    System.out.println("CONNECTED " + (count - failures.values().stream().mapToInt(n -> n).sum()));
    failures.forEach((what, n) -> System.out.println("FAILED " + n + " " + what));
    System.out.println("SLOWEST_MS " + slowestNanos / 1_000_000);
    System.out.println("HOLDING");
    System.out.flush();
    BufferedReader commands =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String command;
    while ((command = commands.readLine()) != null) {
      if (command.equals("DRAIN")) {
        drain(held);
      }
    }
    for (Socket s : held) {
      s.close();
    }
  }

  private static void drain(List<AFUNIXSocket> held) throws IOException {
    int fds = 0;
    String firstError = null;
    Map<String, Integer> replies = new TreeMap<>();
    for (AFUNIXSocket socket : held) {
      socket.setSoTimeout(5_000);
      socket.setAncillaryReceiveBufferSize(1024);
      InputStream in = socket.getInputStream();
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      byte[] buf = new byte[4096];
      try {
        int n;
        while ((n = in.read(buf)) >= 0) {
          bytes.write(buf, 0, n);
          FileDescriptor[] received = socket.getReceivedFileDescriptors();
          if (received != null) {
            fds += received.length;
            for (FileDescriptor fd : received) {
              new FileInputStream(fd).close();
            }
          }
        }
      } catch (IOException e) {
        replies.merge("read failed: " + e.getMessage(), 1, Integer::sum);
      }
      if (bytes.size() == 0) {
        replies.merge("none", 1, Integer::sum);
        continue;
      }
      ShortCircuitShmResponseProto r =
          ShortCircuitShmResponseProto.parseDelimitedFrom(
              new ByteArrayInputStream(bytes.toByteArray()));
      replies.merge(r.getStatus().name(), 1, Integer::sum);
      if (firstError == null && r.hasError() && !r.getError().isEmpty()) {
        firstError = r.getError();
      }
    }
    System.out.println("UNREAD_FDS " + fds);
    if (firstError != null) {
      System.out.println("ERROR " + firstError);
    }
    System.out.println("REPLIES " + replies);
    System.out.println("DRAINED");
    System.out.flush();
  }

  private static byte[] segmentRequests(int n) throws IOException {
    byte[] body =
        ShortCircuitShmRequestProto.newBuilder().setClientName("flood").build().toByteArray();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    DataOutputStream d = new DataOutputStream(out);
    for (int i = 0; i < n; i++) {
      d.writeShort(RequestFrames.DATA_TRANSFER_VERSION);
      d.writeByte(ShortCircuitService.OP_REQUEST_SHM);
      d.writeByte(body.length); // < 128: a one-byte varint
      d.write(body);
    }
    return out.toByteArray();
  }
}
