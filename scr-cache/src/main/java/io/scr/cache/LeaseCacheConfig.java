package io.scr.cache;

import java.lang.management.ManagementFactory;
import java.lang.management.OperatingSystemMXBean;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;

/**
 * Immutable configuration of a {@link LeaseCache}; build one with {@link #newBuilder()}. Every knob
 * has a default that needs no tuning; {@code docs/cache.md} lists them.
 *
 * <p><b>Default sizing.</b> Without an explicit capacity or fd budget the cache sizes itself from
 * the process's {@code RLIMIT_NOFILE} soft limit {@code L}, read at run time (or passed in with
 * {@link Builder#fdLimit}):
 *
 * <pre>
 *   fdBudget = max(floor(fdLimitShare × L) − fdReserve, floor(L / 8))     (defaults: 0.5, 1024)
 *   capacity = max(1, floor(fdBudget / typicalFdCost))                    (default cost: 2)
 * </pre>
 *
 * <p>so the cache never plans to hold more fds than a share of the limit, leaving the reserve for
 * sockets, jars and logs. With {@code L = 1048576} that is 523264 fds and 261632 replicas; with
 * {@code L = 65536}, 31744 fds and 15872 replicas. If the limit cannot be read (no {@code
 * com.sun.management.UnixOperatingSystemMXBean}) and none was passed, the cache falls back to
 * {@value #FALLBACK_CAPACITY} entries, the stock HDFS default, and says so. The chosen sizes and
 * the reason are logged once at creation and available from {@link LeaseCache#sizing()}.
 *
 * <p>An explicit fd budget is capped at the fd limit when the limit is known; an explicit capacity
 * is honoured, but the fd budget still binds.
 */
public final class LeaseCacheConfig {

  /** Entries used when neither a capacity nor an fd limit is available. */
  public static final int FALLBACK_CAPACITY = 256;

  private static final int UNSET = -1;

  private final int capacity;
  private final long fdBudget;
  private final long fdLimit;
  private final double fdLimitShare;
  private final int fdReserve;
  private final int typicalFdCost;
  private final int stripes;
  private final Duration idleExpiry;
  private final Duration maintenanceInterval;
  private final Duration fdBudgetWait;
  private final Duration thrashWindow;
  private final Duration thrashWarningInterval;
  private final Ticker ticker;
  private final Scheduler scheduler;
  private final String name;
  private final String capacityKey;

  private LeaseCacheConfig(Builder b) {
    this.capacity = b.capacity;
    this.fdBudget = b.fdBudget;
    this.fdLimit = b.fdLimit;
    this.fdLimitShare = b.fdLimitShare;
    this.fdReserve = b.fdReserve;
    this.typicalFdCost = b.typicalFdCost;
    this.stripes = b.stripes;
    this.idleExpiry = b.idleExpiry;
    this.maintenanceInterval = b.maintenanceInterval;
    this.fdBudgetWait = b.fdBudgetWait;
    this.thrashWindow = b.thrashWindow;
    this.thrashWarningInterval = b.thrashWarningInterval;
    this.ticker = b.ticker;
    this.scheduler = b.scheduler;
    this.name = b.name;
    this.capacityKey = b.capacityKey;
  }

  /** Returns a builder with every knob at its default. */
  public static Builder newBuilder() {
    return new Builder();
  }

  /**
   * Fds reserved for each load before the loader runs; also the divisor of the default capacity.
   */
  public int typicalFdCost() {
    return typicalFdCost;
  }

  /** The number of lock stripes, a power of two. */
  public int stripes() {
    return stripes;
  }

  /** How long an entry may stay idle (unleased) before it is closed. */
  public Duration idleExpiry() {
    return idleExpiry;
  }

  /** How often the closer thread runs {@link LeaseCache#cleanUp()} when it has nothing to close. */
  public Duration maintenanceInterval() {
    return maintenanceInterval;
  }

  /** How long a load waits for the closer to free fds when the budget is full. */
  public Duration fdBudgetWait() {
    return fdBudgetWait;
  }

  /** The length of one thrash-detector window. */
  public Duration thrashWindow() {
    return thrashWindow;
  }

  /** The minimum time between two thrash warnings. */
  public Duration thrashWarningInterval() {
    return thrashWarningInterval;
  }

  /** The cache's time source: expiry, the thrash detector, load times, the fd budget's wait. */
  public Ticker ticker() {
    return ticker;
  }

  /**
   * The scheduler for closing and maintenance; empty when the cache runs them on a thread of its
   * own ({@link Builder#scheduler}).
   */
  public Optional<Scheduler> scheduler() {
    return Optional.ofNullable(scheduler);
  }

  /** The cache's name, used in log lines and the closer thread's name. */
  public String name() {
    return name;
  }

