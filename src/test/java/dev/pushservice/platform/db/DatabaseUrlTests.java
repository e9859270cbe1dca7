package dev.pushservice.platform.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class DatabaseUrlTests {

    @Test
    void postgresUrlBecomesJdbcUrlWithSeparateCredentials() {
        DatabaseUrl url = DatabaseUrl.parse("postgres://push:s3cret@db.example.com:5433/pushdb?sslmode=require");
        assertThat(url.jdbcUrl()).isEqualTo("jdbc:postgresql://db.example.com:5433/pushdb?sslmode=require");
        assertThat(url.username()).isEqualTo("push");
        assertThat(url.password()).isEqualTo("s3cret");
    }

    @Test
    void postgresqlSchemeAndMissingPortAreAccepted() {
        DatabaseUrl url = DatabaseUrl.parse("postgresql://push@localhost/pushdb");
        assertThat(url.jdbcUrl()).isEqualTo("jdbc:postgresql://localhost/pushdb");
        assertThat(url.username()).isEqualTo("push");
        assertThat(url.password()).isNull();
    }

    @Test
    void percentEncodedCredentialsAreDecoded() {
        DatabaseUrl url = DatabaseUrl.parse("postgres://us%40er:p%40ss%3Aw%2Fd@10.0.0.5:5432/db");
        assertThat(url.username()).isEqualTo("us@er");
        assertThat(url.password()).isEqualTo("p@ss:w/d");
        assertThat(url.jdbcUrl()).isEqualTo("jdbc:postgresql://10.0.0.5:5432/db");
    }

    @Test
    void missingDatabaseNameMeansPostgres() {
        assertThat(DatabaseUrl.parse("postgres://u:p@h:5432").jdbcUrl()).isEqualTo("jdbc:postgresql://h:5432/postgres");
    }

    @Test
    void jdbcUrlIsPassedThrough() {
        DatabaseUrl url = DatabaseUrl.parse("  jdbc:postgresql://h:5432/db?user=u&password=p  ");
        assertThat(url.jdbcUrl()).isEqualTo("jdbc:postgresql://h:5432/db?user=u&password=p");
        assertThat(url.username()).isNull();
        assertThat(url.password()).isNull();
    }

    @Test
    void passwordsNeverAppearInToString() {
        assertThat(DatabaseUrl.parse("postgres://u:topsecret@h/db").toString()).doesNotContain("topsecret");
        assertThat(DatabaseUrl.parse("jdbc:postgresql://h/db?user=u&password=topsecret").toString())
                .doesNotContain("topsecret").contains("password=***");
    }

    @Test
    void otherSchemesAndBlanksAreRefused() {
        assertThatThrownBy(() -> DatabaseUrl.parse("mysql://u:p@h/db")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("postgres://");
        assertThatThrownBy(() -> DatabaseUrl.parse(" ")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> DatabaseUrl.parse("postgres:///db")).isInstanceOf(IllegalArgumentException.class);
    }
}
