/**
 * Users (named by the customer's {@code external_user_id}, or anonymous for devices registered
 * without one), their tags and properties, and aliases. Tags are a user's; a device is selected by
 * its user's tags. Internal ids never leave this service. Users read their devices through
 * {@code devices.DeviceService}; the devices feature never depends on this one.
 */
package dev.pushservice.users;
