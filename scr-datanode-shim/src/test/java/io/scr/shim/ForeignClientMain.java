package io.scr.shim;

import java.io.DataOutputStream;
import java.io.File;
import java.io.InputStream;
import java.net.Socket;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.Sender;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReleaseShortCircuitAccessResponseProto;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.shortcircuit.ShortCircuitShm;
import org.apache.hadoop.hdfs.shortcircuit.ShortCircuitShm.SlotId;
import org.apache.hadoop.security.token.Token;
import org.newsclub.net.unix.AFUNIXSocket;
import org.newsclub.net.unix.AFUNIXSocketAddress;

/**
 * A second client process for ownership tests, run in a child JVM so the shim sees a different peer
 * pid: connects with junixsocket (no libhadoop), sends one op 88 release or one op 87 with a slot
 * naming a segment given on the command line, and prints the answer as {@code STATUS <status>} and
 * {@code MESSAGE <text>} lines.
 *
 * <p>Usage: {@code release <socket> <shmHi> <shmLo> <slot>} or {@code register <socket> <shmHi>
 * <shmLo> <slot> <bpid> <blockId> <genStamp> <numBytes> <token as URL string>}.
 */
public final class ForeignClientMain {
  private ForeignClientMain() {}

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    SlotId slot =
        new SlotId(
            new ShortCircuitShm.ShmId(Long.parseLong(args[2]), Long.parseLong(args[3])),
            Integer.parseInt(args[4]));
    try (Socket socket = AFUNIXSocket.connectTo(AFUNIXSocketAddress.of(new File(args[1])))) {
      socket.setSoTimeout(20_000);
      Sender sender = new Sender(new DataOutputStream(socket.getOutputStream()));
      InputStream in = socket.getInputStream();
      if (mode.equals("release")) {
        sender.releaseShortCircuitFds(slot);
        ReleaseShortCircuitAccessResponseProto r =
            ReleaseShortCircuitAccessResponseProto.parseFrom(PBHelperClient.vintPrefixed(in));
        print(r.getStatus().name(), r.getError());
      } else if (mode.equals("register")) {
        ExtendedBlock blk =
            new ExtendedBlock(
                args[5], Long.parseLong(args[6]), Long.parseLong(args[8]), Long.parseLong(args[7]));
        Token<BlockTokenIdentifier> token = new Token<>();
        token.decodeFromUrlString(args[9]);
        sender.requestShortCircuitFds(blk, token, slot, 1, true);
        BlockOpResponseProto r = BlockOpResponseProto.parseFrom(PBHelperClient.vintPrefixed(in));
        print(r.getStatus().name(), r.getMessage());
      } else {
        throw new IllegalArgumentException("unknown mode " + mode);
      }
    }
  }

  private static void print(String status, String message) {
    System.out.println("STATUS " + status);
    System.out.println("MESSAGE " + message);
    System.out.flush();
  }
}
