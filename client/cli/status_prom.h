/* status_prom.h - `depfs status --prometheus`: the cluster status as
 * OpenMetrics text, for node_exporter's textfile collector and Grafana.
 *
 * Every family has its # HELP and # TYPE before its samples, which are
 * contiguous; names match [a-zA-Z_:][a-zA-Z0-9_:]*, label values are
 * escaped; counters' samples end in _total; the text ends with "# EOF".
 * Only gauge and counter types: the textfile collector reads the
 * Prometheus text format, which knows no stateset or info (it takes a
 * counter's _total samples as untyped series of the same values). */
#ifndef DEPFS_CLI_STATUS_PROM_H
#define DEPFS_CLI_STATUS_PROM_H
#include <stdio.h>

#include "depfs.h"

/* The n servers of v, one labelled sample per server and metric
 * ({id="3",address="host:port"}), then the cluster's server counts by
 * state and the MDS's purge queue. */
void status_print_prometheus(FILE *out, const depfs_server_status *v, unsigned n,
                             const depfs_purge_status *purge);

#endif
