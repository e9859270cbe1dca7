/**
 * The one home of every input rule the API, the filter parser and the admin CLI share: field limits
 * ({@link Limits}: the spec's "Limits" table and the project's own documented limits), the
 * control-character and key-character rules ({@link TextRules}), locales ({@link Locales}), time
 * zones ({@link TimeZones}), the storable range of timestamps ({@link Timestamps}), the platforms ({@link Platform}) and event names ({@link EventNames}).
 *
 * <p>A route never re-types a number, a pattern or a list of values that lives here; its messages
 * are built from these constants, so a limit and the message that states it cannot drift apart.
 * {@code openapi.yaml} states the same limits for clients; {@code LimitsMatchContractTests} fails
 * when the two disagree. This package depends on nothing else in the project, so every feature and
 * the delivery core may use it.
 */
package dev.pushservice.platform.rules;
