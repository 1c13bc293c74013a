package io.scr.core.metrics;

/**
 * The JMX view of one scr client context that {@code scr doctor --pid} reads from a running
 * process: object name {@code io.scr:type=ScrClient,context=<context>} in the platform MBean
 * server. Registered by the engine's first acquire whatever {@code scr.metrics.enabled} says (it
 * costs nothing until read), unregistered by its last close.
 */
public interface ScrClientDiagnosticsMBean {
  /** The client context's name. */
  String getContext();

  /**
   * Every metric of the context now, one {@code name=value} per line: the {@code ScrClient}
   * record's metrics by their {@link ClientMetric} names, and each DataNode socket path's as {@code
   * path[<socket path>].<name>}. Numbers only; read twice to get rates.
   */
  String getMetrics();

  /** The scr client settings the engine was built from, one {@code key=value} per line. */
  String getSettings();
}
