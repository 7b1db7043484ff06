package backend_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/troupetest"
)

// Choose the device at start: DeviceAuto runs on a CUDA GPU when the
// driver, a device and the model's load onto it all succeed, and on the CPU
// otherwise; Fallback says why the GPU was not used. (The tiny model comes
// from troupetest; a program opens its own GGUF file.)
func ExampleSelector() {
	dir, err := os.MkdirTemp("", "troupe-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tiny.gguf")
	if err := troupetest.WriteTinyModel(path, 1); err != nil {
		fmt.Println(err)
		return
	}
	m, err := model.Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()

	system := actor.NewActorSystem()
	defer system.Shutdown()
	sel := backend.NewSelector(m, backend.DeviceCPU) // or DeviceAuto, DeviceCUDA
	rt, err := actors.Start(system, m, actors.Config{NewBackend: sel.New})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Stop(5 * time.Second)
	fmt.Println("running on", sel.Device(), "fallback:", sel.Fallback())
	// Output:
	// running on cpu fallback: <nil>
}
