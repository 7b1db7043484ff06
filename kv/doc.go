// Package kv holds the paged key/value cache and the bookkeeping that hands
// its blocks to sequences:
//
//   - Cache: the physical K/V storage of one device, NumBlocks blocks of
//     BlockSize token slots per layer, each slot one token's keys and values
//     stored as f16 or Q8_0 (CacheType).
//   - BlockManager: the runtime's block manager (vLLM's design, in the size of
//     nano-vllm's block_manager.py). One block table per sequence, built as
//     the scheduler schedules its tokens (AllocateUpTo for a prompt or its
//     first chunk, AppendTokens for later chunks and decode tokens, Free), and
//     automatic prefix caching: full blocks are found by a chain hash of the
//     prefix they end (BlockHash), shared and reference counted, and kept
//     after Free until evicted, least recently freed first. For a model
//     whose every layer has a sliding window, FreeBefore frees a sequence's
//     blocks behind it (NoBlock entries; WindowStart gives the bound) and
//     AllocateFrom leaves them out of a new table.
//   - Pool: a plain free list of block ids, for tests and tools that run
//     sequences without the runtime.
//
// Concurrency: a Cache is owned by one device; it is written by that device's
// forward pass only. A BlockManager is owned by one actor (the batcher, one
// per device); neither it nor a Pool is safe for concurrent use.
package kv
