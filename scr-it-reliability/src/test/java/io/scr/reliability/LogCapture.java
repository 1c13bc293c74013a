package io.scr.reliability;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.apache.log4j.AppenderSkeleton;
import org.apache.log4j.Level;
import org.apache.log4j.Logger;
import org.apache.log4j.spi.LoggingEvent;

/**
 * Captures what scr logs at WARN or above while open (the tests run slf4j over reload4j, whose
 * configuration is {@code log4j.properties}): attached to the {@code io.scr} logger, so a test can
 * count the warnings a fault produced. Thread-safe.
 */
final class LogCapture extends AppenderSkeleton implements AutoCloseable {
  private final Logger logger;
  private final List<String> lines = new ArrayList<>();

  private LogCapture(Logger logger) {
    this.logger = logger;
    setThreshold(Level.WARN);
    logger.addAppender(this);
  }

  /** Starts capturing WARN and above of every {@code io.scr} logger. */
  static LogCapture scrWarnings() {
    return new LogCapture(Logger.getLogger("io.scr"));
  }

  @Override
  protected synchronized void append(LoggingEvent event) {
    lines.add(event.getLevel() + " " + event.getLoggerName() + ": " + event.getRenderedMessage());
  }

  /** The captured lines that contain {@code fragment}. */
  synchronized List<String> matching(String fragment) {
    return lines.stream().filter(l -> l.contains(fragment)).collect(Collectors.toList());
  }

  /** Every captured line. */
  synchronized List<String> all() {
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
