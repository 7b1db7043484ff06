package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/troupe-llm/troupe/model/lora"
	"github.com/troupe-llm/troupe/server"
)

// vLLM's --lora-modules: adapters served as model names over the base
// model (server.Manager's runtime adapters, from the start), and its
// --max-lora-rank, which refuses adapters of a larger rank.

// loraModulesVar defines --lora-modules on fs, appending to list.
func loraModulesVar(fs *flag.FlagSet, list *[]server.LoRAModule) {
	fs.Var(loraModulesFlag{list}, "lora-modules", "LoRA adapters served as model names (vLLM's): `NAME=PATH`, repeatable, comma- or space-separated, or vLLM's JSON {\"name\",\"path\",\"base_model_name\"}; a request naming NAME runs the model with the adapter at scale 1 (on the CPU device)")
}

// loraModulesFlag is --lora-modules.
type loraModulesFlag struct{ list *[]server.LoRAModule }

func (f loraModulesFlag) String() string {
	if f.list == nil {
		return ""
	}
	var parts []string
	for _, m := range *f.list {
		parts = append(parts, m.Name+"="+m.Path)
	}
	return strings.Join(parts, ",")
}

func (f loraModulesFlag) Set(v string) error {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "{") { // vLLM's JSON form, one object or several joined by commas
		var objs []struct {
			Name string `json:"name"`
			Path string `json:"path"`
			Base string `json:"base_model_name"`
		}
		dec := json.NewDecoder(strings.NewReader("[" + v + "]"))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&objs); err != nil {
			return fmt.Errorf("want NAME=PATH or {\"name\",\"path\",\"base_model_name\"}: %v", err)
		}
		for _, o := range objs {
			if o.Name == "" || o.Path == "" {
				return errors.New("the JSON form needs name and path")
			}
			*f.list = append(*f.list, server.LoRAModule{Name: o.Name, Path: o.Path, Base: o.Base})
		}
		return nil
	}
	items := splitList(v)
	if len(items) == 0 {
		return errors.New("want NAME=PATH")
	}
	for _, item := range items {
		name, path, ok := strings.Cut(item, "=")
		if !ok || name == "" || path == "" {
			return fmt.Errorf("%q: want NAME=PATH", item)
		}
		*f.list = append(*f.list, server.LoRAModule{Name: name, Path: path})
	}
	return nil
}

// maxRankFlag is vLLM's --max-lora-rank: adapters of a larger rank are
// refused when they load.
type maxRankFlag struct{ n *int }

func (f maxRankFlag) String() string { return "" }
func (f maxRankFlag) peerOf() string { return "" }
func (f maxRankFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return errors.New("want a rank of at least 1")
	}
	*f.n = n
	return nil
}

// adapterRank is the largest rank of a's pairs.
func adapterRank(a *lora.Adapter) int {
	r := 0
	for _, p := range a.Weights {
		r = max(r, p.Rank())
	}
	return r
}
