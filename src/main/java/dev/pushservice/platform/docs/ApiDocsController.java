package dev.pushservice.platform.docs;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import org.springframework.core.io.ClassPathResource;
import org.springframework.http.CacheControl;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * Serves the contract and its docs page. The contract is read once at start: it is part of the
 * build, and a jar whose contract is missing should fail to start rather than serve a broken page.
 */
@RestController
class ApiDocsController {

    static final MediaType YAML = MediaType.parseMediaType("application/yaml");

    private final byte[] contract;
    private final byte[] page;

    ApiDocsController() {
        this.contract = read("openapi.yaml");
        this.page = read("docs/index.html");
    }

    @GetMapping("/openapi.yaml")
    ResponseEntity<byte[]> contract() {
        return ResponseEntity.ok().contentType(YAML).cacheControl(CacheControl.noCache()).body(contract);
    }

    @GetMapping("/docs")
    ResponseEntity<byte[]> docs() {
        return ResponseEntity.ok()
                .contentType(new MediaType(MediaType.TEXT_HTML, StandardCharsets.UTF_8))
                .cacheControl(CacheControl.noCache())
                .body(page);
    }

    private static byte[] read(String path) {
        try (InputStream in = new ClassPathResource(path).getInputStream()) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException("Missing classpath resource " + path, e);
        }
    }
}
