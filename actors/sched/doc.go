// Package sched is the batcher's policy, in plain Go: which sequences run in
// the next micro-batch, which prompts are split into chunks, which sequence
// is preempted when blocks run out, and how (recompute or swap). It owns a
// kv.BlockManager for the device blocks and a kv.Pool for the device's host
// tier, and never touches device memory: block copies come out of Schedule as
// data for the device.
//
// The policy is vLLM's (v1 scheduler, in nano-vllm's size):
//   - A step has a budget of MaxNumBatchedTokens tokens and MaxNumSeqs
//     sequences. Running sequences are served first, highest priority
//     (lowest value) first, then by arrival: a decode step costs one token, a
//     prompt being prefilled takes what is left of the budget (chunked
//     prefill), so a long prompt never stalls the others' decoding.
//   - Then waiting sequences are admitted in the same order, unless a
//     preemption happened this step: new ones with a prefix-cache lookup,
//     preempted ones by recompute (the cache often still holds their
//     blocks) or by swap-in.
//   - When a running sequence needs a block and none is free, the running
//     sequence with the lowest priority, newest first, is preempted, which
//     can be the sequence itself.
//   - A sequence that could never fit (longer than the model's context, or
//     needing more blocks than the device has) is rejected by Add.
//   - When every layer of the model has a sliding window (Config.Window,
//     vLLM's sliding-window manager and llama.cpp's SWA cache), the blocks
//     a sequence's next token can no longer attend to are freed after each
//     step and left out when it is admitted again or swapped back in, so it
//     needs the blocks of one window and one step (Config.BlocksNeeded).
//
// A Scheduler is not safe for concurrent use; the batcher actor owns one per
// device. One plan is in flight at a time: Schedule, then Done or Fail.
package sched
