package io.scr.cache;

/**
 * A {@link Lease} object that its owner reuses for one lease after another, so that leasing a
 * cached value allocates nothing: {@link LeaseCache#lease(Object, ValueLoader, ReusableLease)} and
 * {@link LeaseCache#leaseIfPresent(Object, ReusableLease)} open it on a value, {@link #close()}
 * returns that lease, and the owner may then open it again. Subclass it to make the cache's lease
 * your own lease type (scr-core's replica lease is one), or use it as is.
 *
 * <p>The lease contract holds for each opening: while open, the value is neither evicted nor
 * closed; {@link #close()} is idempotent; {@link #value()} on a closed lease throws. Reopening is
 * the owner's explicit act, so a closed lease never comes back to life behind the back of someone
 * who still holds it: only reuse an object nobody else refers to.
 *
 * <p>Not thread-safe: one thread at a time (it may be handed between threads with the usual
 * happens-before, e.g. through a {@code ThreadLocal} or a queue). Opening a lease that is already
 * open throws {@link IllegalStateException} and leaves it as it was.
 *
 * @param <V> the value type
 */
public class ReusableLease<V> implements Lease<V> {
  /** The cache that opened this lease, while open. */
  private NodeReleaser cache;

  /** The leased entry, while open; null when closed. */
  private Node<?, ?> node;

  /** Creates a closed lease. */
  public ReusableLease() {}

  /** Whether this lease is open (opened and not yet closed). */
  public final boolean isOpen() {
    return node != null;
  }

  /**
   * Returns the leased value.
   *
   * @throws IllegalStateException if this lease is closed
   */
  @Override
  @SuppressWarnings("unchecked")
  public final V value() {
    Node<?, ?> n = node;
    if (n == null) {
      throw new IllegalStateException("lease is closed");
    }
    return (V) n.value;
  }

  /** Returns the lease to the cache; calls on a closed lease do nothing. */
  @Override
  public final void close() {
    Node<?, ?> n = node;
    if (n != null) {
      node = null;
      NodeReleaser c = cache;
      cache = null;
      c.releaseNode(n);
    }
  }

  /** Throws unless closed; called by the cache before it takes a lease for this object. */
  final void checkClosed() {
    if (node != null) {
      throw new IllegalStateException("lease is still open: close it before reusing it");
    }
  }

  /** Opens this (closed) lease on {@code n}, whose lease count already includes it. */
  final void open(NodeReleaser releaser, Node<?, ?> n) {
    this.cache = releaser;
    this.node = n;
  }

  @Override
  public String toString() {
    Node<?, ?> n = node;
    return n == null ? "Lease{closed}" : "Lease{" + n.key + "}";
  }

  /** The cache side of a reusable lease: gives one lease on a node back. */
  interface NodeReleaser {
    void releaseNode(Node<?, ?> n);
  }
}
