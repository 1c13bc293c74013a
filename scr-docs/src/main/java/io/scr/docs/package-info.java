/**
 * Documentation generated from code: {@link io.scr.docs.ConfigurationReference} renders the client
 * ({@code io.scr.core.ScrKeys}) and DataNode shim ({@code io.scr.shim.ScrShimKeys}) key catalogues
 * to {@code docs/configuration.md}; a test in this module fails when the committed file differs.
 * Nothing here ships to a cluster.
 */
package io.scr.docs;
