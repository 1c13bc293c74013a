package io.scr.cache;

/**
 * A reference to a cached value. While a lease is open its value is neither evicted nor closed;
 * close the lease (try-with-resources) as soon as the read is done.
 *
 * <p>A lease is meant to be used by one thread. {@link #close()} is idempotent. If the value was
 * evicted, invalidated or the cache closed while leased, the value is closed after the last lease
 * on it is closed.
 *
 * @param <V> the value type
 */
public interface Lease<V> extends AutoCloseable {

  /**
   * Returns the leased value.
   *
   * @throws IllegalStateException if this lease has been closed
   */
  V value();

  /** Releases this lease; calls after the first do nothing. */
  @Override
  void close();
}
