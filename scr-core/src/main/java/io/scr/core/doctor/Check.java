package io.scr.core.doctor;

import java.util.List;

/**
 * One diagnostic of {@code scr doctor}. Implementations are stateless; {@link #run} never throws
 * for a condition it diagnoses (it returns a FAIL finding that names it and its fix).
 */
public interface Check {
  /** A short stable id, used in the output and in {@code --json}. */
  String id();

  /** Runs the check; one finding per thing checked (e.g. per socket path). */
  List<Finding> run(DoctorContext context);
}
