package io.scr.reliability;

/** {@link AbstractFailoverTest} in mode B: the local DataNode runs the scr shim, no libhadoop. */
class ShimFailoverTest extends AbstractFailoverTest {
  @Override
  ProcessHdfs.LocalMode mode() {
    return ProcessHdfs.LocalMode.SHIM;
  }
}
