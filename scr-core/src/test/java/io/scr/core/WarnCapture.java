package io.scr.core;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.apache.log4j.AppenderSkeleton;
import org.apache.log4j.Level;
import org.apache.log4j.Logger;
import org.apache.log4j.spi.LoggingEvent;

/**
 * Captures what {@code io.scr} logs at WARN or above while open (tests run slf4j over reload4j), so
 * a test can count the warnings a misconfiguration produced. Thread-safe.
 */
public final class WarnCapture extends AppenderSkeleton implements AutoCloseable {
  private final Logger logger = Logger.getLogger("io.scr");
  private final List<String> lines = new ArrayList<>();

  private WarnCapture() {
    setThreshold(Level.WARN);
    logger.addAppender(this);
  }

  /** Starts capturing WARN and above of every {@code io.scr} logger. */
  public static WarnCapture start() {
    return new WarnCapture();
  }

  @Override
  protected synchronized void append(LoggingEvent event) {
    lines.add(event.getLevel() + " " + event.getLoggerName() + ": " + event.getRenderedMessage());
  }

  /** The captured lines that contain {@code fragment}. */
  public synchronized List<String> matching(String fragment) {
    return lines.stream().filter(l -> l.contains(fragment)).collect(Collectors.toList());
  }

  /** Every captured line. */
  public synchronized List<String> all() {
    return new ArrayList<>(lines);
  }

  @Override
  public boolean requiresLayout() {
    return false;
  }

  @Override
  public void close() {
    logger.removeAppender(this);
  }
}
