package io.scr.cache;

import java.io.IOException;

/**
 * Opens the value for a key on a cache miss. Runs on the thread that called {@link
 * LeaseCache#lease}, outside every cache lock; concurrent leases of the same key wait for this one
 * load instead of calling the loader again.
 *
 * @param <K> the key type
 * @param <V> the value type
 */
@FunctionalInterface
public interface ValueLoader<K, V extends CachedValue> {

  /**
   * Returns a new, open value for {@code key}, which the cache then owns (see {@link CachedValue}).
   * Must not return null.
   *
   * @throws IOException if the value cannot be opened; nothing is cached and every caller waiting
   *     on this load gets a {@link LeaseLoadException} with this exception as its cause
   */
  V load(K key) throws IOException;
}
