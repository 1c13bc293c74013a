/**
 * The type of every scr configuration key, {@link io.scr.config.ConfigKey}: name, type, default and
 * description, read from any name-to-value lookup. Hadoop-free, so the client (scr-core) and the
 * DataNode shim, which share no other module of configuration, define their catalogues with the
 * same type, and the reference documentation is generated from both the same way.
 */
package io.scr.config;
