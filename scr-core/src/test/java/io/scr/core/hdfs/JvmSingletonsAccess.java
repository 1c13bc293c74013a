package io.scr.core.hdfs;

/** {@link JvmSingletons} for tests in other packages. */
public final class JvmSingletonsAccess {
  private JvmSingletonsAccess() {}

  /** See {@link JvmSingletons#initialize()}. */
  public static void initialize() {
    JvmSingletons.initialize();
  }
}
