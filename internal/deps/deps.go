package deps
import (
 _ "gonum.org/v1/gonum/blas/blas32"
 _ "github.com/dlclark/regexp2"
 _ "golang.org/x/text/unicode/norm"
 _ "golang.org/x/sys/unix"
 _ "github.com/vmihailenco/msgpack/v5"
 _ "github.com/rs/zerolog"
)
