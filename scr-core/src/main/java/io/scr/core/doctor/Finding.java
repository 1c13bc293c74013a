package io.scr.core.doctor;

import java.util.Objects;

/** One check's verdict: status, what was found, and what to change. Immutable. */
public final class Finding {
  /** How bad it is. */
  public enum Status {
    /** Works as it should. */
    OK,
    /** Works, but something will hurt (sizing, a fallback in effect). */
    WARN,
    /** Short-circuit reads cannot work (or will fail) until fixed. */
    FAIL
  }

  private final String checkId;
  private final Status status;
  private final String finding;
  private final String fix;

  Finding(String checkId, Status status, String finding, String fix) {
    this.checkId = Objects.requireNonNull(checkId, "checkId");
    this.status = Objects.requireNonNull(status, "status");
    this.finding = Objects.requireNonNull(finding, "finding");
    this.fix = fix == null ? "" : fix;
  }

  static Finding ok(String id, String finding) {
    return new Finding(id, Status.OK, finding, "");
  }

  static Finding warn(String id, String finding, String fix) {
    return new Finding(id, Status.WARN, finding, fix);
  }

  static Finding fail(String id, String finding, String fix) {
    return new Finding(id, Status.FAIL, finding, fix);
  }

  /** The id of the check that produced it ({@code socket-path}, {@code fd-limit}, ...). */
  public String checkId() {
    return checkId;
  }

  /** OK, WARN or FAIL. */
  public Status status() {
    return status;
  }

  /** What the check found, in one or two sentences. */
  public String finding() {
    return finding;
  }

  /** What to change; empty for OK. */
  public String fix() {
    return fix;
  }

  @Override
  public String toString() {
    return status + " " + checkId + ": " + finding + (fix.isEmpty() ? "" : " Fix: " + fix);
  }
}
