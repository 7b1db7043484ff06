package toolcall_test

import (
	"fmt"
	"strings"

	"github.com/troupe-llm/troupe/server/toolcall"
)

func ExampleParser_Parse() {
	template := `{%- for message in messages %}...{{- '<tool_call>\n{"name": "' }}...{% endfor %}`
	p := &toolcall.Parser{Format: toolcall.Detect(template)}
	r := p.Parse("<think>Weather.</think>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>")
	fmt.Println(p.Format, r.Reasoning, r.Calls[0].Name, r.Calls[0].Arguments, strings.HasPrefix(r.Calls[0].ID, "call_"))
	// Output: hermes Weather. get_weather {"city": "Paris"} true
}

func ExampleStream() {
	f, _ := toolcall.Lookup("mistral") // --tool-call-parser mistral
	n := 0
	p := &toolcall.Parser{Format: f, NewID: func() string { n++; return fmt.Sprintf("abcdefgh%d", n) }}
	st := p.NewStream()
	show := func(ds []toolcall.Delta) {
		for _, d := range ds {
			if d.Call != nil {
				fmt.Printf("call %d id=%q name=%q arguments=%q\n", d.Call.Index, d.Call.ID, d.Call.Name, d.Call.Arguments)
			} else {
				fmt.Printf("content %q\n", d.Content)
			}
		}
	}
	for _, delta := range []string{"Let me ", "look. [TOOL", "_CALLS]get_weather[AR", `GS]{"city": `, `"Nice"}`} {
		show(st.Write(delta))
	}
	show(st.Close())
	fmt.Println("tool_calls:", st.Finished())
	// Output:
	// content "Let me"
	// content " look."
	// call 0 id="abcdefgh1" name="get_weather" arguments=""
	// call 0 id="" name="" arguments="{\"city\": \"Nice\"}"
	// tool_calls: true
}
