// Package backend holds the devices the runtime (package actors) runs on:
// CPU, a model.Model over a kv.Cache in memory, and CUDA, gpu on an
// NVIDIA GPU. Both implement actors.Backend, the interface the runtime
// defines; a program wires them in through actors.Config.NewBackend, usually
// with For:
//
//	rt, err := actors.Start(system, m, actors.Config{NewBackend: backend.For(m, backend.DeviceCPU)})
//
// So the runtime itself imports neither gpu nor gpu/cuda.
//
// Concurrency: a backend is used by one device actor at a time.
package backend
