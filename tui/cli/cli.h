/* cli.h: the headless verbs of infertop (`infertop VERB ...`) and what
 * they share: exit codes and aligned tables. No curses here. */
#ifndef CLI_H
#define CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/proto/opt.h"
#include "engine/proto/protocol.h"
#include "store/store.h"

/* Exit codes of every verb, listed in `infertop --help`. */
enum {
    CLI_OK = 0,
    CLI_ERROR = 1,         /* the operation failed (database or output error) */
    CLI_USAGE = 2,         /* bad command line: unknown verb/option, bad date or number */
    CLI_NOT_FOUND = 3,     /* no such run, no such node */
    CLI_NO_DB = 4,         /* the database cannot be opened (path unwritable, not a
                              database, or written by a newer infertop), or stress
                              could not write to it (a full disk) */
    CLI_RUN_FAILED = 5,    /* stress: a request or leg failed (it is recorded) */
    CLI_INTERRUPTED = 130, /* stress: stopped by SIGINT/SIGTERM, recorded as aborted
                              (128 + SIGINT, as shells report it) */
};

/* Prints "infertop VERB: " + fmt (with arg) + " (see infertop VERB --help)"
 * to stderr and returns CLI_USAGE, so every verb words usage errors alike
 * (VERB "": infertop itself). */
int cli_usage_error(const char *verb, const char *fmt, const char *arg);

/* Parses a verb's command line (argv[0] is the verb) by the settings
 * table into *v; for a verb with modes, v->verb is the mode its first word
 * names ("stress growth"). Returns -1 to go on, else the exit code: CLI_OK
 * once --help is printed, CLI_USAGE once an error is (cli_usage_error). */
int cli_parse(opt_verb verb, int argc, char **argv, opt_vals *v);

/* `infertop history ...`; argv[0] is "history". Returns an exit code. */
int cli_history(int argc, char **argv);

/* `infertop status ...` and `infertop set ...` (cli_status.c); argv[0] is
 * the verb. Return an exit code. */
int cli_status(int argc, char **argv);
int cli_set(int argc, char **argv);
/* One SETTING of `infertop set` (prefill_step=N|auto, kv_bits=B) into *a;
 * -1 with err naming the problem for a bad or repeated one. */
int cli_set_parse(const char *kv, proto_set_args *a, char *err, size_t errlen);

/* `infertop nodes ...` (cli_nodes.c): node operations over SSH; argv[0]
 * is "nodes". Returns an exit code. */
int cli_nodes(int argc, char **argv);

/* `infertop stress ...` (cli_stress.c); argv[0] is "stress". Returns an
 * exit code. */
int cli_stress(int argc, char **argv);

/* `infertop metrics ...` (cli_metrics.c): the cluster's merged Prometheus
 * metrics over HTTP; argv[0] is "metrics". Returns an exit code. */
int cli_metrics(int argc, char **argv);

/* `infertop plan ...` (cli_plan.c): the layer planner; argv[0] is "plan".
 * Returns an exit code. */
int cli_plan(int argc, char **argv);

/* A run's quality measurements (cli_quality.c): a table of a line per
 * setting (its leg's decode p50 from sum beside it; sum may be NULL), and
 * with full one per depth bucket; nothing when there are none. -1 when
 * out of memory. */
int cli_quality_print(const store_quality_list *l, const store_summary *sum, int full);
/* Their JSON: an array of store_quality_json objects; NULL out of memory. */
json_t *cli_quality_json(const store_quality_list *l);

/* A text table whose columns are as wide as their widest cell; columns
 * holding only numbers are right-aligned. Either buffered (cli_table_add,
 * cli_table_print) or streamed in two passes for tables too large to keep
 * (cli_table_measure every row, then cli_table_print_header and
 * cli_table_print_row every row again). */
typedef struct cli_table cli_table;

cli_table *cli_table_new(int ncol, const char *const *headers);
void cli_table_free(cli_table *t);
/* Copies the cells (NULL cells print as "-"); -1 when out of memory. */
int cli_table_add(cli_table *t, const char *const *cells);
void cli_table_print(const cli_table *t, FILE *out);
void cli_table_measure(cli_table *t, const char *const *cells);
void cli_table_print_header(const cli_table *t, FILE *out);
void cli_table_print_row(const cli_table *t, const char *const *cells, FILE *out);

#endif
