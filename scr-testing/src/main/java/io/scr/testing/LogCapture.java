package io.scr.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.apache.log4j.AppenderSkeleton;
import org.apache.log4j.Level;
import org.apache.log4j.Logger;
import org.apache.log4j.spi.LoggingEvent;

/**
 * Captures what one logger and its children log while open (the tests run slf4j over reload4j), so
 * a test can count the lines a fault or a misconfiguration produced. Each line reads {@code "LEVEL
 * logger: message"}. Close it to detach (and, for {@link #divert}, to restore the logger).
 *
 * <p>Thread-safe: loggers append from any thread; the lines are guarded by this object's monitor.
 */
public final class LogCapture extends AppenderSkeleton implements AutoCloseable {
  private final Logger logger;
  private final List<String> lines = new ArrayList<>();

  /** The logger's level and additivity before {@link #divert}, restored at close; else null. */
  private final Level savedLevel;

  private final Boolean savedAdditivity;

  private LogCapture(Logger logger, Level threshold, boolean divert) {
    this.logger = logger;
    setThreshold(threshold);
    if (divert) {
      savedLevel = logger.getLevel();
      savedAdditivity = logger.getAdditivity();
    } else {
      savedLevel = null;
      savedAdditivity = null;
    }
    logger.addAppender(this);
    if (divert) {
      logger.setAdditivity(false);
      logger.setLevel(threshold);
    }
  }

  /** Starts capturing WARN and above of every {@code io.scr} logger. */
  public static LogCapture scrWarnings() {
    return of("io.scr", Level.WARN);
  }

  /**
   * Starts capturing {@code threshold} and above of logger {@code name} and its children, as far as
   * their configured levels let lines through; they still reach the console too.
   */
  public static LogCapture of(String name, Level threshold) {
    return new LogCapture(Logger.getLogger(name), threshold, false);
  }

  /**
   * Starts capturing {@code level} and above of logger {@code name} instead of printing them: while
   * open the logger logs at {@code level} whatever the configuration says, and its lines reach only
   * this capture (for a chatty logger such as a DataNode's client trace).
   */
  public static LogCapture divert(String name, Level level) {
    return new LogCapture(Logger.getLogger(name), level, true);
  }

  @Override
  protected synchronized void append(LoggingEvent event) {
    lines.add(event.getLevel() + " " + event.getLoggerName() + ": " + event.getRenderedMessage());
  }

  /** The captured lines that contain {@code fragment}. */
  public synchronized List<String> matching(String fragment) {
    return lines.stream().filter(l -> l.contains(fragment)).collect(Collectors.toList());
  }

  /** The captured lines of {@code level} (e.g. {@code "WARN"}) that contain {@code fragment}. */
  public synchronized List<String> matching(String level, String fragment) {
    return lines.stream()
        .filter(l -> l.startsWith(level + " ") && l.contains(fragment))
        .collect(Collectors.toList());
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
    if (savedAdditivity != null) {
      logger.setLevel(savedLevel);
      logger.setAdditivity(savedAdditivity);
    }
  }
}
