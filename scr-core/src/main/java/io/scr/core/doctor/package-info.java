/**
 * {@code scr doctor}: "is short-circuit working, and why not" in one command. {@link
 * io.scr.core.doctor.Doctor} reads the Hadoop configuration a client on this host would read and
 * runs each {@link io.scr.core.doctor.Check} (socket path security, the socket answers and passes
 * fds, shared memory, fd limit against the cache, cache size against the cluster, masked keys,
 * libhadoop), each giving a {@link io.scr.core.doctor.Finding} with a status, what it found and the
 * fix. Needs only the Hadoop client classpath and scr-core.
 */
package io.scr.core.doctor;
