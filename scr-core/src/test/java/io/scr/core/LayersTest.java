package io.scr.core;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.belongToAnyOf;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.core.domain.properties.HasName.Predicates.nameMatching;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.codeUnits;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.fields;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.core.domain.JavaField;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.domain.JavaType;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import java.util.LinkedHashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * scr-core's layers, read from its compiled classes (docs/architecture.md draws them). Top to
 * bottom: the drop-ins ({@code hdfs}, with the bridge into Hadoop's package, and {@code doctor}),
 * the {@link ScrClient} facade, the engine ({@code internal.engine}), {@code metrics}, then {@code
 * internal.replica}, {@code health}, {@code net}, {@code protocol}, {@code read}, and the leaves:
 * the counters the hot path bumps ({@code counters}) and the API's vocabulary ({@link ScrKeys},
 * {@link FallbackReason}, {@link ReplicaLease}), which every layer may name and which names nothing
 * of scr-core. A class may use any layer below its own and none above it.
 */
class LayersTest {
  private static final JavaClasses CORE =
      new ClassFileImporter()
          .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
          .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_JARS)
          .importPackages("io.scr.core", "org.apache.hadoop.hdfs");

  /** The public packages: what users, the bundles and the other modules name. */
  private static final String[] API_PACKAGES = {
    "io.scr.core",
    "io.scr.core.hdfs",
    "io.scr.core.doctor",
    "io.scr.core.metrics",
    "io.scr.core.counters"
  };

  @Test
  void everyLayerUsesOnlyTheLayersBelowIt() {
    DescribedPredicate<JavaClass> facade = belongToAnyOf(ScrClient.class);
    layeredArchitecture()
        .consideringOnlyDependenciesInLayers()
        .layer("drop-ins")
        .definedBy(
            resideInAnyPackage("io.scr.core.hdfs..", "io.scr.core.doctor..")
                .or(nameMatching("org\\.apache\\.hadoop\\.hdfs\\.ScrDfsInputStreamBase(\\$.*)?")))
        .layer("facade")
        .definedBy(facade)
        .layer("engine")
        .definedBy("io.scr.core.internal.engine..")
        .layer("metrics")
        .definedBy("io.scr.core.metrics..")
        .layer("replica")
        .definedBy("io.scr.core.internal.replica..")
        .layer("health")
        .definedBy("io.scr.core.internal.health..")
        .layer("net")
        .definedBy("io.scr.core.internal.net..")
        .layer("protocol")
        .definedBy("io.scr.core.internal.protocol..")
        .layer("read")
        .definedBy("io.scr.core.internal.read..")
        .layer("counters")
        .definedBy("io.scr.core.stats..")
        .layer("vocabulary")
        .definedBy(resideInAPackage("io.scr.core").and(not(facade)))
        .whereLayer("drop-ins")
        .mayNotBeAccessedByAnyLayer()
        .whereLayer("facade")
        .mayOnlyBeAccessedByLayers("drop-ins")
        .whereLayer("engine")
        .mayOnlyBeAccessedByLayers("drop-ins", "facade")
        .whereLayer("metrics")
        .mayOnlyBeAccessedByLayers("drop-ins", "facade", "engine")
        .whereLayer("replica")
        .mayOnlyBeAccessedByLayers("drop-ins", "facade", "engine", "metrics")
        .whereLayer("health")
        .mayOnlyBeAccessedByLayers("drop-ins", "facade", "engine", "metrics", "replica")
        .whereLayer("net")
        .mayOnlyBeAccessedByLayers("drop-ins", "facade", "engine", "metrics", "replica", "health")
        .whereLayer("protocol")
        .mayOnlyBeAccessedByLayers(
            "drop-ins", "facade", "engine", "metrics", "replica", "health", "net")
        .whereLayer("read")
        .mayOnlyBeAccessedByLayers(
            "drop-ins", "facade", "engine", "metrics", "replica", "health", "net", "protocol")
        .whereLayer("counters")
        .mayOnlyBeAccessedByLayers(
            "drop-ins",
            "facade",
            "engine",
            "metrics",
            "replica",
            "health",
            "net",
            "protocol",
            "read")
        .check(CORE);
  }

  @Test
  void noPackageCycles() {
    slices().matching("io.scr.core.(**)").should().beFreeOfCycles().check(CORE);
  }

  @Test
  void thePublicApiNamesNoInternalType() {
    DescribedPredicate<JavaClass> publicApiClass =
        resideInAnyPackage(API_PACKAGES)
            .and(
                new DescribedPredicate<JavaClass>("public") {
                  @Override
                  public boolean test(JavaClass c) {
                    return c.getModifiers().contains(JavaModifier.PUBLIC);
                  }
                });
    codeUnits()
        .that()
        .areDeclaredInClassesThat(publicApiClass)
        .and()
        .arePublic()
        .should(nameNoInternalType())
        .allowEmptyShould(true)
        .check(CORE);
    fields()
        .that()
        .areDeclaredInClassesThat(publicApiClass)
        .and()
        .arePublic()
        .should(haveNoInternalType())
        .allowEmptyShould(true)
        .check(CORE);
  }

  private static boolean isInternal(JavaClass c) {
    return c.getPackageName().contains(".internal");
  }

  private static ArchCondition<JavaCodeUnit> nameNoInternalType() {
    return new ArchCondition<JavaCodeUnit>("name no type of an internal package in its signature") {
      @Override
      public void check(JavaCodeUnit unit, ConditionEvents events) {
        Set<JavaClass> named = new LinkedHashSet<>(unit.getReturnType().getAllInvolvedRawTypes());
        for (JavaType p : unit.getParameterTypes()) {
          named.addAll(p.getAllInvolvedRawTypes());
        }
        for (JavaClass t : named) {
          if (isInternal(t)) {
            events.add(
                SimpleConditionEvent.violated(
                    unit, unit.getFullName() + " names " + t.getName() + " in its signature"));
          }
        }
      }
    };
  }

  private static ArchCondition<JavaField> haveNoInternalType() {
    return new ArchCondition<JavaField>("have no type of an internal package") {
      @Override
      public void check(JavaField field, ConditionEvents events) {
        if (field.getType().getAllInvolvedRawTypes().stream().anyMatch(LayersTest::isInternal)) {
          events.add(
              SimpleConditionEvent.violated(
                  field, field.getFullName() + " is of type " + field.getRawType().getName()));
        }
      }
    };
  }
}
