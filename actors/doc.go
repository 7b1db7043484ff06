// Package actors is troupe's runtime: protoactor-go actors that serve
// generation requests with continuous batching over paged KV blocks, and the
// small public API a Go program uses to run it inside its own actor system
// (Start, Runtime.Stream, Runtime.Generate, Runtime.Embed, Runtime.Stop).
// A program without an actor system of its own, or that wants chat
// templates, tools and structured output rather than token ids, uses
// package troupe (troupe.Open) instead.
//
// The actors, one per file (the repository's ARCHITECTURE.md tells the
// whole story):
//
//	request  (request.go)   one client request: spawns a sequence per choice,
//	                        relays their output, counts usage
//	sequence (sequence.go)  one choice: asks the batcher for steps, decodes
//	                        text, stops on stop strings; under a grammar, waits
//	                        for it, then sends each step's token mask
//	batcher  (batcher.go)   the schedule (actors/sched) of each device: fires a
//	                        micro-batch on the size or window trigger; preempts,
//	                        swaps, re-queues a failed device's step
//	device   (device.go)    a Backend's weights and KV blocks: block copies,
//	                        forward pass, sampling
//	compiler (compiler.go)  compiles grammars (grammar) on goroutines of
//	                        its own, cached: nothing else ever compiles
//
// A device runs a Backend, the interface defined here; the CPU and CUDA
// backends are in package actors/backend, and a program chooses them through
// Config.NewBackend (or passes its own in Config.Backends).
//
// The messages between them are plain data from package messages. Who talks
// to whom is wired at spawn time: a request's sequences are its children,
// the devices are the batcher's children and the batcher supervises them.
//
// Concurrency: each actor's state is touched only by its Receive. The
// Runtime's methods are safe for concurrent use. Nothing inside an actor
// blocks on another actor: futures are used only at the edge (Runtime.Stats,
// Runtime.Stop, Runtime.CompileGrammar).
package actors
