/* quality.c: see quality.h. */
#include "quality.h"

#include <stdio.h>

/* json_real refuses NaN and infinities (an overflowing perplexity). */
static json_t *real(double v)
{
    json_t *j = json_real(v);
    return j ? j : json_null();
}

/* The figures into o; a set of no positions gets only its count. */
static int put_figures(json_t *o, const kld_figures *f)
{
    if (json_object_set_new(o, "positions", json_integer(f->positions)))
        return -1;
    if (f->positions == 0)
        return 0;
    return json_object_set_new(o, "kl_mean", real(f->kl_mean)) ||
           json_object_set_new(o, "kl_p99", real(f->kl_p99)) ||
           json_object_set_new(o, "kl_max", real(f->kl_max)) ||
           json_object_set_new(o, "top1", real(f->top1)) ||
           json_object_set_new(o, "ppl_ref", real(f->ppl_ref)) ||
           json_object_set_new(o, "ppl_test", real(f->ppl_test)) ||
           json_object_set_new(o, "ppl_ref_err", real(f->ppl_ref_err)) ||
           json_object_set_new(o, "ppl_test_err", real(f->ppl_test_err));
}

json_t *quality_json(const kld_plan *p, const kld_acc *a, int kv_bits, char *err, size_t errlen)
{
    kld_figures f;
    json_t *o = json_pack("{si si si si si}", "kv_bits", kv_bits, "ref_kv_bits", 32, "ctx", p->len,
                          "score_from", p->score_from, "windows", p->windows);
    json_t *buckets = json_array();
    snprintf(err, errlen, "out of memory for the quality figures");
    /* kld_acc_figures says why it failed over the message above. */
    int failed = !o || !buckets || kld_acc_figures(a, 0, p->len, &f, err, errlen) != 0 ||
                 put_figures(o, &f) != 0;
    for (int b = 0; !failed && b < kld_buckets(p); b++) {
        int from = b * p->bucket, to = from + p->bucket < p->len ? from + p->bucket : p->len;
        json_t *e = json_pack("{si si}", "from", from, "to", to);
        failed = !e || json_array_append_new(buckets, e) ||
                 kld_acc_figures(a, from, to, &f, err, errlen) != 0 || put_figures(e, &f) != 0;
    }
    if (failed) {
        json_decref(buckets);
        json_decref(o);
        return NULL;
    }
    if (json_object_set_new(o, "buckets", buckets)) {
        json_decref(o);
        return NULL;
    }
    return o;
}
