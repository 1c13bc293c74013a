package io.scr.core.stats;

/**
 * What scr knows about the DataNode behind one UNIX socket path, from the answers it gets there
 * (see {@link DataNodeHealth}).
 */
public enum HealthState {
  /** It answers within its deadline: replicas not open yet are asked for there. */
  HEALTHY(0),
  /**
   * One sign of trouble that proves nothing yet: a request that waited its whole deadline, a
   * connection reset or closed in the middle of an exchange, a shared-memory segment the DataNode
   * closed. New opens go elsewhere until a probe or a request is answered in time.
   */
  SUSPECT(1),
  /**
   * It accepts connections but does not answer: a second request or probe waited its whole deadline
   * (a GC pause, SIGSTOP, a stuck request path). One WARN when entered.
   */
  UNRESPONSIVE(2),
  /**
   * Nobody listens: no socket file, connection refused, or the connection closed unanswered. New
   * opens go elsewhere until a probe is answered (then one trial request, sent off the read path,
   * decides; see {@link PathHealth#takeTrial}): a connect here fails at once only until the
   * DataNode starts again, and a DataNode that has just bound its socket answers its first fd
   * requests only after hundreds of ms, which a reader that asked would wait. One WARN when
   * entered.
   */
  DEAD(3);

  private final int code;

  HealthState(int code) {
    this.code = code;
  }

  /** The value of the {@code HealthState} gauge: 0 healthy, 1 suspect, 2 unresponsive, 3 dead. */
  public int code() {
    return code;
  }

  /**
   * Whether a replica not open yet may be asked for at this DataNode: healthy only. Suspect or
   * unresponsive, asking costs a whole deadline; dead, a restarting DataNode accepts connections
   * before it answers them.
   */
  public boolean admitsNewOpens() {
    return this == HEALTHY;
  }
}
