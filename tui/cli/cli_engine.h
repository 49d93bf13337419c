/* cli_engine.h: one node of any engine as `status --json` and `metrics`
 * show it (the fields issue 24 names, the same for every engine).
 *
 * An HTTP engine's node is its poll (engine.h's struct eng_view); an
 * inferd node's status reply is read into the same struct, so that both
 * verbs have one list of fields. A number NaN is "not reported": null in
 * JSON, no series in the exposition.
 */
#ifndef CLI_ENGINE_H
#define CLI_ENGINE_H

#include <stddef.h>

#include <jansson.h>

#include "tui/engine/engine.h"

/* One number of the view: its JSON key, and its Prometheus name
 * (infertop_node_<metric>), help and unit (the view's milliseconds are
 * exported as seconds, as Prometheus wants). */
struct cli_eng_field {
    const char *json, *metric, *help;
    size_t offset; /* of the double in struct eng_view */
    double scale;  /* metric = view * scale */
};

extern const struct cli_eng_field cli_eng_fields[];
extern const int cli_eng_nfields;

static inline double cli_eng_value(const struct eng_view *v, const struct cli_eng_field *f)
{
    return *(const double *)((const char *)v + f->offset);
}

/* "up", "loading", "error", "down" ("down" before the first poll). */
const char *cli_eng_state(eng_health h);

/* An inferd node's status reply (its results object; NULL: no answer) as
 * a view of kind ENG_INFERD: health, model, version, requests running and
 * waiting; what the reply does not carry stays NaN. */
void cli_eng_from_status(const json_t *status, struct eng_view *v);

#endif
