/**
 * Documentation generated from code and results: {@link io.scr.docs.ConfigurationReference} renders
 * the client ({@code io.scr.core.ScrKeys}) and DataNode shim ({@code io.scr.shim.ScrShimKeys}) key
 * catalogues to {@code docs/configuration.md}; {@link io.scr.docs.SupportedVersions} renders the
 * version matrix's last results ({@code docs/matrix-results.tsv}, written by {@code .ci/matrix})
 * into the "Supported versions" table of {@code docs/user-guide.md}. A test in this module fails
 * when a committed file differs from what it renders. Nothing here ships to a cluster.
 */
package io.scr.docs;
