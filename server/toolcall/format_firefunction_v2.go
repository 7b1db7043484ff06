package toolcall

import (
	"encoding/json"
	"time"
)

func init() {
	register(&format{name: FireFunction2, rank: 130,
		aliases: []string{"firefunction"},
		detect:  [][]string{{" functools["}},
		markers: []string{"functools"},
		blocks:  []block{jsonArray("functools", inContent)},
		calls:   fixed(jsonCalls("functools[", ", ", "]", jsonCall("name", "arguments"))),
		templateVars: func(tools []json.RawMessage, now time.Time) map[string]string {
			functions := "" // the tools as indented JSON
			if len(tools) > 0 {
				if b, err := json.MarshalIndent(tools, "", "  "); err == nil {
					functions = string(b)
				}
			}
			return map[string]string{"functions": functions, "datetime": now.UTC().Format("Jan 02 2006 15:04:05 GMT")}
		},
	})
}
