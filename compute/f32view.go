package compute

import "unsafe"

// f32View reinterprets little-endian float32 bytes as []float32 without a
// copy. b must be 4-byte aligned (GGUF and safetensors data is).
func f32View(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// F32View is f32View for callers outside the package: a tensor of type F32 as
// float32 values.
func F32View(b []byte) []float32 { return f32View(b) }
