package io.scr.core.internal.engine;

import io.scr.core.FallbackReason;
import java.util.EnumMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

/**
 * How often reads went the stock way, by {@link FallbackReason}; an fd-budget fallback also feeds
 * the engine's {@link FdBudgetWarning}.
 *
 * <p>Thread-safety: thread-safe; one {@link LongAdder} per reason, the map filled at construction
 * and never changed.
 */
final class FallbackCounters implements Consumer<FallbackReason> {
  private final EnumMap<FallbackReason, LongAdder> counts = new EnumMap<>(FallbackReason.class);
  private final FdBudgetWarning fdBudgetWarning;

  FallbackCounters(FdBudgetWarning fdBudgetWarning) {
    this.fdBudgetWarning = fdBudgetWarning;
    for (FallbackReason r : FallbackReason.values()) {
      counts.put(r, new LongAdder());
    }
  }

  /** Counts one read that fell back for {@code reason}. */
  @Override
  public void accept(FallbackReason reason) {
    counts.get(reason).increment();
    if (reason == FallbackReason.FD_BUDGET) {
      fdBudgetWarning.fallback();
    }
  }

  long count(FallbackReason reason) {
    return counts.get(reason).sum();
  }
}
