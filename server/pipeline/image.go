package pipeline

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// ImageMarker stands for an image in a message's Content (llama.cpp mtmd's
// default marker): a dialect writes it where the image goes, the server
// splits the rendered prompt on it and splices the image's tokens and
// embedding rows in. A request has as many markers as Images.
const ImageMarker = "<__media__>"

// MaxImageBytes bounds one image file, checked before base64 decoding or
// while fetching.
const MaxImageBytes = 20 << 20

// Image is one image of a request, in the order of the markers: its file
// (Data), or a remote URL the server fetches where allowed. Field names
// the part it came from in the dialect's words ("messages[1].content[2]",
// "images[0]"), for errors.
type Image struct {
	Data  []byte
	URL   string // http(s); Data is nil
	Field string
}

// ImageFromURL is the Image an image_url part's url gives: a data: URL
// (base64, an image/* type) decoded, an http(s) URL kept for the server
// to fetch. Other schemes and malformed data URLs are a FieldError naming
// field.
func ImageFromURL(url, field string) (Image, *FieldError) {
	switch {
	case strings.HasPrefix(url, "data:"):
		meta, payload, ok := strings.Cut(url[len("data:"):], ",")
		if !ok || !strings.HasSuffix(meta, ";base64") {
			return Image{}, &FieldError{Field: field, Msg: "a data URL must be data:image/...;base64,..."}
		}
		if mt := strings.TrimSuffix(meta, ";base64"); !strings.HasPrefix(mt, "image/") {
			return Image{}, &FieldError{Field: field, Msg: fmt.Sprintf("a data URL of type %q is not an image", mt)}
		}
		data, fe := DecodeImageBase64(payload, field)
		return Image{Data: data, Field: field}, fe
	case strings.HasPrefix(url, "http://"), strings.HasPrefix(url, "https://"):
		return Image{URL: url, Field: field}, nil
	}
	return Image{}, &FieldError{Field: field, Msg: "an image URL must be a data: URL (base64) or an http(s) URL"}
}

// DecodeImageBase64 decodes a base64 image file (standard alphabet, with
// or without padding), refusing one whose decoded size would pass
// MaxImageBytes before decoding it.
func DecodeImageBase64(s, field string) ([]byte, *FieldError) {
	s = strings.TrimSpace(s)
	if n := base64.StdEncoding.DecodedLen(len(s)); n > MaxImageBytes {
		return nil, &FieldError{Field: field, Msg: fmt.Sprintf("the image is over %d bytes", MaxImageBytes)}
	}
	enc := base64.StdEncoding
	if !strings.HasSuffix(s, "=") && len(s)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	data, err := enc.DecodeString(s)
	if err != nil {
		return nil, &FieldError{Field: field, Msg: fmt.Sprintf("the image is not base64: %v", err)}
	}
	if len(data) == 0 {
		return nil, &FieldError{Field: field, Msg: "the image is empty"}
	}
	return data, nil
}
