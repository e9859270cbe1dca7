package dev.pushservice.support;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.logging.LogEntry;
import org.openqa.selenium.logging.LogType;
import org.openqa.selenium.logging.LoggingPreferences;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * A headless Debian Chromium driven by Selenium through Debian's chromedriver: both paths are given
 * explicitly (the driver on the service, the browser in the options), so Selenium Manager is never
 * asked to find or download either. Each instance has its own profile directory under the one given
 * (a fresh one per test class), and records the browser console (all levels) so a test can check
 * that a page raised no Content-Security-Policy violation and no script error.
 */
public final class Chromium implements AutoCloseable {

    public static final Path BINARY = Path.of("/usr/bin/chromium");
    public static final Path DRIVER = Path.of("/usr/bin/chromedriver");

    /** A phone (iPhone X/11 Pro logical size) and a laptop. */
    public static final Dimension PHONE = new Dimension(375, 812);
    public static final Dimension LAPTOP = new Dimension(1280, 800);

    public final ChromeDriver driver;
    private final ChromeDriverService service;

    /**
     * Fails (never skips) when Debian's chromium or chromium-driver is not installed: a run that asked
     * for browser tests must not pass without them.
     */
    public static void requireInstalled() {
        for (Path p : List.of(BINARY, DRIVER)) {
            if (!Files.isExecutable(p)) {
                throw new AssertionError(p + " is missing: the browser tests need Debian's chromium and chromium-driver "
                        + "(apt-get install -y chromium chromium-driver)");
            }
        }
    }

    /** Starts a browser whose profile lives in a new directory under {@code profiles}, at {@code size}. */
    public Chromium(Path profiles, Dimension size) {
        requireInstalled();
        try {
            Path profile = Files.createTempDirectory(Files.createDirectories(profiles), "chromium-");
            ChromeOptions options = new ChromeOptions();
            options.setBinary(BINARY.toFile());
            options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
                    "--disable-quic", "--disable-extensions", "--lang=en-GB",
                    "--user-data-dir=" + profile, "--window-size=" + size.width + "," + size.height);
            LoggingPreferences logs = new LoggingPreferences();
            logs.enable(LogType.BROWSER, Level.ALL);
            options.setCapability("goog:loggingPrefs", logs);
            service = new ChromeDriverService.Builder().usingDriverExecutable(new File(DRIVER.toString()))
                    .usingAnyFreePort().withLogOutput(java.io.OutputStream.nullOutputStream()).build();
            driver = new ChromeDriver(service, options);
            driver.manage().timeouts().pageLoadTimeout(Duration.ofSeconds(30)).scriptTimeout(Duration.ofSeconds(15));
            resize(size);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Sets the viewport (the page's innerWidth × innerHeight) to {@code size}. */
    public void resize(Dimension size) {
        driver.manage().window().setSize(size);
        // the window may be a little larger than its viewport: correct by the difference
        long w = ((Number) js("return window.innerWidth")).longValue();
        long h = ((Number) js("return window.innerHeight")).longValue();
        if (w != size.width || h != size.height) {
            driver.manage().window().setSize(new Dimension(size.width * 2 - (int) w, size.height * 2 - (int) h));
        }
    }

    public Object js(String script, Object... args) {
        return ((JavascriptExecutor) driver).executeScript(script, args);
    }

    public WebDriverWait waiting() {
        return new WebDriverWait(driver, Duration.ofSeconds(15));
    }

    /**
     * The console entries since the last call that show a broken page: every SEVERE entry (script
     * errors, failed loads) and every entry about the Content-Security-Policy (a refused inline script
     * or style, a refused source), whatever its level.
     */
    public List<String> consoleProblems() {
        return driver.manage().logs().get(LogType.BROWSER).getAll().stream()
                .filter(e -> e.getLevel().intValue() >= Level.SEVERE.intValue()
                        || e.getMessage().contains("Content Security Policy") || e.getMessage().contains("Content-Security-Policy"))
                .map(LogEntry::toString).toList();
    }

    /** The document is no wider than the viewport: no horizontal scrollbar on the page itself. */
    public Map<String, Long> widths() {
        @SuppressWarnings("unchecked")
        Map<String, Long> w = (Map<String, Long>) js(
                "return {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth}");
        return w;
    }

    public void screenshot(Path png) {
        try {
            Files.createDirectories(png.toAbsolutePath().getParent());
            Files.write(png, driver.getScreenshotAs(OutputType.BYTES));
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * A full-page screenshot: the viewport made as tall as the document for the shot, then restored
     * (headless Chromium draws what the window holds).
     */
    public void fullPageScreenshot(Path png, Dimension size) {
        long height = ((Number) js("return Math.max(document.documentElement.scrollHeight, document.body.scrollHeight)")).longValue();
        resize(new Dimension(size.width, (int) Math.max(size.height, Math.min(height, 6000))));
        screenshot(png);
        resize(size);
    }

    public WebDriver get(String url) {
        driver.get(url);
        return driver;
    }

    @Override
    public void close() {
        try {
            driver.quit();
        } finally {
            service.stop();
        }
    }
}
