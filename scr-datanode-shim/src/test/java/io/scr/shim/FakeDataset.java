package io.scr.shim;

import io.scr.shim.SegmentRegistryTest.FakeReplica;
import java.io.FileInputStream;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.LengthInputStream;

/**
 * A dataset holding one finalized replica whose block and meta files are {@code data} and {@code
 * meta}: every fd request for it opens the two files afresh, as {@code FsDatasetImpl} does. Only
 * the calls the shim makes are answered.
 */
final class FakeDataset {
  private FakeDataset() {}

  static FsDatasetSpi<?> of(ExtendedBlock block, Path data, Path meta) {
    FakeReplica replica = new FakeReplica(block.getBlockId(), block.getGenerationStamp());
    return (FsDatasetSpi<?>)
        Proxy.newProxyInstance(
            FakeDataset.class.getClassLoader(),
            new Class<?>[] {FsDatasetSpi.class},
            (proxy, method, args) -> {
              switch (method.getName()) {
                case "getBlockInputStream":
                  return new FileInputStream(data.toFile());
                case "getMetaDataInputStream":
                  return new LengthInputStream(
                      new FileInputStream(meta.toFile()), meta.toFile().length());
                case "getReplica":
                  return replica;
                case "isCached":
                  return false;
                default:
                  throw new UnsupportedOperationException(method.getName());
              }
            });
  }
}
