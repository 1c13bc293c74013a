package io.scr.core.doctor;

import io.scr.core.ScrKeys;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Client keys that one configuration file sets and a later one silently overrides: the
 * hbase-default.xml trap (HBASE-25449), where HBase's defaults, loaded after hdfs-site.xml, set
 * {@code dfs.client.read.shortcircuit} and {@code dfs.domain.socket.path} back to off/empty.
 */
final class MaskedKeyCheck implements Check {
  static final String ID = "masked-keys";

  static final List<String> KEYS =
      Arrays.asList(
          ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name(),
          ScrKeys.DFS_DOMAIN_SOCKET_PATH.name(),
          EnvironmentChecks.ACCESSOR_KEY,
          EnvironmentChecks.FILE_SYSTEM_KEY,
          ScrKeys.CLIENT_ENABLED.name(),
          ScrKeys.CLIENT_SOCKET_PATHS.name(),
          ScrKeys.CACHE_CAPACITY.name());

  @Override
  public String id() {
    return ID;
  }

  @Override
  public List<Finding> run(DoctorContext ctx) {
    List<Finding> out = new ArrayList<>();
    for (String key : KEYS) {
      String firstValue = null;
      String firstLayer = null;
      for (DoctorContext.Layer layer : ctx.layers()) {
        String v = layer.alone().get(key);
        if (v == null) {
          continue;
        }
        v = v.trim();
        if (firstLayer == null) {
          firstValue = v;
          firstLayer = layer.name();
        } else if (!Objects.equals(firstValue, v)) {
          boolean defaults = layer.name().endsWith("-default.xml");
          String finding =
              key
                  + " = '"
                  + firstValue
                  + "' in "
                  + firstLayer
                  + " is masked by '"
                  + v
                  + "' in "
                  + layer.name()
                  + ", which is loaded later";
          String fix =
              "set "
                  + key
                  + "="
                  + firstValue
                  + " in the last file this process loads (for HBase: hbase-site.xml), or remove"
                  + " it from "
                  + layer.name();
          out.add(defaults ? Finding.fail(ID, finding, fix) : Finding.warn(ID, finding, fix));
          firstValue = v;
          firstLayer = layer.name();
        }
      }
    }
    if (out.isEmpty()) {
      out.add(
          Finding.ok(
              ID,
              "no short-circuit key is overridden between "
                  + ctx.layers().size()
                  + " configuration files"));
    }
    return out;
  }
}
