package io.scr.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A key reads its value from a lookup by name: trimmed, parsed, its default when unset. */
class ConfigKeyTest {
  private final Map<String, String> conf = new HashMap<>();

  private static final ConfigKey<Integer> THREADS =
      ConfigKey.newBuilder("scr.test.threads", Integer.class)
          .defaultValue(4)
          .description("threads")
          .build();

  private static final ConfigKey<Long> UNSET_BY_DEFAULT =
      ConfigKey.newBuilder("scr.test.budget", Long.class).description("budget").build();

  private static final ConfigKey<Boolean> ON =
      ConfigKey.newBuilder("scr.test.on", Boolean.class)
          .defaultValue(false)
          .description("on")
          .stock()
          .build();

  private static final ConfigKey<String> PATH =
      ConfigKey.newBuilder("scr.test.path", String.class)
          .defaultValue("/x")
          .description("path")
          .build();

  @Test
  void anUnsetKeyHasItsDefaultAndASetOneItsTrimmedValue() {
    assertEquals(4, THREADS.get(conf::get));
    assertNull(UNSET_BY_DEFAULT.get(conf::get));
    assertFalse(THREADS.isSet(conf::get));
    conf.put("scr.test.threads", " 7 ");
    conf.put("scr.test.budget", "9000000000");
    conf.put("scr.test.on", "TRUE");
    conf.put("scr.test.path", "  ");
    assertEquals(7, THREADS.get(conf::get));
    assertEquals(9_000_000_000L, UNSET_BY_DEFAULT.get(conf::get));
    assertTrue(ON.get(conf::get));
    assertTrue(THREADS.isSet(conf::get));
    assertEquals("", PATH.get(conf::get), "an empty string is a string key's value");
  }

  @Test
  void anEmptyValueOfANumberOrBooleanKeyMeansItsDefault() {
    conf.put("scr.test.threads", "");
    conf.put("scr.test.on", " ");
    assertEquals(4, THREADS.get(conf::get));
    assertFalse(ON.get(conf::get));
    assertTrue(THREADS.isSet(conf::get));
  }

  @Test
  void aValueThatDoesNotParseNamesTheKeyAndTheValue() {
    conf.put("scr.test.threads", "four");
    conf.put("scr.test.on", "yes");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> THREADS.get(conf::get));
    assertEquals(
        "configuration key scr.test.threads must be a Integer, not 'four'", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> ON.get(conf::get));
    assertEquals("configuration key scr.test.on must be a Boolean, not 'yes'", e.getMessage());
  }

  @Test
  void theCatalogueFieldsAreKept() {
    assertEquals("scr.test.on", ON.name());
    assertEquals(Boolean.class, ON.type());
    assertTrue(ON.isStock());
    assertFalse(THREADS.isStock());
    assertEquals("0.1", THREADS.since());
    assertEquals("scr.test.threads", THREADS.toString());
    assertThrows(
        IllegalArgumentException.class,
        () -> ConfigKey.newBuilder("scr.test.bad", Object.class).description("x").build());
  }
}
