package dev.pushservice.delivery;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.library.dependencies.Slice;

/**
 * The shape the delivery pipeline builds on, checked on the compiled main classes: the delivery
 * core sees only the {@link PushProvider} contract, credentials flow from the providers into app
 * settings and never back, and no HTTP error type is thrown below the web edge.
 */
@AnalyzeClasses(packages = "dev.pushservice", importOptions = ImportOption.DoNotIncludeTests.class)
class DeliveryShapeTests {

    private static final String[] PROVIDERS = {
            "dev.pushservice.delivery.apns..", "dev.pushservice.delivery.fcm..", "dev.pushservice.delivery.webpush.."};

    @ArchTest
    static final ArchRule deliveryCoreImportsNoProvider = noClasses()
            .that().resideInAnyPackage("dev.pushservice.delivery", "dev.pushservice.delivery.http")
            .should().dependOnClassesThat().resideInAnyPackage(PROVIDERS)
            .because("the delivery core sees only the PushProvider contract and picks providers through PushProviders");

    @ArchTest
    static final ArchRule appsKnowsNoProvider = noClasses()
            .that().resideInAPackage("dev.pushservice.apps..")
            .should().dependOnClassesThat().resideInAPackage("dev.pushservice.delivery..")
            .because("providers plug their settings sections and credential sources into apps, never the other way");

    @ArchTest
    static final ArchRule providersAndAppsAreFreeOfCycles = slices()
            .matching("dev.pushservice.(**)")
            .that(DescribedPredicate.describe("are apps or delivery packages",
                    (Slice slice) -> slice.getNamePart(1).matches("(apps|delivery)(\\..*)?")))
            .should().beFreeOfCycles();

    @ArchTest
    static final ArchRule deliveryThrowsNoHttpErrors = noClasses()
            .that().resideInAPackage("dev.pushservice.delivery..")
            .should().dependOnClassesThat().resideInAPackage("dev.pushservice.platform.error..")
            .because("credential checks throw platform.domain.InvalidInput; one handler maps it to a 422");
}