  /**
   * What thrash warnings tell the operator to raise: the caller's configuration key for the
   * capacity, or by default the words "the cache capacity".
   */
  public String capacityKey() {
    return capacityKey;
  }

  /** Resolves capacity and fd budget, reading the process fd limit if it was not passed in. */
  Sizing resolveSizing() {
    return resolveSizing(fdLimit != UNSET ? fdLimit : readSoftFdLimit());
  }

  /** Resolves capacity and fd budget for an fd limit of {@code limit} (unknown if not positive). */
  Sizing resolveSizing(long limit) {
    String limitSource = fdLimit != UNSET ? "passed in" : "RLIMIT_NOFILE soft limit";
    long budget;
    String budgetWhy;
    if (fdBudget != UNSET) {
      budget = fdBudget;
      budgetWhy = "explicit";
      if (limit > 0 && budget > limit) {
        budget = limit;
        budgetWhy = "explicit " + fdBudget + ", capped at the fd limit " + limit;
      }
    } else if (limit > 0) {
      long share = (long) Math.floor(fdLimitShare * limit) - fdReserve;
      long floor = limit / 8;
      budget = Math.max(Math.max(share, floor), 1);
      budgetWhy =
          String.format(
              Locale.ROOT,
              "max(%.2f x %d - %d, %d / 8) from the %s %d",
              fdLimitShare,
              limit,
              fdReserve,
              limit,
              limitSource,
              limit);
    } else {
      budget = (long) FALLBACK_CAPACITY * typicalFdCost;
      budgetWhy = "fd limit unknown (no UnixOperatingSystemMXBean): fallback";
    }
    int cap;
    String capWhy;
    if (capacity != UNSET) {
      cap = capacity;
      capWhy = "explicit";
    } else {
      cap = (int) Math.max(1, Math.min(Integer.MAX_VALUE - 8, budget / typicalFdCost));
      capWhy = "fd budget " + budget + " / " + typicalFdCost + " fds per value";
    }
    return new Sizing(
        cap,
        budget,
        limit,
        "capacity " + cap + " (" + capWhy + "), fd budget " + budget + " (" + budgetWhy + ")");
  }

  /**
   * Returns the soft {@code RLIMIT_NOFILE} of this process ({@code getrlimit}'s {@code rlim_cur}),
   * or -1 if this JVM cannot tell.
   */
  static long readSoftFdLimit() {
    OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
    if (os instanceof com.sun.management.UnixOperatingSystemMXBean) {
      return ((com.sun.management.UnixOperatingSystemMXBean) os).getMaxFileDescriptorCount();
    }
    return -1;
  }

  /** The sizes a cache chose and why. Immutable. */
  public static final class Sizing {
    private final int capacity;
    private final long fdBudget;
    private final long fdLimit;
    private final String reason;

    Sizing(int capacity, long fdBudget, long fdLimit, String reason) {
      this.capacity = capacity;
      this.fdBudget = fdBudget;
      this.fdLimit = fdLimit;
      this.reason = reason;
    }

    /** The maximum number of entries when no lease pins more. */
    public int capacity() {
      return capacity;
    }

    /** The maximum number of fds the cache's values, open or awaiting close, may hold. */
    public long fdBudget() {
      return fdBudget;
    }

    /** The process fd limit the sizes were derived from, or -1 if unknown. */
    public long fdLimit() {
      return fdLimit;
    }

    /** A one-line explanation of the sizes, as logged at creation. */
    public String reason() {
      return reason;
    }

    @Override
    public String toString() {
      return reason;
    }
  }

  /** Builds a {@link LeaseCacheConfig}. Not thread-safe. */
  public static final class Builder {
    private int capacity = UNSET;
    private long fdBudget = UNSET;
    private long fdLimit = UNSET;
    private double fdLimitShare = 0.5;
    private int fdReserve = 1024;
    private int typicalFdCost = 2;
    private int stripes = UNSET;
    private Duration idleExpiry = Duration.ofMinutes(5);
    private Duration maintenanceInterval = Duration.ofSeconds(1);
    private Duration fdBudgetWait = Duration.ofMillis(500);
    private Duration thrashWindow = Duration.ofSeconds(10);
    private Duration thrashWarningInterval = Duration.ofMinutes(5);
    private Ticker ticker = Ticker.systemTicker();
    private Scheduler scheduler;
    private String name = "scr-cache";
    private String capacityKey = "the cache capacity";

    private Builder() {}

    /**
     * Maximum number of entries (leased entries can push past it until released). Default: from the
     * fd limit.
     */
    public Builder capacity(int capacity) {
      this.capacity = requirePositive(capacity, "capacity");
      return this;
    }

