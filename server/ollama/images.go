package ollama

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// ollamaImages decodes an images field (a list of base64 files) into p's
// Images, each named field[k], and returns content with an image marker
// per image in front of it, as Ollama puts a message's images before its
// text.
func ollamaImages(p *pipeline.Request, raw json.RawMessage, field, content string) (string, *pipeline.Error) {
	if !hasValue(raw) {
		return content, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", pipeline.Errorf(field, "%s: expected a list of base64-encoded images", field)
	}
	var b strings.Builder
	for k, s := range list {
		f := fmt.Sprintf("%s[%d]", field, k)
		data, fe := pipeline.DecodeImageBase64(s, f)
		if fe != nil {
			return "", pipeline.Errorf(f, "%s", fe.Error())
		}
		p.Images = append(p.Images, pipeline.Image{Data: data, Field: f})
		b.WriteString(pipeline.ImageMarker)
	}
	return b.String() + content, nil
}
