package anthropic

import (
	"strings"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// imageSource is an image block's source: base64 data of a media type,
// or a URL (fetched by the server where --allowed-media-domains allows).
type imageSource struct {
	Type      string `json:"type"` // base64 or url
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

// imageBlock is a user message's image block as a pipeline image, named
// by field.
func imageBlock(b block, field string) (pipeline.Image, *pipeline.Error) {
	src := b.Source
	if src == nil {
		return pipeline.Image{}, pipeline.Errorf(field+".source", "%s.source: an image block needs a source", field)
	}
	switch src.Type {
	case "base64":
		if !strings.HasPrefix(src.MediaType, "image/") {
			return pipeline.Image{}, pipeline.Errorf(field+".source.media_type", "%s.source.media_type %q: not an image type", field, src.MediaType)
		}
		data, fe := pipeline.DecodeImageBase64(src.Data, field)
		if fe != nil {
			return pipeline.Image{}, pipeline.Errorf(field, "%s", fe.Error())
		}
		return pipeline.Image{Data: data, Field: field}, nil
	case "url":
		im, fe := pipeline.ImageFromURL(src.URL, field)
		if fe != nil {
			return pipeline.Image{}, pipeline.Errorf(field, "%s", fe.Error())
		}
		return im, nil
	}
	return pipeline.Image{}, pipeline.Errorf(field+".source.type", "%s.source.type %q: want base64 or url", field, src.Type)
}
