package io.scr.reliability;

/** {@link AbstractFailoverTest} in mode A: the local DataNode is stock, with libhadoop. */
class StockScrFailoverTest extends AbstractFailoverTest {
  @Override
  ProcessHdfs.LocalMode mode() {
    return ProcessHdfs.LocalMode.STOCK;
  }
}
