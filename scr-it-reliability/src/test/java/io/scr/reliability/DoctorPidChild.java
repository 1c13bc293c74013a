package io.scr.reliability;

import java.io.IOException;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * A client process for {@code DoctorPidTest}: with argument {@code read} it reads a file of the
 * parent's cluster through the file system its configuration file names, random 4 KiB preads until
 * its stdin closes; with {@code idle} it only waits (a JVM without scr). Prints {@value #READY}
 * once it is doing what it was started for.
 */
final class DoctorPidChild {
  static final String READY = "DOCTOR-PID-CHILD-READY";

  private DoctorPidChild() {}

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    Thread stdinWatcher =
        new Thread(
            () -> {
              try {
                while (System.in.read() >= 0) {
                  // the parent closes stdin to stop us
                }
              } catch (IOException e) {
                // stdin gone: stop as well
              }
              System.exit(0);
            },
            "stdin-watcher");
    stdinWatcher.setDaemon(true);
    stdinWatcher.start();
    if (mode.equals("idle")) {
      System.out.println(READY);
      System.out.flush();
      Thread.sleep(Long.MAX_VALUE);
    }
    Configuration conf = new Configuration(false);
    conf.addResource(new Path(args[1]));
    Path file = new Path(args[2]);
    int length = Integer.parseInt(args[3]);
    try (FileSystem fs = FileSystem.newInstance(conf);
        FSDataInputStream in = fs.open(file)) {
      System.out.println("file system " + fs.getClass().getName());
      byte[] buf = new byte[4096];
      Random r = new Random(1);
      for (long n = 0; ; n++) {
        in.readFully(r.nextInt(length - buf.length), buf);
        if (n == 100) {
          System.out.println(READY);
          System.out.flush();
        }
        if (n % 64 == 0) {
          Thread.sleep(1); // a steady reader, not a CPU hog on a 2-core build machine
        }
      }
    }
  }
}
