// Package kv holds the paged key/value cache: physical blocks of BlockSize
// token slots per layer (Cache), each slot one token's keys and values
// stored as f16 or Q8_0 (CacheType), and the bookkeeping that hands blocks to
// sequences (Pool, a plain free list; the prefix-caching block manager of the
// runtime builds on the same block ids).
//
// Concurrency: a Cache is owned by one device; it is written by that device's
// forward pass only. A Pool is not safe for concurrent use.
package kv
