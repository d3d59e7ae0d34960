package io.kafkarec.jvm.apicurio;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import java.util.List;
import javax.enterprise.inject.Produces;
import javax.inject.Singleton;

/**
 * The index of the properties Apicurio's admin API may change at run time, empty. Apicurio's
 * config-index extension builds it at Quarkus's build step, but that extension's build half is
 * not on Maven Central (jvm/apicurio/pom.xml); with none listed, every property keeps the value
 * it was started with, which is all the tests need.
 */
public class NoDynamicConfig {
    @Produces
    @Singleton
    DynamicConfigPropertyList none() {
        return new DynamicConfigPropertyList(List.of());
    }
}
