/**
 * The admin CLI, {@code java -jar push-service.jar admin …}: organisations, apps and API keys,
 * run against the configured database without starting the web server, the scheduler or the
 * first-start bootstrap. Output goes to stdout (text, or JSON with {@code --json}); errors are one
 * line on stderr, never a stack trace. Exit status: 0 done, 1 not found or refused (including an
 * unreachable database), 2 usage error. Raw keys are printed only by the command that issues them.
 */
package dev.pushservice.apps.cli;
