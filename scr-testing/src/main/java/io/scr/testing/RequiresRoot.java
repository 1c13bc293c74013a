package io.scr.testing;

import java.io.IOException;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A test (or test class) that only root can run: it gives files to other users ({@code chown}),
 * creates users or starts processes as another user. Skipped, with {@link #value()} as the reason,
 * when the JVM's effective uid is not 0; tagged {@value #TAG} so a root build can run exactly these
 * ({@code mvn verify -Dgroups=requires-root}) after the rest has run as an unprivileged user.
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Tag(RequiresRoot.TAG)
@ExtendWith(RequiresRoot.Condition.class)
public @interface RequiresRoot {
  /** The JUnit tag of root-only tests. */
  String TAG = "requires-root";

  /** Why the test needs root, e.g. "chown to another user". */
  String value();

  /** Disables a {@link RequiresRoot} test when not running as root. */
  final class Condition implements ExecutionCondition {
    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
      RequiresRoot annotation =
          context.getElement().map(e -> e.getAnnotation(RequiresRoot.class)).orElse(null);
      if (annotation == null) {
        return ConditionEvaluationResult.enabled("not root-only");
      }
      return isRoot()
          ? ConditionEvaluationResult.enabled("running as root")
          : ConditionEvaluationResult.disabled(
              "needs root (" + annotation.value() + "); skipped for uid " + euid());
    }

    /** Whether this JVM's effective uid is 0 (from {@code /proc/self/status}). */
    public static boolean isRoot() {
      return euid() == 0;
    }

    /** This JVM's effective uid, or -1 when {@code /proc/self/status} cannot be read. */
    public static int euid() {
      try {
        String status =
            new String(Files.readAllBytes(Paths.get("/proc/self/status")), StandardCharsets.UTF_8);
        for (String line : status.split("\n", -1)) {
          if (line.startsWith("Uid:")) {
            return Integer.parseInt(line.substring(4).trim().split("\\s+")[1]);
          }
        }
      } catch (IOException | RuntimeException e) {
        return "root".equals(System.getProperty("user.name")) ? 0 : -1;
      }
      return -1;
    }
  }
}
