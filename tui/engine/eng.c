/* eng.c: the engines' names and the empty view (engine.h). */
#include "engine.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "engine/proto/opt.h"

/* The names are the cluster file's `engine` choices, split once. */
static char names[ENG_COUNT][16];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void split_names(void)
{
    for (int k = 0; k < ENG_COUNT; k++)
        opt_format(OPT_CF_ENGINE, &(opt_value){.i = (unsigned long long)k}, names[k],
                   sizeof names[k]);
}

const char *eng_name(eng_kind k)
{
    pthread_once(&names_once, split_names);
    return k >= 0 && k < ENG_COUNT ? names[k] : "?";
}

void eng_view_init(struct eng_view *v, eng_kind k)
{
    memset(v, 0, sizeof *v);
    v->kind = k;
    v->health = ENG_UNKNOWN;
    double *nums[] = {&v->n_ctx,        &v->prompt_tps,       &v->decode_tps,
                      &v->ms_per_token, &v->requests_running, &v->requests_waiting,
                      &v->kv_usage,     &v->kv_tokens,        &v->batch,
                      &v->slots_busy,   &v->slots_total,      &v->preemptions,
                      &v->mem_bytes,    &v->latency_ms};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        *nums[i] = NAN;
    for (int h = 0; h < ENG_H_COUNT; h++)
        v->hist_p50[h] = v->hist_p95[h] = NAN;
}
