package dev.pushservice;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noMethods;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.lang.ArchRule;
import org.springframework.transaction.annotation.Transactional;

/**
 * The layering every feature follows (DESIGN.md section 5): controller (HTTP only) → service
 * (rules, transactions, domain exceptions) → repository (all SQL). Checked on the compiled main
 * classes, so a shortcut fails the build instead of waiting for a review.
 */
@AnalyzeClasses(packages = "dev.pushservice", importOptions = ImportOption.DoNotIncludeTests.class)
class LayeringTests {

    /**
     * Where SQL may live besides repositories: infrastructure that talks to the database as such
     * (the pool and embedded server, db-scheduler's tables and workers, the health probes' own pool).
     */
    private static final String[] SQL_INFRASTRUCTURE = {
            "dev.pushservice.platform.db..", "dev.pushservice.platform.jobs..", "dev.pushservice.platform.health.."};

    @ArchTest
    static final ArchRule controllersNeverTouchRepositories = noClasses()
            .that().haveSimpleNameEndingWith("Controller")
            .should().dependOnClassesThat().haveSimpleNameEndingWith("Repository")
            .because("controllers do HTTP only; they reach data through a service");

    @ArchTest
    static final ArchRule controllersHoldNoTransactions = noMethods()
            .that().areDeclaredInClassesThat().haveSimpleNameEndingWith("Controller")
            .should().beAnnotatedWith(Transactional.class)
            .because("transactions belong to services");

    @ArchTest
    static final ArchRule sqlOnlyInRepositories = noClasses()
            .that().haveSimpleNameNotEndingWith("Repository")
            .and().resideOutsideOfPackages(SQL_INFRASTRUCTURE)
            .should().dependOnClassesThat().resideInAPackage("org.springframework.jdbc..")
            .orShould().dependOnClassesThat().haveFullyQualifiedName("javax.sql.DataSource")
            .because("all SQL lives in a feature's repository");

    @ArchTest
    static final ArchRule httpErrorsOnlyAtTheEdge = noClasses()
            .that().resideOutsideOfPackages("dev.pushservice.platform.web..", "dev.pushservice.platform.error..")
            .should().dependOnClassesThat().haveFullyQualifiedName("dev.pushservice.platform.error.ApiException")
            .because("domain code throws platform.domain exceptions; ApiException is for the request-path filters");

    /** Slices are the top-level packages (features, {@code platform}, {@code delivery}); cycles inside one are not seen here. */
    @ArchTest
    static final ArchRule featuresAreFreeOfCycles = slices()
            .matching("dev.pushservice.(*)..")
            .should().beFreeOfCycles();

    /**
     * Every package on its own: {@code platform.error} and {@code platform.web}, {@code delivery}
     * and its providers, {@code apps} and {@code apps.cli} may depend one way only.
     */
    @ArchTest
    static final ArchRule packagesAreFreeOfCycles = slices()
            .matching("dev.pushservice.(**)")
            .should().beFreeOfCycles();

    /** The entry point depends on the packages; none of them on it (the admin CLI gets the class passed in). */
    @ArchTest
    static final ArchRule nothingDependsOnTheEntryPoint = noClasses()
            .that().resideOutsideOfPackage("dev.pushservice")
            .should().dependOnClassesThat().haveFullyQualifiedName("dev.pushservice.PushServiceApplication")
            .because("the application class and the packages it starts must not form a cycle");
}