    /**
     * Maximum fds held by values, open or awaiting close. A hard limit. Default: from the fd limit.
     */
    public Builder fdBudget(long fdBudget) {
      this.fdBudget = requirePositive(fdBudget, "fdBudget");
      return this;
    }

    /** The process fd soft limit, if the caller already knows it (scr-core passes getrlimit's). */
    public Builder fdLimit(long fdLimit) {
      this.fdLimit = requirePositive(fdLimit, "fdLimit");
      return this;
    }

    /** Share of the fd limit the default budget may use, in (0, 1]. Default 0.5. */
    public Builder fdLimitShare(double share) {
      if (!(share > 0 && share <= 1)) {
        throw new IllegalArgumentException("fdLimitShare must be in (0, 1]: " + share);
      }
      this.fdLimitShare = share;
      return this;
    }

    /** Fds left out of the default budget for everything else in the process. Default 1024. */
    public Builder fdReserve(int reserve) {
      if (reserve < 0) {
        throw new IllegalArgumentException("fdReserve must be >= 0: " + reserve);
      }
      this.fdReserve = reserve;
      return this;
    }

    /**
     * Fds a typical value holds; reserved from the budget before each load, and the divisor of the
     * default capacity. Default 2 (block file + meta file).
     */
    public Builder typicalFdCost(int cost) {
      this.typicalFdCost = requirePositive(cost, "typicalFdCost");
      return this;
    }

    /** Number of lock stripes, rounded up to a power of two. Default: 4 × CPUs, at least 16. */
    public Builder stripes(int stripes) {
      this.stripes = requirePositive(stripes, "stripes");
      return this;
    }

    /** How long an entry may stay unleased before it is closed. Default 5 minutes (stock's). */
    public Builder idleExpiry(Duration d) {
      this.idleExpiry = requirePositive(d, "idleExpiry");
      return this;
    }

    /** How often maintenance ({@link LeaseCache#cleanUp()}) runs. Default 1 second. */
    public Builder maintenanceInterval(Duration d) {
      this.maintenanceInterval = requirePositive(d, "maintenanceInterval");
      return this;
    }

    /** How long a load waits for fds to be freed when the budget is full. Default 500 ms. */
    public Builder fdBudgetWait(Duration d) {
      this.fdBudgetWait = Objects.requireNonNull(d, "fdBudgetWait");
      if (d.isNegative()) {
        throw new IllegalArgumentException("fdBudgetWait must be >= 0: " + d);
      }
      return this;
    }

    /** Length of a thrash-detector window. Default 10 seconds. */
    public Builder thrashWindow(Duration d) {
      this.thrashWindow = requirePositive(d, "thrashWindow");
      return this;
    }

    /** Minimum time between thrash warnings. Default 5 minutes. */
    public Builder thrashWarningInterval(Duration d) {
      this.thrashWarningInterval = requirePositive(d, "thrashWarningInterval");
      return this;
    }

    /**
     * The cache's only time source (expiry, thrash windows, load times, the fd budget's wait).
     * Default {@link Ticker#systemTicker()}.
     */
    public Builder ticker(Ticker ticker) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    /**
     * Runs the cache's closing and maintenance tasks. Default: one daemon thread of the cache's
     * own, named after the cache with {@code -closer}, stopped by {@link LeaseCache#close()}. An
     * injected scheduler is not stopped by the cache (its owner stops it).
     */
    public Builder scheduler(Scheduler scheduler) {
      this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
      return this;
    }

    /** Name used in logs and the closer thread's name. Default "scr-cache". */
    public Builder name(String name) {
      this.name = Objects.requireNonNull(name, "name");
      return this;
    }

    /**
     * How thrash warnings name the capacity setting to raise: the caller's configuration key for
     * it. Default: the words "the cache capacity".
     */
    public Builder capacityKey(String key) {
      this.capacityKey = Objects.requireNonNull(key, "capacityKey");
      return this;
    }

    /** Returns the configuration. */
    public LeaseCacheConfig build() {
      if (stripes == UNSET) {
        stripes = Math.max(16, 4 * Runtime.getRuntime().availableProcessors());
      }
      stripes = Math.min(1 << 16, Integer.highestOneBit(stripes - 1) << 1);
      if (stripes < 1) {
        stripes = 1;
      }
      return new LeaseCacheConfig(this);
    }

    private static int requirePositive(int v, String what) {
      if (v <= 0) {
        throw new IllegalArgumentException(what + " must be > 0: " + v);
      }
      return v;
    }

    private static long requirePositive(long v, String what) {
      if (v <= 0) {
        throw new IllegalArgumentException(what + " must be > 0: " + v);
      }
      return v;
    }

    private static Duration requirePositive(Duration d, String what) {
      Objects.requireNonNull(d, what);
      if (d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException(what + " must be > 0: " + d);
      }
      return d;
    }
  }
}
