/**
 * The public API of the scr client: {@link io.scr.core.ScrClient} (the engine shared per client
 * context), {@link io.scr.core.ReplicaLease} (a leased open replica) and the configuration
 * catalogue {@link io.scr.core.ScrKeys}. Everything else in scr-core is reached through these.
 */
package io.scr.core;
