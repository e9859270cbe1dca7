/**
 * Templates: reusable, versioned notification content with {@code {{ … }}} placeholders, and the
 * one renderer that fills them per recipient.
 *
 * <p>Invariants: every change to a template (create, PATCH of any field, archive) appends an
 * immutable row to {@code template_versions}; {@code templates.version} names the current one.
 * Stored content always parses ({@link dev.pushservice.templates.CompiledText} checks every string
 * at save time). Other features get content only through
 * {@link dev.pushservice.templates.TemplateService#forNotification} and render it with
 * {@link dev.pushservice.templates.Renderer}; parsing and rendering need no Spring.
 */
package dev.pushservice.templates;
