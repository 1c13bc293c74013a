package io.scr.cache;

/**
 * A lease on one node, as {@link LeaseCache#lease(Object, ValueLoader)} returns it: returned to the
 * cache that opened it by {@link #close()}.
 *
 * <p>Thread-safety: confined to the leasing thread; close is idempotent.
 */
final class NodeLease<K, V extends CachedValue> implements Lease<V> {
  private final ReusableLease.NodeReleaser cache;
  private Node<K, V> node;

  NodeLease(ReusableLease.NodeReleaser cache, Node<K, V> node) {
    this.cache = cache;
    this.node = node;
  }

  @Override
  public V value() {
    Node<K, V> n = node;
    if (n == null) {
      throw new IllegalStateException("lease already closed");
    }
    return n.value;
  }

  @Override
  public void close() {
    Node<K, V> n = node;
    if (n != null) {
      node = null;
      cache.releaseNode(n);
    }
  }

  @Override
  public String toString() {
    Node<K, V> n = node;
    return n == null ? "Lease{closed}" : "Lease{" + n.key + "}";
  }
}
