package openai

import (
	"fmt"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// imageURL is an image_url content part's value.
type imageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail"` // low, high or auto: accepted; the projector decides the resolution
}

// imagePart is an image_url part of a message's content: its index among
// the parts.
type imagePart struct {
	index int
	url   *imageURL
}

// images are the conversation's images in order, each named by its part
// (messages[i].content[j]); a data: URL is decoded here, an http(s) one
// left for the server to fetch where allowed.
func (ms Messages) images() ([]pipeline.Image, *pipeline.Error) {
	var out []pipeline.Image
	for i, m := range ms {
		for _, p := range m.Content.images {
			field := fmt.Sprintf("messages[%d].content[%d]", i, p.index)
			if p.url == nil || p.url.URL == "" {
				return nil, pipeline.Errorf(field, "%s: an image_url part needs image_url.url", field)
			}
			switch p.url.Detail {
			case "", "low", "high", "auto":
			default:
				return nil, pipeline.Errorf(field, "%s: image_url.detail %q is not one of low, high, auto", field, p.url.Detail)
			}
			im, fe := pipeline.ImageFromURL(p.url.URL, field)
			if fe != nil {
				return nil, pipeline.Errorf(field, "%s", fe.Error())
			}
			out = append(out, im)
		}
	}
	return out, nil
}
