package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/vision"
	"github.com/troupe-llm/troupe/server"
)

// mmprojVar defines --mmproj (llama-server's): the multimodal projector
// that lets the model take images.
func mmprojVar(fs *flag.FlagSet, path *string) {
	fs.StringVar(path, "mmproj", "", "a multimodal projector `FILE` (llama.cpp's mmproj GGUF) for the model: requests may carry images; the image encoder runs on the CPU, the model on its --device")
}

// mediaVars defines serve's bounds on images.
func mediaVars(fs *flag.FlagSet, m *server.MediaConfig) {
	fs.IntVar(&m.MaxImages, "max-images", 0, "the most images one request may carry (0: 8)")
	fs.Var(listFlag{&m.AllowedDomains}, "allowed-media-domains", "hosts whose http(s) image URLs the server fetches, comma-separated (.example.com: its subdomains too; *: any); private and loopback addresses stay refused. Default: none (data: URLs only)")
}

// encoderPlacement is the line said once at load when a projector is
// loaded and the model runs on device (the runtime's Device()): the image
// encoder has no CUDA kernels, so on a GPU it runs on the CPU (its rows are
// copied to the device with each step); "" where there is nothing to say.
func encoderPlacement(encoder actors.ImageEncoder, device string) string {
	if encoder == nil || device != backend.DeviceCUDA {
		return ""
	}
	return "--mmproj: the image encoder runs on the CPU (the CUDA backend has no vision kernels); the model runs on the GPU, image rows copied to it"
}

// openProjector opens --mmproj for m (nil without the flag) and checks
// that its rows are m's embedding width: a one-line startup error when
// not. The returned func closes it.
func openProjector(path string, m *model.Model) (actors.ImageEncoder, func(), error) {
	if path == "" {
		return nil, func() {}, nil
	}
	p, err := vision.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--mmproj %s: %w", path, err)
	}
	closeIt := func() {
		if c, ok := any(p).(interface{ Close() error }); ok {
			c.Close()
		}
	}
	if err := p.Check(m.Config.InputDim()); err != nil { // Qwen3-VL: wider, the deepstack slices
		closeIt()
		return nil, nil, fmt.Errorf("--mmproj %s (%s): %w", path, p.Type(), err)
	}
	return p, closeIt, nil
}

// imagePrompt is troupe run's prompt with --image files: the text split
// on the image marker (<__media__>; without one the images go first), each
// piece tokenized (special tokens parsed; BOS on the first when addBOS),
// each image's chunks spliced in, a placeholder token per embedding row.
func imagePrompt(rt *actors.Runtime, prompt string, files []string, addBOS bool) ([]int32, []messages.ImageInput, error) {
	const marker = "<__media__>"
	if !strings.Contains(prompt, marker) {
		prompt = strings.Repeat(marker, len(files)) + prompt
	}
	pieces := strings.Split(prompt, marker)
	if len(pieces)-1 != len(files) {
		return nil, nil, usageError{fmt.Sprintf("the prompt has %d image markers (%s) for %d --image files", len(pieces)-1, marker, len(files))}
	}
	var ids []int32
	var spans []messages.ImageInput
	for i, piece := range pieces {
		t, err := rt.TokenizeText(piece, i == 0 && addBOS, true)
		if err != nil {
			return nil, nil, err
		}
		ids = append(ids, t...)
		if i == len(files) {
			break
		}
		data, err := os.ReadFile(files[i])
		if err != nil {
			return nil, nil, err
		}
		im, err := rt.PrepareImage(data)
		if err != nil {
			return nil, nil, fmt.Errorf("--image %s: %w", files[i], err)
		}
		row := 0
		for _, c := range im.Chunks {
			if c.Rows == 0 {
				t, err := rt.TokenizeText(c.Text, false, true)
				if err != nil {
					return nil, nil, err
				}
				ids = append(ids, t...)
				continue
			}
			spans = append(spans, messages.ImageInput{Pos: len(ids), Rows: c.Rows, Hash: im.Hash, Row: row, Image: im})
			row += c.Rows
			ids = append(ids, make([]int32, c.Rows)...) // placeholder id 0: the rows replace it
		}
	}
	return ids, spans, nil
}
