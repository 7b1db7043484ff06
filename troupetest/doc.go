// Package troupetest helps programs that embed troupe test themselves
// without downloading a model: WriteTinyModel writes a small random-weight
// model with a byte-level vocabulary and a chat template that calls tools,
// and Script is a device backend that answers from a script, so a test
// drives the whole request pipeline (chat template, tool-call parsing,
// structured output, stop strings) to a known output.
//
// A tiny model's text is meaningless; its use is that it loads in
// milliseconds and exercises every code path a real model does.
//
// Concurrency: WriteTinyModel is safe for concurrent use with distinct
// paths. A Script's methods are safe for concurrent use.
package troupetest
