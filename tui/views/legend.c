/* legend.c: the on-screen legend (legend.h). */
#include "legend.h"

static const char *const lines[] = {
    "Header",
    "nodes\tnodes up / nodes in the cluster file",
    "alerts\talerts active; the events pane's title names them",
    "ctx\tcontext position of the ring's last step",
    "tok/s\tthe ring's prefill and decode tokens/s, last 5 s",
    "TTFT\ttime to first token of the last finished request",
    "\tyellow over half alert_ttft_ms, red over it",
    "model\tthe model, and its weights' file type (Q4_K_M, f32)",
    "req\tthe request in flight: right of the events title",
    "Dashboard columns",
    "engine\tinferd, llama.cpp, vllm, ollama, openai",
    "layers\tthe node's layer range, first:last",
    "phase\tprefill, decode, or idle (no step for 2 s)",
    "busy\tmodel time / wall time, last 2 s: 40% means the node",
    "\tcomputes 40% of the time and waits 60%; idle: no step 2 s.",
    "\tYellow at alert_busy_pct and over (saturated)",
    "batch\tsequences per step over 5 s (a prefill chunk is 1)",
    "\t1.0: requests run one at a time; more: decode batches",
    "tok/s\tdecode tokens per second",
    "reqs\trequests running/waiting",
    "steps/s\tsteps per second over 5 s",
    "model ms\tp50 of the model's compute per step, last 5 s",
    "eval ms\tp50 of the rest of a step (the ring's orchestration);",
    "\tgreen within alert_eval_ratio of model ms",
    "kv%\tthe engine's KV cache in use",
    "memory\tweights, KV, other, headroom against the budget",
    "kv\tkv_bits: the KV cache's precision (16, 8, 4)",
    "prefill\tprefill_step: tokens a prefill step takes (auto)",
    "step ms\tstep time over the last minute, each row scaled to",
    "\tits own peak, the number before the sparkline",
    "Highlights",
    "EVAL>MODEL\teval ms p50 over alert_eval_ratio x model ms p50 and",
    "\tover alert_eval_floor_ms, held alert_hold samples",
    "LOW MEM\theadroom under alert_headroom_pct of the budget",
    "NaN  ACT!\tnon-finite activations; act_max far above its level",
    "FP!=\tthis stage's model fingerprint differs from the others",
    "QUEUE\tan engine's waiting requests grew for alert_queue_s",
    "KV>90% TTFT\tits KV cache over 90%; its TTFT p95 over alert_ttft_ms",
    "Config columns",
    "in steps\tthe prefill chunk the node really uses (prefill_step",
    "\tauto, or one clamped to the node's limits)",
    "Plan bars\tweights, KV at target, reserve+scratch+runtime, free",
    "node view\tbusy and batch charted per second; the memory chart",
    "\tscaled to its data, the budget in its title",
};

const char *const *legend_lines(int *n)
{
    *n = (int)(sizeof lines / sizeof lines[0]);
    return lines;
}
