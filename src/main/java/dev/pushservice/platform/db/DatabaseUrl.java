package dev.pushservice.platform.db;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;

/**
 * A PostgreSQL location as JDBC needs it. Accepts the two spellings operators paste:
 * {@code postgres://user:pass@host:port/db?sslmode=require} (Heroku, Render, Fly, RDS consoles)
 * and {@code jdbc:postgresql://host:port/db?user=…}.
 *
 * @param jdbcUrl URL without credentials (they never reach a log line through it)
 * @param username null when the URL carries none
 * @param password null when the URL carries none
 */
public record DatabaseUrl(String jdbcUrl, String username, String password) {

    public static DatabaseUrl parse(String raw) {
        if (raw == null || raw.isBlank()) {
            throw new IllegalArgumentException("DATABASE_URL is empty");
        }
        String url = raw.trim();
        if (url.startsWith("jdbc:postgresql:")) {
            return new DatabaseUrl(url, null, null);
        }
        if (!url.startsWith("postgres://") && !url.startsWith("postgresql://")) {
            throw new IllegalArgumentException(
                    "DATABASE_URL must start with postgres://, postgresql:// or jdbc:postgresql://");
        }
        URI uri;
        try {
            uri = URI.create(url);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("DATABASE_URL is not a valid URL");
        }
        if (uri.getHost() == null) {
            throw new IllegalArgumentException("DATABASE_URL has no host");
        }
        String user = null;
        String password = null;
        String userInfo = uri.getRawUserInfo();
        if (userInfo != null) {
            int colon = userInfo.indexOf(':');
            user = decode(colon < 0 ? userInfo : userInfo.substring(0, colon));
            password = colon < 0 ? null : decode(userInfo.substring(colon + 1));
        }
        String path = uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/postgres" : uri.getRawPath();
        StringBuilder jdbc = new StringBuilder("jdbc:postgresql://").append(uri.getHost());
        if (uri.getPort() > 0) jdbc.append(':').append(uri.getPort());
        jdbc.append(path);
        if (uri.getRawQuery() != null) jdbc.append('?').append(uri.getRawQuery());
        return new DatabaseUrl(jdbc.toString(), user, password);
    }

    private static String decode(String s) {
        return URLDecoder.decode(s, StandardCharsets.UTF_8);
    }

    @Override
    public String toString() {
        return "DatabaseUrl[" + jdbcUrl.replaceAll("password=[^&]*", "password=***") + "]";
    }
}
